"""Java's formats, on Python: what Connect's transforms read from their keys in Java's syntax.

| module | what |
| --- | --- |
| ``regex`` | ``java.util.regex`` patterns, matched as Java matches them |
| ``datepattern`` | ``SimpleDateFormat`` patterns, for TimestampConverter |
| ``text`` | values as Java's ``toString`` writes them, and numbers as Java parses them |
| ``temporal`` | Connect's dates and times as milliseconds since the epoch, and back |
"""
