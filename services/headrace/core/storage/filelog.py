"""A log kept in a file: where a single process keeps what outlives it without a topic of
Kafka's, such as standalone mode's source offsets (Connect's ``offset.storage.file.filename``).

The file holds the log compacted, as Kafka compacts a topic: the latest record of each key, in
the order of their offsets, and no key whose latest record is a tombstone. Every append writes
the whole file anew beside it, flushed to disk, and renames it into place, so that a crash leaves
the file before the append or the file after it, never a torn one. A file that is not one whole
log of headrace's (torn by something else, truncated, or another program's) is refused naming it
and what is wrong with it: nothing is ever reset silently.

Its logs are ``MemoryLog``\\ s (``headrace.core.storage.topiclog``) over the file's records,
with the same promises: each write is read back before it returns, and a process that starts
again replays what the file holds.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from headrace.core.model.errors import HeadraceError
from headrace.core.observability import log
from headrace.core.storage.topiclog import LogFactory, LogRecord, MemoryLog, MemoryTopic, Record

FORMAT = "headrace-log"
VERSION = 1


class LogFileError(HeadraceError):
    """A log file that cannot be read as one: the message names it and says what is wrong."""


class FileTopic(MemoryTopic):
    """A :class:`MemoryTopic` whose records live in ``path``: loaded once, compacted, and
    written whole, atomically, at every append; or, with ``flush_every_s``, at most that often
    (Connect's ``offset.flush.interval.ms``), the latest records written whenever the last write
    is that old, and by :meth:`flush`. A crash then loses what was appended since the last write,
    as a Connect worker loses the offsets it had not flushed."""

    def __init__(self, name: str, path: Path, flush_every_s: float = 0.0) -> None:
        super().__init__(name)
        self.path = path
        self._next = 0  # the offset the next record takes
        self._writing = asyncio.Lock()
        self._flush_every_s = flush_every_s
        self._written_at = -math.inf  # when the file was last written (monotonic)
        self._unwritten = False  # records appended since
        self._flushing: asyncio.Task[None] | None = None
        self._load()

    async def append_many(self, records: list[Record]) -> list[LogRecord]:
        async with self._writing:
            landed = [
                LogRecord(0, self._next + i, key, value) for i, (key, value) in enumerate(records)
            ]
            kept = _compacted([*self.records, *landed])
            next_offset = self._next + len(records)
            if time.monotonic() - self._written_at >= self._flush_every_s:
                try:
                    await self._write(kept, next_offset)  # its error, and nothing changed
                except asyncio.CancelledError:  # the caller gave up, once the file was written
                    self._took(kept, next_offset, landed)
                    raise
            else:
                self._unwritten = True
                self._flush_later()
            self._took(kept, next_offset, landed)
            return landed

    def _took(self, kept: list[LogRecord], next_offset: int, landed: list[LogRecord]) -> None:
        """The log holds ``kept`` now, and every reader reads ``landed``."""
        self._next, self.records = next_offset, kept
        for record in landed:
            self._deliver(record)

    async def flush(self) -> None:
        """Writes what was appended since the file was last written, if anything was; raises
        CancelledError only once the file is written."""
        async with self._writing:
            if self._unwritten:
                await self._write(self.records, self._next)

    async def _write(self, kept: list[LogRecord], next_offset: int) -> None:
        writing = asyncio.ensure_future(
            asyncio.to_thread(_write, self.path, self.name, kept, next_offset)
        )
        try:
            # A caller that gives up does not stop the write: what it wrote is the log's.
            await asyncio.shield(writing)
        except asyncio.CancelledError:
            while not writing.done():  # however often it is cancelled meanwhile
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({writing})
            writing.result()
            self._wrote()
            raise
        self._wrote()

    def _wrote(self) -> None:
        # Written under the lock, ``kept`` is every record the log holds: nothing is unwritten.
        self._written_at, self._unwritten = time.monotonic(), False

    def _flush_later(self) -> None:
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._flush_when_due(), name=f"flush-{self.name}")

    async def _flush_when_due(self) -> None:
        delay = self._written_at + self._flush_every_s - time.monotonic()
        while True:
            await asyncio.sleep(max(0.0, delay))
            try:
                await self.flush()
                return
            except (OSError, LogFileError) as exc:
                # Kept, and tried again at the next interval, as Connect tries a failed flush.
                log.get().error("log_file_flush_failed", file=str(self.path), error=str(exc))
                delay = self._flush_every_s

    async def close(self) -> None:
        """Writes what is unwritten, and stops writing later: an append after this is written
        before it returns."""
        self._flush_every_s = 0.0
        if self._flushing is not None:
            self._flushing.cancel()
            await asyncio.wait({self._flushing})
        await self.flush()

    def append(self, key: str, value: bytes | None) -> LogRecord:
        raise TypeError("a FileTopic appends with append_many, which writes the file first")

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return  # no file yet: an empty log, as Connect's offsets start
        except (OSError, UnicodeDecodeError) as exc:
            raise LogFileError(f"{self.path}: cannot be read: {exc}") from None
        self.records, self._next = _parsed(self.path, text)


def _compacted(records: list[LogRecord]) -> list[LogRecord]:
    """The latest record of each key, by offset, without keys last tombstoned."""
    latest = {record.key: record for record in records}
    return sorted((r for r in latest.values() if r.value is not None), key=lambda r: r.offset)


def _value_to_json(value: bytes) -> dict[str, str]:
    try:
        return {"text": value.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _value_from_json(value: Any) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("text"), str) and len(value) == 1:
        return bytes(value["text"].encode("utf-8"))
    if isinstance(value, dict) and isinstance(value.get("base64"), str) and len(value) == 1:
        return base64.b64decode(value["base64"], validate=True)
    raise ValueError("a value is {'text': ...} or {'base64': ...}")


def _write(path: Path, name: str, records: list[LogRecord], next_offset: int) -> None:
    """Writes the file beside, flushed, then renames it into place (and flushes its folder)."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "log": name,
        "next_offset": next_offset,
        "records": [
            {"offset": r.offset, "key": r.key, "value": _value_to_json(r.value or b"")}
            for r in records
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, beside = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, ensure_ascii=False, indent=1)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(beside, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(beside)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _parsed(path: Path, text: str) -> tuple[list[LogRecord], int]:
    """The records a log file holds and the offset the next takes; LogFileError naming the
    file and what is wrong with it."""
    if not text.strip():
        raise LogFileError(
            f"{path}: is empty, so not a whole log of headrace's (remove it to start afresh)"
        )
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogFileError(f"{path}: is not a whole log of headrace's: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise LogFileError(f'{path}: is not a log of headrace\'s (no "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise LogFileError(
            f"{path}: is version {document.get('version')!r} of headrace's log files; this "
            f"release reads version {VERSION}"
        )
    try:
        next_offset = int(document["next_offset"])
        records = [
            LogRecord(0, int(entry["offset"]), str(entry["key"]), _value_from_json(entry["value"]))
            for entry in document["records"]
        ]
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise LogFileError(f"{path}: a record cannot be read: {exc!r}") from None
    offsets = [r.offset for r in records]
    if offsets != sorted(set(offsets)) or any(not 0 <= o < next_offset for o in offsets):
        raise LogFileError(f"{path}: its records' offsets are out of order or out of range")
    return records, next_offset


def file_logs(topic: FileTopic) -> LogFactory:
    """Logs on a file's records."""
    return lambda handler: MemoryLog(topic, handler)
