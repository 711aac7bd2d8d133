"""The chapter build: _toc.yml order, parameters cells, change detection by imports, and errors naming the cell."""

from __future__ import annotations

import json

import jupytext
import pytest

from lib.book import build as chapters
from lib.book.build import Chapter, ChapterError


def test_toc_lists_every_notebook_source_in_order():
    found = chapters.chapters_in_toc()
    names = [chapter.name for chapter in found]
    assert names[0] == "01_data_and_first_stage"
    assert names == sorted(names), "chapters must appear in _toc.yml in their NN order"
    sources = sorted(path.stem for path in (chapters.paths.REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert names == sources, "every notebooks/NN_*.py must be a chapter of _toc.yml and vice versa"


@pytest.mark.parametrize("chapter", chapters.chapters_in_toc(), ids=lambda chapter: chapter.name)
def test_every_chapter_has_a_parameters_cell_with_profile_device_seed(chapter):
    notebook = jupytext.read(chapter.source)
    cells = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"{chapter.source}: exactly one cell must be tagged 'parameters'"
    namespace: dict = {}
    exec(cells[0].source, namespace)  # the parameters cell holds plain assignments only
    assert namespace["profile"] == "book"
    assert {"device", "seed"} <= namespace.keys()


def _tiny_chapter(tmp_path, body: str) -> Chapter:
    source = tmp_path / "notebooks" / "99_tiny.py"
    source.parent.mkdir()
    source.write_text('# %% tags=["parameters"]\nprofile = "book"\nvalue = 1\n\n# %%\n' + body + "\n", encoding="utf-8")
    return Chapter("99_tiny", source, tmp_path / "book" / "chapters" / "99_tiny.ipynb")


def test_fingerprint_changes_with_source_parameters_library_data_inputs_and_previous(tmp_path):
    chapter = _tiny_chapter(tmp_path, "x = 1")
    base = chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data", "inputs")
    assert base == chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data", "inputs")
    assert base != chapters.fingerprint(chapter, {"profile": "book"}, "prev", "lib", "data", "inputs")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "other", "lib", "data", "inputs")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib2", "data", "inputs")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data2", "inputs")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data", "inputs2")
    chapter.source.write_text(chapter.source.read_text() + "y = 2\n")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data", "inputs")


def test_a_new_or_changed_benchmark_result_changes_chapter_3s_inputs_and_no_other_chapters(tmp_path):
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "cpu.json").write_text('{"results": []}')
    (results / "correctness").mkdir()
    empty = chapters.inputs_fingerprint("03_time_budget", tmp_path)
    others = {name: chapters.inputs_fingerprint(name, tmp_path) for name in ("02_training", "04_query_clusters")}
    (results / "correctness" / "gpu.json").write_text("{}")
    assert chapters.inputs_fingerprint("03_time_budget", tmp_path) == empty, "only benchmarks/results/*.json counts"
    (results / "gpu.json").write_text('{"results": []}')
    added = chapters.inputs_fingerprint("03_time_budget", tmp_path)
    assert added != empty
    (results / "gpu.json").write_text('{"results": [1]}')
    assert chapters.inputs_fingerprint("03_time_budget", tmp_path) != added
    assert {name: chapters.inputs_fingerprint(name, tmp_path) for name in others} == others


