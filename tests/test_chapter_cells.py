"""The chapter sources read as stories (ARCHITECTURE.md, "How to add … a chapter"): no code cell over 30 lines.

A code cell of ``notebooks/NN_topic.py`` (jupytext percent format) is the lines after a ``# %%`` marker
that is not ``# %% [markdown]``, up to the next marker, without its trailing blank lines.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.py"))
#: The most lines a code cell may have; longer logic belongs in ``lib/``.
MAX_CELL_LINES = 30


def code_cell_lines(source: str) -> list[tuple[int, list[str]]]:
    """Each code cell of a percent-format source: (line number of its marker, its lines without trailing blanks)."""
    lines = source.split("\n")
    markers = [index for index, line in enumerate(lines) if line.startswith("# %%")] + [len(lines)]
    cells = []
    for start, end in itertools.pairwise(markers):
        if "[markdown]" in lines[start]:
            continue
        body = lines[start + 1 : end]
        while body and not body[-1].strip():
            body.pop()
        cells.append((start + 1, body))
    return cells


def code_cells(source: str) -> list[tuple[int, int]]:
    """Each code cell of a percent-format source: (line number of its marker, its length in lines)."""
    return [(start, len(body)) for start, body in code_cell_lines(source)]


def test_code_cells_are_counted_without_markdown_and_trailing_blank_lines() -> None:
    source = "# %%\na = 1\nb = 2\n\n\n# %% [markdown]\n# text\n# %% tags=['x']\nc = 3\n"
    assert code_cells(source) == [(1, 2), (8, 1)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_no_code_cell_is_over_30_lines(notebook: Path) -> None:
    long = [
        (line, length) for line, length in code_cells(notebook.read_text(encoding="utf-8")) if length > MAX_CELL_LINES
    ]
    assert not long, f"{notebook.name}: code cells over {MAX_CELL_LINES} lines (marker line, length): {long}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_no_code_cell_holds_a_markdown_heading(notebook: Path) -> None:
    """A heading inside a code cell renders as a Python comment, and the page loses its section."""
    headings = [
        f"{notebook.name}:{start}: {line}"
        for start, body in code_cell_lines(notebook.read_text(encoding="utf-8"))
        for line in body
        if line.startswith("# #")
    ]
    assert not headings, "markdown headings in code cells (a `# %% [markdown]` line is missing):\n" + "\n".join(
        headings
    )


def test_the_heading_check_finds_a_heading_in_a_code_cell() -> None:
    source = "# %%\nx = 1\n\n# ## A section\n# prose\n# %% [markdown]\n# ## Fine here\n"
    assert [line for _, body in code_cell_lines(source) for line in body if line.startswith("# #")] == [
        "# ## A section"
    ]


#: MyST roles that render only in a markdown cell: in a code cell's comment they show raw.
MYST_ROLES = ("{glue:", "{doc}", "{cite}", "{numref}", "{ref}")


def prose_in_code(source: str) -> list[str]:
    """``<marker line>: <line>`` of every code-cell comment line holding a MyST role (prose in the wrong cell)."""
    return [f"{start}: {line}" for start, body in code_cell_lines(source) for line in body
            if line.lstrip().startswith("#") and any(role in line for role in MYST_ROLES)]  # fmt: skip


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_no_code_cell_holds_prose_with_a_myst_role(notebook: Path) -> None:
    found = prose_in_code(notebook.read_text(encoding="utf-8"))
    assert not found, f"{notebook.name}: prose in a code cell (a `# %% [markdown]` line is missing): {found}"


def test_the_prose_check_finds_a_role_in_a_code_cells_comment() -> None:
    source = "# %%\nshow(x)\n#\n# the line through {glue:text}`low` and\n# %% [markdown]\n# {glue:text}`fine` here\n"
    assert prose_in_code(source) == ["1: # the line through {glue:text}`low` and"]
    assert prose_in_code("# %%\nx = '{doc}'  # a string, not a comment\n") == []


#: Calls that show something only as a cell's last top-level expression (Jupyter's display rule).
SHOWN_ONLY_LAST = {"plain", "Markdown"}


def dropped_displays(body: list[str]) -> list[int]:
    """Lines (1-based, in the cell) of a ``plain(…)`` / ``Markdown(…)`` expression that Jupyter never shows: one
    inside a block or before the cell's last statement, not passed to ``display``."""
    tree = ast.parse("\n".join(body))
    last = tree.body[-1] if tree.body else None
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and node is not last and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name) and node.value.func.id in SHOWN_ONLY_LAST
    ]  # fmt: skip


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_no_table_is_built_and_never_shown(notebook: Path) -> None:
    dropped = [
        f"{notebook.name}:{start + line}"
        for start, body in code_cell_lines(notebook.read_text(encoding="utf-8"))
        for line in dropped_displays(body)
    ]
    assert not dropped, "tables built but not shown (wrap them in display(...)): " + ", ".join(dropped)


def test_the_display_check_finds_a_table_inside_a_block() -> None:
    body = ["if empty:", "    note()", "else:", "    plain(table)", "    display(Markdown('x'))", "plain(other)"]
    assert dropped_displays(body) == [4]
