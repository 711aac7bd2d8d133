"""The hand-written pages of the book stay short and are listed once (issue: "The Reproducing page reorganised").

"Reproducing the book" (``book/reproducing.md``) is a hub: profiles, commands, environment, and one short page per
topic listed as its ``sections`` in ``_toc.yml`` (build times and decisions, benchmarks, re-runs and resumption,
the paper path, the deviations from the papers). The hub and each topic page are at most 20,000 bytes and none is
a log: no dated entry (a measured time lives in the build-times table the build generates). Every hand-written
page ``book/<name>.md`` is listed in ``_toc.yml`` exactly once, the generated build-times and decisions tables are
included by a listed page, and every ``{doc}`` link of a page or a chapter source names a page that exists.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from lib.book import build

ROOT = Path(__file__).resolve().parents[2]
HUB = "book/reproducing"
#: The topic pages the hub must list as its sections (more may be added).
TOPICS = ("book/build_times_and_decisions", "book/resuming", "book/paper_path", "book/deviations")
MAX_PAGE_BYTES = 20_000
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
#: ``{doc}`target``` or ``{doc}`text <target>```.
DOC_LINK = re.compile(r"\{doc\}`(?:[^`<]*<([^`>]+)>|([^`<]+))`")
CHAPTERS = "book/chapters"


def _toc() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def toc_entries(entries: Any) -> Iterator[dict[str, Any]]:
    """Every entry with a ``file`` in a ``_toc.yml`` tree (parts, chapters, sections), in order."""
    if isinstance(entries, dict):
        if "file" in entries:
            yield entries
        for value in entries.values():
            if isinstance(value, dict | list):
                yield from toc_entries(value)
    elif isinstance(entries, list):
        for entry in entries:
            yield from toc_entries(entry)


def toc_files(toc: dict[str, Any]) -> list[str]:
    """Every file ``_toc.yml`` lists, the root first, without suffix (:func:`lib.book.build.toc_files`)."""
    return [file.removesuffix(".md").removesuffix(".ipynb") for file in build.toc_files(toc)]


def hub_sections(toc: dict[str, Any]) -> list[str]:
    """The files listed as ``sections`` of the hub page."""
    for entry in toc_entries(toc.get("parts", [])):
        if str(entry["file"]).removesuffix(".md") == HUB:
            return [str(section["file"]).removesuffix(".md") for section in entry.get("sections", [])]
    return []


def page_problems(name: str, text: str) -> list[str]:
    """What makes ``text`` (page ``name``) too long or a log: its size over the limit, its dated lines."""
    problems = []
    size = len(text.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        problems.append(f"{name}: {size} bytes, more than {MAX_PAGE_BYTES}: split it into topic pages")
    problems += [
        f"{name}:{number}: a dated entry (a log; measured times belong to the generated build-times table): "
        f"{line.strip()[:100]}"
        for number, line in enumerate(text.splitlines(), start=1)
        if DATE.search(line)
    ]
    return problems


def _page_text(page: str) -> str:
    return (ROOT / f"{page}.md").read_text(encoding="utf-8")


def hand_written_pages() -> list[str]:
    return sorted(path.relative_to(ROOT).with_suffix("").as_posix() for path in (ROOT / "book").glob("*.md"))


def test_every_hand_written_page_is_listed_exactly_once() -> None:
    counts = Counter(toc_files(_toc()))
    wrong = {page: counts[page] for page in hand_written_pages() if counts[page] != 1}
    assert not wrong, f"book pages listed in _toc.yml other than exactly once (page: times listed): {wrong}"
    repeated = {file: count for file, count in counts.items() if count > 1}
    assert not repeated, f"_toc.yml lists these more than once: {repeated}"


def test_the_hub_lists_its_topic_pages_as_sections() -> None:
    sections = hub_sections(_toc())
    missing = [topic for topic in TOPICS if topic not in sections]
    assert not missing, f"_toc.yml: {HUB} must list these topic pages under its `sections`: {missing}"
    hub = _page_text(HUB)
    assert hub.startswith("# Reproducing the book\n")
    unlinked = [page for page in sections if f"{{doc}}`{PurePosixPath(page).name}`" not in hub]
    assert not unlinked, f"{HUB}.md does not link these topic pages: {unlinked}"


def test_the_hub_and_its_topic_pages_are_short_and_no_log() -> None:
    pages = [HUB, *hub_sections(_toc())]
    problems = [problem for page in pages for problem in page_problems(page, _page_text(page))]
    assert not problems, "\n".join(problems)


def test_no_hand_written_page_is_a_log() -> None:
    dated = [
        f"{page}.md:{number}: {line.strip()[:80]}"
        for page in hand_written_pages()
        for number, line in enumerate(_page_text(page).splitlines(), start=1)
        if DATE.search(line)
    ]
    assert not dated, "dated measurements belong in the generated build-times table:\n" + "\n".join(dated)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("short and undated\n", 0),
        ("trained twice on 2026-11-27 with the same seed\n", 1),
        ("x" * (MAX_PAGE_BYTES + 1), 1),
        ("a table row | 2026-11-28 |\n" + "y" * MAX_PAGE_BYTES, 2),
        ("λ = 0.5, 8.509 and 8.569; DL 2019 and 2020; 10⁻³\n", 0),
    ],
)
def test_page_problems_catches_long_pages_and_dated_lines(text: str, found: int) -> None:
    assert len(page_problems("page", text)) == found


def test_the_generated_tables_are_included_by_a_listed_page() -> None:
    listed = set(toc_files(_toc()))
    for generated in (build.TIMES_PAGE, build.DECISIONS_PAGE):
        include = f"```{{include}} chapters/{generated}\n```"
        including = [page for page in hand_written_pages() if include in _page_text(page)]
        assert len(including) == 1, f"{generated} must be included by exactly one page of book/, not {including}"
        assert including[0] in listed, f"{including[0]} includes {generated} but is not in _toc.yml"


def _sources() -> Iterator[tuple[Path, PurePosixPath]]:
    """Every hand-written page and chapter source, with the folder its ``{doc}`` links are relative to."""
    for path in sorted((ROOT / "book").glob("*.md")):
        yield path, PurePosixPath("book")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        yield path, PurePosixPath(CHAPTERS)  # executed into book/chapters/


def _resolve(folder: PurePosixPath, target: str) -> str:
    """``target`` of a ``{doc}`` link written in ``folder``, as a path from the repository root (a leading ``/``:
    from the root)."""
    path = target.split("#", 1)[0].removesuffix(".md")
    parts: list[str] = []
    for part in (PurePosixPath(path.lstrip("/")) if path.startswith("/") else folder / path).parts:
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def test_every_doc_link_names_a_page_of_the_book() -> None:
    listed = set(toc_files(_toc()))
    broken = []
    for path, folder in _sources():
        text = path.read_text(encoding="utf-8")
        for match in DOC_LINK.finditer(text):
            target = (match.group(1) or match.group(2)).strip()
            if _resolve(folder, target) not in listed:
                broken.append(f"{path.relative_to(ROOT)}: {{doc}}`{target}`")
    assert not broken, "{doc} links to pages _toc.yml does not list:\n" + "\n".join(broken)