def _write(path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_execute_writes_the_output_with_injected_parameters(tmp_path):
    chapter = _tiny_chapter(tmp_path, "print('value is', value * 2)")
    chapters.execute(chapter, {"profile": "smoke", "value": 21})
    notebook = json.loads(chapter.output.read_text())
    texts = [out.get("text", "") for cell in notebook["cells"] for out in cell.get("outputs", [])]
    outputs = "".join("".join(text) if isinstance(text, list) else text for text in texts)
    assert "value is 42" in outputs
    assert not chapter.failed.exists()


def test_a_raising_chapter_names_chapter_and_cell_and_leaves_no_output(tmp_path):
    chapter = _tiny_chapter(tmp_path, "raise RuntimeError('boom in the chapter')")
    with pytest.raises(ChapterError) as error:
        chapters.execute(chapter, {"profile": "smoke"})
    message = str(error.value)
    assert "99_tiny" in message and "cell" in message and "boom in the chapter" in message
    assert not chapter.output.exists(), "a failed chapter must not look complete"
    assert chapter.failed.exists(), "the partly executed notebook is kept for inspection"


def test_a_chapter_without_parameters_cell_is_refused(tmp_path):
    source = tmp_path / "00_bad.py"
    source.write_text("# %%\nx = 1\n")
    chapter = Chapter("00_bad", source, tmp_path / "00_bad.ipynb")
    with pytest.raises(ChapterError, match="parameters"):
        chapters.execute(chapter, {"profile": "smoke"})


def test_run_skips_up_to_date_chapters_and_reruns_changed_ones(tmp_path, monkeypatch):
    chapter = _tiny_chapter(tmp_path, "print(value)")
    monkeypatch.setattr(chapters, "chapters_in_toc", lambda profile: [chapter])
    monkeypatch.setattr(chapters, "data_fingerprint", lambda profile: "data")
    calls = []
    real_execute = chapters.execute
    monkeypatch.setattr(chapters, "execute", lambda c, p: calls.append(dict(p)) or real_execute(c, p))
    chapters.run("smoke")
    chapters.run("smoke")
    assert len(calls) == 1, "an unchanged chapter must not be executed again"
    chapters.run("book")
    assert [call["profile"] for call in calls] == ["smoke", "book"]
    chapter.source.write_text(chapter.source.read_text() + "\n# %%\nprint('changed')\n")
    chapters.run("book")
    assert len(calls) == 3


def test_the_data_fingerprint_is_the_manifest_of_the_profiles_own_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.setenv(chapters.paths.CONVERTED_VARIABLE, "msmarco")  # what this process reads does not matter
    _write(tmp_path / "converted" / "manifest.json", '{"collection.tsv": "book"}')
    _write(tmp_path / "msmarco" / "manifest.json", '{"collection.tsv": "full"}')
    assert chapters.data_fingerprint("smoke") == chapters.data_fingerprint("book")
    assert chapters.data_fingerprint("paper") != chapters.data_fingerprint("book")
    (tmp_path / "msmarco" / "manifest.json").unlink()
    with pytest.raises(ChapterError) as caught:
        chapters.data_fingerprint("paper")
    folder = tmp_path.resolve() / "msmarco"
    assert str(folder / "manifest.json") in str(caught.value)
    assert f"`python -m lib.data.msmarco --out {folder}`" in str(caught.value)


def test_run_rejects_unknown_profile_and_chapter():
    with pytest.raises(ValueError, match="profile"):
        chapters.run("huge")
    with pytest.raises(ChapterError, match="not a chapter"):
        chapters.run("smoke", only="42_nothing")


def _toc_of(root, names: tuple[str, ...]) -> None:
    """A ``_toc.yml`` listing the chapters ``names`` and a parameters-only source for each."""
    entries = "".join(f"  - file: book/chapters/{name}\n" for name in names)
    _write(root / "_toc.yml", "root: book/intro\nchapters:\n" + entries)
    for name in names:
        _write(root / "notebooks" / f"{name}.py", '# %% tags=["parameters"]\nprofile = "book"\n')


def test_profiles_keep_their_own_chapters_and_staging_copies_one_profile(tmp_path):
    _toc_of(tmp_path, ("01_one", "02_two"))
    for name in ("01_one", "02_two"):
        for profile in ("book", "smoke"):
            _write(chapters.executed_dir(profile, tmp_path) / f"{name}.ipynb", _notebook(f"{profile} {name}"))
    _write(tmp_path / "book" / "chapters" / "03_gone.ipynb", "stale")
    found = chapters.chapters_in_toc("smoke", tmp_path)
    assert [c.output for c in found] == [
        tmp_path / "_build/smoke/chapters" / f"{n}.ipynb" for n in ("01_one", "02_two")
    ]

    staged = chapters.stage("smoke", tmp_path)
    assert sorted(p.name for p in staged.glob("*.ipynb")) == ["01_one.ipynb", "02_two.ipynb"]
    page = json.loads((staged / "02_two.ipynb").read_text())
    assert page["cells"][1]["source"] == "smoke 02_two"
    assert [cell["metadata"]["tags"] for cell in page["cells"]] == [
        ["parameters"],
        ["injected-parameters", "remove-cell"],
    ]
    book = json.loads((chapters.executed_dir("book", tmp_path) / "02_two.ipynb").read_text())
    assert book["cells"][1]["source"] == "book 02_two" and "remove-cell" not in book["cells"][1]["metadata"]["tags"]
    chapters.stage("book", tmp_path)
    assert json.loads((staged / "01_one.ipynb").read_text())["cells"][1]["source"] == "book 01_one"

    (chapters.executed_dir("smoke", tmp_path) / "02_two.ipynb").unlink()
    with pytest.raises(ChapterError, match=r"has not executed \['02_two'\].*make chapters PROFILE=smoke"):
        chapters.stage("smoke", tmp_path)


def test_the_chapters_times_come_from_their_stamps_and_the_staged_book_shows_them(tmp_path):
    _toc_of(tmp_path, ("01_one", "02_training"))
    for name in ("01_one", "02_training"):
        _write(chapters.executed_dir("book", tmp_path) / f"{name}.ipynb", _notebook(name))
    found = chapters.chapters_in_toc("book", tmp_path)
    _write(found[0].stamp, json.dumps({"fingerprint": "x", "seconds": 90.0}))
    assert chapters.chapter_times(found) == {"01_one": 90.0, "02_training": None}
    partial = chapters.times_table("book", chapters.chapter_times(found))
    assert "| 01_one | 1.5 | ≤ 15 |" in partial and "| 02_training | not executed | ≤ 20 |" in partial
    assert "| **total** | not executed | ≤ 60 |" in partial, "no total while a chapter has no time"
    _write(found[1].stamp, json.dumps({"fingerprint": "y", "seconds": 1110.0}))
    staged = chapters.stage("book", tmp_path)
    page = (staged / chapters.TIMES_PAGE).read_text()
    assert "| 02_training | 18.5 | ≤ 20 |" in page and "| **total** | 20.0 | ≤ 60 |" in page
    assert "budget" not in chapters.times_table("smoke", {"01_one": 6.0}), "budgets are the book profile's"
    decisions = (staged / chapters.DECISIONS_PAGE).read_text()
    assert decisions.index("**The `book` profile**") < decisions.index("**The `paper` profile**")
    assert "| `training.word_learning_rate` | 0.001 | validation |" in decisions
    assert "| `training.batch_size` | 64 | paper | TK §4.3: training batch size 64 |" in decisions


def test_the_costs_are_each_chapters_slowest_cells_from_papermills_durations(tmp_path, capsys):
    _toc_of(tmp_path, ("01_one",))
    cells = [
        {"cell_type": "code", "execution_count": n, "metadata": {"papermill": {"duration": seconds}}, "source": text}
        for n, seconds, text in ((1, 0.5, "import x"), (2, 30.0, "\ntrain(model)\nmore()"), (3, 2.0, "plot()"))
    ] + [{"cell_type": "markdown", "metadata": {}, "source": "# prose"}]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    _write(chapters.executed_dir("book", tmp_path) / "01_one.ipynb", json.dumps(notebook))
    costs = chapters.chapter_costs("book", top=2, root=tmp_path)
    assert [(c.cell, c.seconds, c.first_line) for c in costs] == [(2, 30.0, "train(model)"), (3, 2.0, "plot()")]
    assert chapters.chapter_costs("smoke", root=tmp_path) == [], "a profile that executed nothing has no costs"


def _notebook(injected: str) -> str:
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": 'profile = "book"'},
        {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": injected},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_make_keeps_each_profiles_html_and_nbval_reads_the_smoke_chapters():
    makefile = (chapters.paths.REPO_ROOT / "Makefile").read_text()
    assert "--path-output _build/$(PROFILE)" in makefile and "--stage" in makefile
    assert "_build/smoke/chapters/[0-9]*.ipynb" in makefile
