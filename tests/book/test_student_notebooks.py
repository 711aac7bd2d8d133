"""The student notebooks of chapters 2, 8 and 9 made from the executed smoke chapters (``make test`` runs this module
after the smoke build, Makefile target ``nbval``; ``TKBOOK_REQUIRE_PAGES=1`` makes a missing chapter a failure there,
and the unit-test pass before any chapter is executed skips it): every result the chapter showed is shown, no
exercise shows its solution's output, and Jupyter shows no raw MyST role."""

from __future__ import annotations

import os

import nbformat
import pytest

from lib.book import exercises
from lib.core import paths


def _executed(chapter: str) -> nbformat.NotebookNode:
    path = paths.build_dir() / "smoke" / "chapters" / f"{chapter}.ipynb"
    if not path.is_file():
        if os.environ.get("TKBOOK_REQUIRE_PAGES") == "1":
            pytest.fail(f"{path}: the smoke chapter was not executed")
        pytest.skip("the smoke chapters are executed later in `make test`")
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("chapter", exercises.DEFAULT_CHAPTERS)
def test_a_student_notebook_shows_every_result_but_the_exercises_and_no_raw_role(chapter: str) -> None:
    executed = _executed(chapter)
    notebook = exercises.student_notebook(exercises.NOTEBOOKS / f"{chapter}.py", ("smoke", executed))
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    shown = {cell.source: cell.outputs for cell in code if "exercise" not in cell.metadata.get("tags", [])}
    results = [
        cell
        for cell in executed.cells
        if cell.cell_type == "code" and cell.outputs and "injected-parameters" not in cell.metadata.get("tags", [])
        and "exercise" not in cell.metadata.get("tags", [])
    ]  # fmt: skip
    assert results, f"{chapter}: the executed chapter shows no result"
    for cell in results:
        assert shown.get(cell.source) == cell.outputs, f"{chapter}: a result is missing: {cell.source[:80]!r}"
    assert all(not cell.outputs for cell in code if "exercise" in cell.metadata.get("tags", []))
    prose = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    raw = exercises.RAW_ROLE.findall(prose)
    assert not raw, f"{chapter}: the student notebook shows raw roles {sorted(set(raw))}"
