"""The chapter build: _toc.yml order, parameters cells, change detection, and errors naming the cell."""

from __future__ import annotations

import json

import jupytext
import pytest

from lib.chapters import build as chapters
from lib.chapters.build import Chapter, ChapterError


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


def test_fingerprint_changes_with_source_parameters_library_data_and_previous(tmp_path):
    chapter = _tiny_chapter(tmp_path, "x = 1")
    base = chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data")
    assert base == chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data")
    assert base != chapters.fingerprint(chapter, {"profile": "book"}, "prev", "lib", "data")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "other", "lib", "data")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib2", "data")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data2")
    chapter.source.write_text(chapter.source.read_text() + "y = 2\n")
    assert base != chapters.fingerprint(chapter, {"profile": "smoke"}, "prev", "lib", "data")


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
    monkeypatch.setattr(chapters, "chapters_in_toc", lambda: [chapter])
    monkeypatch.setattr(chapters, "data_fingerprint", lambda: "data")
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


def test_run_rejects_unknown_profile_and_chapter():
    with pytest.raises(ValueError, match="profile"):
        chapters.run("huge")
    with pytest.raises(ChapterError, match="not a chapter"):
        chapters.run("smoke", only="42_nothing")
