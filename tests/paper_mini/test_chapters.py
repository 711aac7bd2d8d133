"""The ``paper-mini`` book (``make paper-mini``): every chapter executed and rendered, none skipping a part silently.

A part is a code cell that shows something in the ``smoke`` book (a table, a figure, a printed line, a reading):
under ``paper-mini`` the same cell must show something too — its result, or the chapter's note that says what is
skipped on the paper's data and why (:func:`lib.chapters.prologue.skipped`). Each chapter also says that it runs
on the miniature and names the profile's substitutions (:func:`lib.chapters.prologue.start_chapter`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lib.book import build
from lib.core import paths
from lib.core.profiles import get_profile
from tests.paper_mini.conftest import require

CHAPTERS = build.chapters_in_toc("paper-mini")
HTML = paths.REPO_ROOT / "_build" / "paper-mini" / "_build" / "html"


def _shown(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """What a code cell shows on its page: its outputs less stderr (``_config.yml``: ``nb_output_stderr: remove``)."""
    return [output for output in cell.get("outputs", []) if output.get("name") != "stderr"]


def _code_cells(path: Path) -> list[dict[str, Any]]:
    return [cell for cell in json.loads(path.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "code"]


def _text(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        data = output.get("data", {})
        parts.append("".join(output.get("text") or data.get("text/markdown") or data.get("text/plain") or ""))
    return "\n".join(parts)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda chapter: chapter.name)
def test_every_chapter_runs_on_the_miniature_says_so_and_is_rendered(chapter: build.Chapter) -> None:
    require(chapter.output.is_file(), f"the paper-mini chapter {chapter.output}")
    first = next(
        _text(_shown(cell)) for cell in _code_cells(chapter.output) if "start_chapter(" in "".join(cell["source"])
    )
    assert "profile paper-mini" in first and "data: the paper-shaped miniature in " in first
    assert all(f"substitution: {line}" in first for line in get_profile("paper-mini").substitutions)
    require((HTML / "book" / "chapters" / f"{chapter.name}.html").is_file(), f"the rendered page of {chapter.name}")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda chapter: chapter.name)
def test_no_part_shown_in_the_smoke_book_is_skipped_silently(chapter: build.Chapter) -> None:
    require(chapter.output.is_file(), f"the paper-mini chapter {chapter.output}")
    smoke = build.chapters_in_toc("smoke")[CHAPTERS.index(chapter)].output
    require(smoke.is_file(), f"the smoke chapter {smoke} (`make smoke`)")
    paper, book = _code_cells(chapter.output), _code_cells(smoke)
    assert len(paper) == len(book), "the same source executed under both profiles"
    silent = [
        "".join(mine["source"]).strip().splitlines()[0]
        for mine, theirs in zip(paper, book, strict=True)
        if _shown(theirs) and not _shown(mine)
    ]
    assert not silent, f"{chapter.name}: cells that show nothing under paper-mini, and say nothing of why: {silent}"
