"""The README stays a two-minute read (issue 71) and the table of contents names only pages that exist.

The README is at most 8,000 bytes, holds no dated measurement and no measured duration (those belong to the
"Build times and decisions" page's generated build-times table), names the two commands, and every relative link
in it resolves. Every entry of ``_toc.yml`` is a hand-written page ``book/<name>.md`` or an executed chapter whose
notebook source ``notebooks/<name>.py`` exists (chapters are generated into ``book/chapters/`` by the build).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from lib.book import build

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_BYTES = 8_000
DATE = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}")
DURATION = re.compile(r"\b\d+(\.\d+)?\s*(min|minutes|s|seconds|h|hours)\b", re.IGNORECASE)
#: ``[text](target)`` or ``[text](target "title")``; images (``![alt](target)``) match too.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
CHAPTERS = "book/chapters/"


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code, where brackets are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def relative_links(text: str) -> list[str]:
    """The link targets of ``text`` that point into the repository (no URL scheme, no bare fragment)."""
    targets = [match.group(1) for match in LINK.finditer(_prose(text))]
    return [target for target in targets if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:|^#|^//", target)]


def test_the_readme_is_a_two_minute_read() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, (
        f"README.md has {size} bytes, more than {MAX_README_BYTES}: move detail to the book's pages "
        "(book/reproducing.md, book/paper_path.md, book/data.md)"
    )


def test_the_readme_holds_no_dated_measurement() -> None:
    found = [f"line {number}: {line.strip()}" for number, line in _numbered(_readme()) if DATE.search(line)]
    assert not found, "README.md holds dates (measurements belong to the build-times page):\n" + "\n".join(found)


def test_the_readme_holds_no_measured_duration() -> None:
    found = [
        f"line {number}: {match.group(0)!r}"
        for number, line in _numbered(_readme())
        for match in DURATION.finditer(line)
    ]
    assert not found, (
        "README.md states measured times; say them in words ('hours', 'minutes') and point to the generated "
        "build-times table (book/build_times_and_decisions.md):\n" + "\n".join(found)
    )


@pytest.mark.parametrize("command", ["make book", "make test"])
def test_the_readme_names_the_two_commands(command: str) -> None:
    assert command in _readme(), f"README.md must name `{command}`"


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = relative_links(_readme())
    assert links, "README.md links no page of the book"
    broken = [link for link in links if not (ROOT / link.split("#", 1)[0]).exists()]
    assert not broken, f"README.md links files that do not exist (relative to the repository root): {broken}"


def test_relative_links_skip_urls_fragments_and_code() -> None:
    text = (
        '[a](book/a.md) [b](https://x.org/y.md) [c](#top) [d](book/d.md#part) ![e](img/e.png "E")\n'
        "`[f](not/a/link.md)`\n```\n[g](inside/a/fence.md)\n```\n[h](mailto:someone@example.org)\n"
    )
    assert relative_links(text) == ["book/a.md", "book/d.md#part", "img/e.png"]


def test_the_duration_pattern_catches_measured_times_only() -> None:
    for measured in ("took 177 min", "46 minutes", "599 s measured", "3 h", "1.5 hours", "20 seconds"):
        assert DURATION.search(measured), measured
    for words in ("takes hours", "a few minutes", "2 CPU cores", "first 8 queries per set", "chapters 2 and 8"):
        assert not DURATION.search(words), words


def _numbered(text: str) -> Iterator[tuple[int, str]]:
    return enumerate(text.splitlines(), start=1)


def _toc() -> list[str]:
    return build.toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))


def _exists(entry: str) -> bool:
    name = entry.removesuffix(".md").removesuffix(".ipynb")
    if (ROOT / f"{name}.md").is_file():
        return True
    if name.startswith(CHAPTERS):
        return (ROOT / "notebooks" / f"{name.removeprefix(CHAPTERS)}.py").is_file()
    return False


def test_every_toc_entry_is_a_page_or_a_chapter_with_a_source() -> None:
    entries = _toc()
    assert "book/paper_path" in entries, "_toc.yml must list book/paper_path"
    missing = [entry for entry in entries if not _exists(entry)]
    assert not missing, (
        f"_toc.yml lists pages that do not exist as book/<name>.md, nor as chapters with a notebooks/ source: {missing}"
    )


def test_every_hand_written_page_is_in_the_toc() -> None:
    listed = set(_toc())
    pages = sorted(path.relative_to(ROOT).with_suffix("").as_posix() for path in (ROOT / "book").glob("*.md"))
    unlisted = [page for page in pages if page not in listed]
    assert not unlisted, f"book pages missing from _toc.yml (only_build_toc_files drops them silently): {unlisted}"
