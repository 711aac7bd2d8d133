"""Student notebooks (``lib.book.exercises``): stubs, markers, errors, and the real chapters' exercises."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from jupytext import read as jupytext_read

from lib.book import exercises
from lib.book.exercises import exercise_cells, student_notebook, write_exercises
from lib.core import paths

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STUB = 'raise NotImplementedError("exercise: write the solution here")'
HEADER = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
profile = "book"

# %% [markdown]
# Two small exercises.

# %%
total = 1 + 1

"""
AREA = """\
# %% tags=["exercise"]
import math

# BEGIN SOLUTION
radius = 2.0
area = math.pi * radius**2
# END SOLUTION
assert abs(area - 4 * math.pi) < 1e-9
"""
FUNCTIONS = """\
# %% tags=["exercise", "hide-output"]
def double(x):
    # BEGIN SOLUTION
    return 2 * x
    # END SOLUTION


def square(x):
    if x is not None:
        # BEGIN SOLUTION
        return x * x
        # END SOLUTION


assert double(3) == 6 and square(3) == 9
"""


def _chapter(tmp_path: Path, body: str, name: str = "99_tiny") -> Path:
    path = tmp_path / "notebooks" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def _last_line(path: Path, text: str) -> int:
    """The 1-based number of the last line of ``path`` that is exactly ``text``."""
    return max(number for number, line in enumerate(path.read_text().splitlines(), start=1) if line == text)


def test_student_version_stubs_each_block_at_its_indentation_and_keeps_the_checks(tmp_path: Path) -> None:
    path = _chapter(tmp_path, AREA + "\n" + FUNCTIONS)
    area, functions = exercise_cells(path)
    assert area.path == path and functions.path == path
    assert area.line == _last_line(path, '# %% tags=["exercise"]')
    assert functions.line == _last_line(path, '# %% tags=["exercise", "hide-output"]')
    assert area.student == f"import math\n\n{STUB}\nassert abs(area - 4 * math.pi) < 1e-9"
    assert functions.student == (
        f"def double(x):\n    {STUB}\n\n\ndef square(x):\n    if x is not None:\n        {STUB}\n\n\n"
        "assert double(3) == 6 and square(3) == 9"
    )
    assert area.solution == (
        "import math\n\nradius = 2.0\narea = math.pi * radius**2\nassert abs(area - 4 * math.pi) < 1e-9"
    )
    for cell in (area, functions):
        assert "SOLUTION" not in cell.solution and "SOLUTION" not in cell.student
        exec(compile(cell.solution, str(path), "exec"), {"__name__": "__main__"})
        with pytest.raises(NotImplementedError, match="write the solution here"):
            exec(compile(cell.student, str(path), "exec"), {"__name__": "__main__"})


def test_student_notebook_replaces_only_exercises_clears_outputs_and_says_what_to_do(tmp_path: Path) -> None:
    path = _chapter(tmp_path, AREA + "\n" + FUNCTIONS)
    notebook = student_notebook(path)
    nbformat.validate(notebook)
    intro, parameters, markdown, code, area, functions = notebook.cells
    assert intro.cell_type == "markdown" and "chapter `99_tiny`" in intro.source
    assert "`make exercises`" in intro.source and "NotImplementedError" in intro.source
    assert parameters.metadata["tags"] == ["parameters"] and parameters.source == 'profile = "book"'
    assert markdown.cell_type == "markdown" and markdown.source == "Two small exercises."
    assert code.source == "total = 1 + 1"
    assert [area.source, functions.source] == [cell.student for cell in exercise_cells(path)]
    assert functions.metadata["tags"] == ["exercise", "hide-output"]
    for cell in (parameters, code, area, functions):
        assert cell.outputs == [] and cell.execution_count is None


def test_write_exercises_writes_valid_notebooks_and_reports_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _chapter(tmp_path, AREA + "\n" + FUNCTIONS)
    (written,) = write_exercises(["99_tiny"], tmp_path / "out", notebooks=path.parent)
    assert written == tmp_path / "out" / "99_tiny.ipynb"
    notebook = nbformat.read(written, as_version=4)
    nbformat.validate(notebook)
    assert [cell.source for cell in notebook.cells] == [cell.source for cell in student_notebook(path).cells]
    assert sum(STUB in cell.source for cell in notebook.cells) == 2
    assert capsys.readouterr().out == f"[exercises] {written}: 2 exercises, 0 cells with outputs\n"


