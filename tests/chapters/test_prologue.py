"""The shared chapter prologue and epilogue (``lib.chapters.prologue``)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from lib.chapters.prologue import start_chapter
from lib.core import paths
from lib.core.profiles import get_profile


def test_start_seeds_and_prepares_the_chapter_and_finish_writes_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # start_chapter sets it; restored after the test
    chapter = start_chapter("99_topic", "smoke", seed=5, device="cpu", precision=2)
    first = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(first, torch.rand(3)), "torch is seeded with the chapter's seed"
    assert chapter.out == tmp_path / "artifacts" / "smoke" / "99_topic" and chapter.out.is_dir()
    assert chapter.profile.name == "smoke" and chapter.device == torch.device("cpu")
    assert chapter.chapter == "99_topic" and chapter.seed == 5 and chapter.settings is None
    assert pd.get_option("display.precision") == 2
    assert capsys.readouterr().out.startswith("profile smoke, device cpu, torch ")
    closing = chapter.finish({"profile": "smoke", "value": 1})
    written = json.loads((chapter.out / "summary.json").read_text())
    assert written["value"] == 1 and 0 <= written["minutes"] < 1
    assert closing.data.startswith("This chapter ran in ") and closing.data.endswith("on `cpu` (smoke profile).")


def test_start_points_the_loaders_at_the_profiles_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    start_chapter("99_topic", "paper", seed=0, device="cpu")
    assert paths.converted_dir() == tmp_path.resolve() / "data" / "msmarco"
    start_chapter("99_topic", "book", seed=0, device="cpu")
    assert paths.converted_dir() == tmp_path.resolve() / "data" / "converted"


def test_paper_mini_says_it_runs_on_the_miniature_and_names_its_substitutions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    (tmp_path / "data" / "msmarco-mini").mkdir(parents=True)
    (tmp_path / "data" / "msmarco-mini" / "manifest.json").write_text(json.dumps({"miniature": True}))
    start_chapter("99_topic", "paper-mini", seed=0, device="cpu")
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("data: the paper-shaped miniature in ") and "msmarco-mini" in printed[1]
    assert printed[2:] == [f"substitution: {line}" for line in get_profile("paper-mini").substitutions]
    start_chapter("99_topic", "book", seed=0, device="cpu")
    assert len(capsys.readouterr().out.splitlines()) == 1, "the book's data is no miniature and substitutes nothing"


def test_a_bad_profile_or_device_names_the_parameter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    with pytest.raises(ValueError, match="'profile'"):
        start_chapter("99_topic", "huge", seed=0)
    with pytest.raises(ValueError, match="'device'"):
        start_chapter("99_topic", "smoke", seed=0, device="tpu")


def test_the_overrides_apply_once_to_the_chapters_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    overrides = {"max_steps": 7, "batch_size": None, "ladder_models": ["tk1-pieces"]}
    chapter = start_chapter("99_topic", "smoke", seed=0, device="cpu", section="training", overrides=overrides)
    default = get_profile("smoke").training
    assert chapter.settings == default.replace(max_steps=7, ladder_models=("tk1-pieces",))
    assert chapter.profile.training is chapter.settings, "the profile holds the chapter's settings"
    assert chapter.profile.speed == get_profile("smoke").speed
    assert chapter.with_seed(3).seed == 3 and chapter.with_seed(3).settings is chapter.settings
    assert chapter.run_path("dl19", "bm25") == paths.run_path("smoke", "dl19", "bm25")


def test_an_unknown_override_or_section_names_the_parameter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    with pytest.raises(ValueError, match="'max_step'"):
        start_chapter("99_topic", "smoke", seed=0, device="cpu", section="training", overrides={"max_step": 1})
    with pytest.raises(ValueError, match="'section'"):
        start_chapter("99_topic", "smoke", seed=0, device="cpu", section="nothing")
    with pytest.raises(ValueError, match="'overrides'"):
        start_chapter("99_topic", "smoke", seed=0, device="cpu", overrides={"max_steps": 1})


CHAPTER_SOURCES = sorted((paths.REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("source", CHAPTER_SOURCES, ids=lambda path: path.stem)
def test_the_parameters_profile_and_seed_enter_the_library_only_through_start_chapter(source: Path) -> None:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    through_start = {
        id(argument)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "start_chapter"
        for argument in node.args
    }
    loose = [
        f"line {node.lineno}: {node.id}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in ("profile", "seed") and isinstance(node.ctx, ast.Load)
        if id(node) not in through_start
    ]
    assert not loose, f"{source.name} reads its parameters' profile or seed past start_chapter (use `chapter`): {loose}"
