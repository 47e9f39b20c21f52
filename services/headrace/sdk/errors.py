"""Every exception a plugin or the runtime raises on purpose, in one place (as Connect's
``org.apache.kafka.connect.errors``).

The plugin host turns them into text on the wire: ``ConfigException`` becomes INVALID_ARGUMENT,
anything else a traceback in a FAILED status. They never cross a process boundary as pickles.
"""

from __future__ import annotations


class ConnectError(Exception):
    """Base of the errors headrace and its plugins raise deliberately."""


class ConfigException(ConnectError):
    """A configuration is invalid; the message names the key and what is wrong with it."""


class DataError(ConnectError):
    """A value does not fit its schema, or bytes cannot be converted (malformed input)."""


class RetriableError(ConnectError):
    """A transient failure: the operation may succeed if tried again."""