BROKEN = {
    "no block": ("x = 1\nassert x == 1\n", '# %% tags=["exercise"]', "no '# BEGIN SOLUTION'"),
    "END without BEGIN": ("x = 1\n# END SOLUTION\n", "# END SOLUTION", "without a '# BEGIN SOLUTION'"),
    "BEGIN without END": ("if True:\n    # BEGIN SOLUTION\n    x = 1\n", "    # BEGIN SOLUTION", "without an"),
    "nested BEGIN": (
        "# BEGIN SOLUTION\nx = 1\n    # BEGIN SOLUTION\n# END SOLUTION\n",
        "    # BEGIN SOLUTION",
        "inside the block",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_malformed_exercise_names_the_file_and_line(tmp_path: Path, case: str) -> None:
    body, culprit, message = BROKEN[case]
    path = _chapter(tmp_path, AREA + '\n# %% tags=["exercise"]\n' + body, name="99_broken")
    line = _last_line(path, culprit)
    assert line >= _last_line(path, '# %% tags=["exercise"]'), "the culprit is in the broken cell, not in AREA"
    for make in (exercise_cells, student_notebook):
        with pytest.raises(ValueError, match=rf"99_broken\.py:{line}: .*{message}"):
            make(path)


def test_a_chapter_without_exercises_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    path = _chapter(tmp_path, "", name="99_plain")
    assert exercise_cells(path) == []
    with pytest.raises(ValueError, match="99_plain"):
        student_notebook(path)
    _chapter(tmp_path, AREA)
    with pytest.raises(ValueError, match="99_plain"):
        write_exercises(["99_tiny", "99_plain"], tmp_path / "out", notebooks=path.parent)
    assert not (tmp_path / "out").exists()


def test_the_command_line_names_a_missing_chapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert exercises.main(["--chapters", "99_missing", "--out", str(tmp_path)]) == 1
    assert "99_missing" in capsys.readouterr().err


# --- the real chapters -----------------------------------------------------------------------
REAL = [paths.REPO_ROOT / "notebooks" / f"{name}.py" for name in exercises.DEFAULT_CHAPTERS]
REAL_CELLS = [cell for path in REAL if path.is_file() for cell in exercise_cells(path)]


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.stem)
def test_each_real_chapter_has_exercises(path: Path) -> None:
    assert path.is_file(), f"{path} is missing"
    assert exercise_cells(path), f"{path} has no code cell tagged 'exercise'"


@pytest.mark.parametrize("cell", REAL_CELLS, ids=lambda cell: f"{cell.path.stem}:{cell.line}")
def test_a_real_solution_passes_its_checks_and_its_stub_is_reached(cell: exercises.ExerciseCell) -> None:
    filename = f"{cell.path.name}:{cell.line}"
    exec(compile(cell.solution, filename, "exec"), {"__name__": "__main__"})
    with pytest.raises(NotImplementedError, match="write the solution here"):
        exec(compile(cell.student, filename, "exec"), {"__name__": "__main__"})


#: A plausible wrong solution per exercise (its function's body): the exercise's checks must refuse it.
WRONG = {
    "my_maxsim": "    return (query @ doc.transpose(1, 2)).max(dim=-1).values.sum(dim=-1)  # the masks ignored",
    "select_windows": "    best = scores.topk(min(k, scores.shape[1]), dim=1).indices  # a missing window chosen\n"
    "    return torch.zeros_like(valid).scatter(1, best, True)",
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_real_exercises_checks_refuse_a_wrong_solution(name: str) -> None:
    (cell,) = [cell for cell in REAL_CELLS if f"def {name}(" in cell.solution]
    wrong = cell.student.replace(f"    {exercises.STUB}", WRONG[name])
    with pytest.raises(AssertionError):
        exec(compile(wrong, f"{cell.path.name}:{cell.line}", "exec"), {"__name__": "__main__"})


def _executed(path: Path, glued: dict[str, str]) -> nbformat.NotebookNode:
    """``path``'s chapter as if executed: every code cell prints its own line number, and a glue output per value."""
    notebook = jupytext_read(path)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"cell {number}\n")]
    records = [nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(value)},
                                      metadata={"scrapbook": {"name": name,
                                                              "mime_prefix": "application/papermill.record/"}})
               for name, value in glued.items()]  # fmt: skip
    notebook.cells.insert(2, nbformat.v4.new_code_cell("injected = True", outputs=records))  # papermill's cell
    return notebook


