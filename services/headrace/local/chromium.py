"""Debian's Chromium, as the console's browser tests and its benchmark drive it (headless,
through Playwright): where it is (``HEADRACE_CHROMIUM``, else Debian's path), and the flags it
needs on a machine with no network, run as root."""

from __future__ import annotations

import os

PACKAGES = "chromium chromium-driver"
# Root needs --no-sandbox; with no network, nothing may be fetched in the background (each
# refused connection slows the page, many at a time).
ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def executable() -> str:
    return os.environ.get("HEADRACE_CHROMIUM", "/usr/bin/chromium")
