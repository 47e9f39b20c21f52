"""The command blocks of the documentation: each fenced block of README.md and docs/ that a user
is told to type, found as the pages have them, so that a test runs a block as it is written and
a block no test runs is noticed (``tests/unit/docs/test_commands.py``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
SHELLS = ("", "sh", "shell", "bash", "console")
COMMANDS = re.compile(
    r"^(?:\$ )?(?:headrace|make|curl|docker|kubectl|grpcurl|mvn|pip|python3?|export|cd|for|"
    r"\.venv/bin/\S+|[A-Z_]+=\S* )\b"
)
"""The first word of a line a user types: one of the tools the pages tell them to run."""
DRAWING = re.compile("[\u2500-\u257f]")
"""Box-drawing characters: a diagram, not commands."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts, and its lines."""

    page: str  # relative to the checkout
    line: int
    info: str
    lines: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.lines[0] if self.lines else ""

    @property
    def commands(self) -> list[str]:
        """Its lines a shell runs, comments and continuations folded in, as a user types them."""
        found: list[str] = []
        pending = ""
        for raw in self.lines:
            line = raw.rstrip()
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            found.append(_without_comment(pending + line.strip()).strip())
            pending = ""
        return found

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.first}"


def _without_comment(line: str) -> str:
    """The line without a trailing ``  # comment`` (not one inside quotes)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and i > 0 and line[i - 1] == " ":
            return line[:i]
    return line


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    fence: str | None = None
    info, start = "", 0
    lines: list[str] = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        marker = FENCE.match(line)
        if fence is None:
            if marker:
                fence, info, start, lines = marker.group(1), marker.group(2).strip(), number, []
            continue
        if marker and marker.group(1).startswith(fence[0]) and len(marker.group(1)) >= len(fence):
            name = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
            found.append(Block(name, start, info, tuple(lines)))
            fence = None
            continue
        lines.append(line)
    return found


def command_blocks() -> list[Block]:
    """Every block a user is told to type: a shell block whose first line runs a tool."""
    return [
        b
        for page in pages()
        for b in blocks(page)
        if b.info.lower() in SHELLS
        and b.commands
        and COMMANDS.match(b.commands[0])
        and not any(DRAWING.search(line) for line in b.lines)
    ]


def block(page: str, first: str) -> Block:
    """The command block of ``page`` (relative to the checkout) whose first line is ``first``:
    what a test runs, so that the test runs what the page says."""
    found = [b for b in command_blocks() if b.page == page and b.first.strip() == first]
    assert len(found) == 1, (
        f"{page} has {len(found)} command blocks starting {first!r}; "
        f"it has: {[b.first for b in command_blocks() if b.page == page]}"
    )
    return found[0]