def test_a_student_notebook_keeps_the_executed_outputs_and_the_glued_values(tmp_path: Path) -> None:
    prose = "# %% [markdown]\n# The total is {glue:text}`total` and {glue:text}`unknown` stays.\n\n"
    path = _chapter(tmp_path, prose + AREA)
    notebook = student_notebook(path, ("smoke", _executed(path, {"total": "2", "other": "x"})))
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.outputs[0]["text"] for cell in code[:2]] == ["cell 0\n", "cell 2\n"]  # parameters, `total = …`
    assert code[-1].outputs == [] and STUB in code[-1].source  # the exercise shows nothing of its solution's
    markdown = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert "The total is 2 and {glue:text}`unknown` stays." in markdown
    assert "outputs of the `smoke` profile's build" in notebook.cells[0].source
    bare = student_notebook(path)
    assert all(cell.outputs == [] for cell in bare.cells if cell.cell_type == "code")
    assert "No executed chapter was found" in bare.cells[0].source and "{glue:text}`total`" in "\n".join(
        cell.source for cell in bare.cells
    )


def test_the_book_profiles_build_comes_before_the_smoke_profiles(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TKBOOK_BUILD", raising=False)
    assert exercises.executed_chapter("99_tiny", tmp_path) is None
    for profile in ("smoke", "book"):
        folder = tmp_path / "_build" / profile / "chapters"
        folder.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(metadata={"profile": profile}), folder / "99_tiny.ipynb")
        found, notebook = exercises.executed_chapter("99_tiny", tmp_path)
        assert found == profile == notebook.metadata["profile"]


def test_answers_lose_their_content_and_keep_their_dropdown(tmp_path: Path) -> None:
    questions = (
        "# %% [markdown]\n# Questions.\n#\n# ```{admonition} Answers\n# :class: dropdown\n# 1. The secret.\n"
        "# 2. Another.\n# ```\n#\n# After the answers.\n"
    )
    path = _chapter(tmp_path, AREA + "\n" + questions)
    cell = next(cell for cell in student_notebook(path).cells if exercises.ANSWERS in cell.source)
    assert cell.source.split("\n") == [
        "Questions.", "", "```{admonition} Answers", ":class: dropdown", exercises.ANSWERS_REMOVED, "```", "",
        "After the answers.",
    ]  # fmt: skip
    broken = _chapter(tmp_path / "broken", AREA + "\n" + questions.replace("# ```\n#\n", "#\n"))
    line = next(n for n, text in enumerate(broken.read_text().splitlines(), 1) if exercises.ANSWERS in text)
    with pytest.raises(ValueError, match=rf"99_tiny\.py:{line}: a block of answers without its closing"):
        student_notebook(broken)


def test_make_exercises_writes_both_real_chapters(tmp_path: Path) -> None:
    written = write_exercises(exercises.DEFAULT_CHAPTERS, tmp_path)
    assert [path.stem for path in written] == list(exercises.DEFAULT_CHAPTERS)
    for path in written:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        assert any(STUB in source for source in code)
        assert not any("SOLUTION" in source for source in code)
        markdown = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
        book = (exercises.NOTEBOOKS / f"{path.stem}.py").read_text(encoding="utf-8")
        assert markdown.count(exercises.ANSWERS) == book.count(exercises.ANSWERS)
        assert markdown.count(exercises.ANSWERS_REMOVED) == book.count(exercises.ANSWERS)
        for block in book.split(exercises.ANSWERS)[1:]:  # no answer's text reaches the student
            answer = [line[2:] for line in block.split("\n# ```")[0].split("\n")[2:] if line.strip("# ")]
            assert answer and not any(text in markdown for text in answer)


def test_page_and_citation_roles_become_what_a_reader_sees() -> None:
    titles, cited = exercises.page_titles(), exercises.citations()
    assert titles["02_training"] == "Training TK and its baselines" and titles["reproducing"] == "Reproducing the book"
    assert cited["hofstaetter2020tk"] == "Hofstätter et al. 2020"
    assert cited["khattab2020colbert"] == "Khattab and Zaharia 2020"
    prose = (
        "See {doc}`02_training`, {doc}`the page <../reproducing>`, {cite}`hofstaetter2020tk` and "
        "{cite:p}`khattab2020colbert, hofstaetter2020tk`."
    )
    assert exercises.without_roles(prose, titles, cited) == (
        "See *Training TK and its baselines*, the page, (Hofstätter et al. 2020) and "
        "(Khattab and Zaharia 2020; Hofstätter et al. 2020)."
    )
    unknown = "{doc}`99_missing` and {cite}`nobody2030`"
    assert exercises.without_roles(unknown, titles, cited) == unknown  # kept, so the post-build test finds it
    assert exercises.RAW_ROLE.findall(unknown) == ["{doc}`", "{cite}`"]
