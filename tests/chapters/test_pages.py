"""The executed smoke chapters (run by ``make test`` after the smoke build): no page shows the building machine.

``make test`` runs this module after executing the smoke chapters (Makefile, target ``nbval``);
``TKBOOK_REQUIRE_PAGES=1`` makes missing chapters a failure there. In the unit-test pass, before any
chapter is executed, it is skipped.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from lib.book import build
from lib.core import paths

CHAPTERS = build.chapters_in_toc("smoke")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda chapter: chapter.name)
def test_no_executed_page_shows_an_absolute_path_of_this_machine(chapter: build.Chapter) -> None:
    if not chapter.output.is_file():
        if os.environ.get("TKBOOK_REQUIRE_PAGES") == "1":
            pytest.fail(f"{chapter.output}: the smoke chapter was not executed")
        pytest.skip("the smoke chapters are executed later in `make test`")
    cells = json.loads(chapter.output.read_text(encoding="utf-8"))["cells"]
    shown = [  # what a page shows: sources and outputs, without stderr (_config.yml: nb_output_stderr remove)
        (cell.get("source"), [out for out in cell.get("outputs", []) if out.get("name") != "stderr"]) for cell in cells
    ]
    text = json.dumps(shown)
    for folder in {paths.REPO_ROOT, paths.artifacts_root(), paths.data_dir()}:
        assert str(folder) not in text, f"{chapter.output} shows {folder}"


def numbers_rows(html: str) -> bool:
    """Whether an HTML table (a DataFrame's or a Styler's) labels its rows 0, 1, 2, … with an unnamed index."""
    head = re.search(r"<thead>(.*?)</thead>", html, re.S)
    body = html[html.find("<tbody>") :]
    labels = re.findall(r"<tr[^>]*>\s*<th[^>]*>([^<]*)</th>", body)
    named = head is not None and head.group(1).count("<tr") > 1  # a second header row holds the index's name
    return bool(labels) and labels == [str(i) for i in range(len(labels))] and not named


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda chapter: chapter.name)
def test_no_executed_page_numbers_its_table_rows(chapter: build.Chapter) -> None:
    if not chapter.output.is_file():
        if os.environ.get("TKBOOK_REQUIRE_PAGES") == "1":
            pytest.fail(f"{chapter.output}: the smoke chapter was not executed")
        pytest.skip("the smoke chapters are executed later in `make test`")
    cells = json.loads(chapter.output.read_text(encoding="utf-8"))["cells"]
    numbered = [
        index
        for index, cell in enumerate(cells)
        for out in cell.get("outputs", [])
        if numbers_rows("".join(out.get("data", {}).get("text/html", "")))
    ]
    assert not numbered, f"{chapter.output}: cells {numbered} show a table with pandas' row numbers (use plain())"
