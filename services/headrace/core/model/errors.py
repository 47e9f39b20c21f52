"""The errors the services share. Each says what is wrong in words a user can act on.

Errors of one service alone stay with it (the config service's ``ConfigRejected``, the executor's
``Busy``); errors plugin authors see are in ``headrace.sdk.errors``.
"""

from __future__ import annotations


class HeadraceError(Exception):
    """Base of headrace's own errors."""


class PluginError(HeadraceError, ValueError):
    """A connector class or version that cannot be resolved, or a plugin folder that cannot be
    read; the message says what exists."""


class TopicLayoutError(HeadraceError, RuntimeError):
    """A topic is missing, or exists with a layout headrace cannot run on."""


class LogReaderStopped(HeadraceError, RuntimeError):
    """The task reading a topic has ended, so a wait for its progress can never finish."""


class WriterFenced(HeadraceError, RuntimeError):
    """Another writer of a topic wrote since this one last did; what this one appended was
    discarded, and it must read again before it decides what to write."""


class CommitUnknown(HeadraceError, RuntimeError):
    """A transaction's commit went unanswered: its records (``landed``: where each was written,
    if it was) may or may not be visible, until a read to the end says which."""

    def __init__(self, landed: list[tuple[int, int]]) -> None:
        super().__init__(f"the commit of {len(landed)} records went unanswered")
        self.landed = landed
