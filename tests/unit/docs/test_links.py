"""The documentation's links, checked offline: README.md and every page under docs/.

- Every relative link (inline, image or reference-style) leads to a file or folder of the
  repository, and a ``#anchor`` into a markdown page names one of its headings, slugged as GitHub
  slugs them. Links to ``http(s)://`` and ``mailto:`` are not followed, and nothing inside a
  fenced code block or a code span is a link.
- Every page under docs/ is linked from README.md, so none is lost from the front page; the
  folders ``docs/example*/`` hold the guide's example plugins, not pages.
- README.md stays a front page: at most :data:`README_MAX_LINES` lines.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
# A code span: a run of backticks, then anything but that run (no blank line), then the run.
CODE_SPAN = re.compile(r"(`+)(?:(?!\1)(?!\n[ \t]*\n)[\s\S])+?\1")
# [text](target) and ![alt](target), the target optionally in <...> and followed by a title.
INLINE_LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\(\s*(?P<target><[^>\n]*>|[^\s)]+)(?:\s+[^)]*)?\)")
# [label]: target "title", a reference-style link's definition.
REFERENCE = re.compile(r"^ {0,3}\[(?P<label>[^\]]+)\]:[ \t]*(?P<target><[^>]*>|\S+)", re.MULTILINE)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


@dataclass(frozen=True)
class Link:
    """One link of a page: where it is, and what it says."""

    page: Path
    line: int
    text: str
    target: str

    def __str__(self) -> str:
        text = " ".join(self.text.split())
        return f"{self.page.relative_to(ROOT)}:{self.line}: [{text}]({self.target})"


def prose(text: str) -> str:
    """The page with every line of a fenced code block blanked, so that line numbers stay."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        marker = FENCE.match(line)
        if fence is None:
            if marker:
                fence = marker.group(1)
                line = ""
        else:
            closes = (
                marker is not None
                and marker.group(1)[0] == fence[0]
                and len(marker.group(1)) >= len(fence)
                and not line.strip().strip(fence[0])
            )
            if closes:
                fence = None
            line = ""
        lines.append(line)
    return "\n".join(lines)


def without_code(text: str) -> str:
    """The prose of a page with its code spans blanked (their newlines kept)."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose(text))


def links_of(page: Path) -> list[Link]:
    """Every link of a page outside code, with the line it starts on."""
    text = without_code(page.read_text(encoding="utf-8"))
    found: list[tuple[int, Link]] = []
    for pattern, label in ((INLINE_LINK, "text"), (REFERENCE, "label")):
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            target = match.group("target").strip("<>")
            found.append((match.start(), Link(page, line, match.group(label), target)))
    return [link for _, link in sorted(found, key=lambda pair: pair[0])]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as rendered (links as their text, no markup),
    lowercased, punctuation other than hyphens and spaces removed, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in ("L", "M", "N"))
    return kept.replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    """The anchors GitHub makes for a page's headings (a repeated one gets -1, -2, ...), and
    those of its HTML anchors."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for line in prose(page.read_text(encoding="utf-8")).splitlines():
        heading = ATX_HEADING.match(line)
        text: str | None = None
        if heading:
            text = heading.group(1) or ""
        elif SETEXT_UNDERLINE.match(line) and previous.strip() and not line.startswith(" " * 4):
            text = previous.strip()
        if text is not None:
            base = slug(text)
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
        anchors.update(a for a in HTML_ANCHOR.findall(line))
        previous = line
    return anchors


def problem_of(link: Link) -> str | None:
    """What is wrong with a link: None when it leads somewhere in the repository."""
    if EXTERNAL.match(link.target):
        return None  # http(s), mailto and other schemes: not followed
    path_part, _, anchor = link.target.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if path_part:
        base = ROOT if path_part.startswith("/") else link.page.parent
        target = (base / path_part.lstrip("/")).resolve()
        if not target.is_relative_to(ROOT):
            return f"leads outside the repository, to {target}"
        if not target.exists():
            return f"no file or folder {target.relative_to(ROOT)}"
    else:
        target = link.page
    markdown = target.is_file() and target.suffix == ".md"
    if anchor and markdown and unquote(anchor).lower() not in anchors_of(target):
        return f"no heading of {target.relative_to(ROOT)} has the anchor #{anchor}"
    return None


def pages() -> list[Path]:
    """README.md and every markdown page under docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def is_example(page: Path) -> bool:
    return page.relative_to(DOCS).parts[0].startswith("example")


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    problems = [f"{link}: {problem}" for link in links_of(page) if (problem := problem_of(link))]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked: set[Path] = set()
    for link in links_of(README):
        path_part = unquote(link.target.partition("#")[0])
        if path_part and not EXTERNAL.match(link.target):
            linked.add((README.parent / path_part).resolve())
    missing = [
        str(page.relative_to(ROOT))
        for page in sorted(DOCS.rglob("*.md"))
        if not is_example(page) and page.resolve() not in linked
    ]
    assert not missing, "README.md: no link to these pages of docs/: " + ", ".join(missing)


def test_the_readme_is_a_front_page() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md: {lines} lines, more than {README_MAX_LINES}: move the detail to docs/"
    )


# -- the checker itself ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Where the SDK differs from Kafka Connect's", "where-the-sdk-differs-from-kafka-connects"),
        ("Files and the operator's folders", "files-and-the-operators-folders"),
        ("Runtime dependencies, and why", "runtime-dependencies-and-why"),
        ("`headrace` and `make`", "headrace-and-make"),
        ("Exactly-once sources", "exactly-once-sources"),
        ("The [gRPC](grpc.md) door", "the-grpc-door"),
        ("snake_case keys", "snake_case-keys"),
    ],
)
def test_headings_slug_as_github_slugs_them(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_links_in_code_are_not_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[real](a.md#x) and `[code](b.md)`\n\n"
        "```\n[fenced](c.md)\n# not a heading\n```\n\n"
        "~~~~\n[tilde](d.md)\n~~~~\n\n"
        "[ref]: e.md\n\nA [link over\ntwo lines](f.md).\n",
        encoding="utf-8",
    )
    found = [(link.line, link.target) for link in links_of(page)]
    assert found == [(3, "a.md#x"), (14, "e.md"), (16, "f.md")]
    assert anchors_of(page) == {"title"}


def test_repeated_headings_get_numbered_anchors(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Notes\n\n## Notes\n\nSetext\n======\n", encoding="utf-8")
    assert anchors_of(page) == {"notes", "notes-1", "setext"}
