"""Fine-tuning TILDEv2 (``lib.training.tilde_v2``): groups, exact resume, reuse of a finished run, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lib.training.tilde_v2 as training
from lib import data
from lib.representations.bert import WordPieceTokenizer
from lib.training.tilde_v2 import NEGATIVES_FROM, Group, TildeV2TrainingConfig, groups, teacher_groups, train_tilde_v2
from tests.tilde_helpers import tiny_tilde_v2

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_groups_leave_out_the_positive_the_excluded_and_the_skipped() -> None:
    candidates = {"q": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0}, "r": {"x": 1.0}}
    made = groups([("q", "b"), ("r", "x"), ("s", "y")], candidates, exclude={"q": {"c"}})
    assert made == [Group("q", "b", ("a", "d"))], "r has no candidate left, s no candidates at all"
    assert groups([("q", "b")], candidates, skip=1) == [Group("q", "b", ("c", "d"))]


def test_teacher_groups_take_the_first_passage_against_the_later_ranks() -> None:
    teacher = {"q": {p: float(10 - i) for i, p in enumerate("abcdefg")}, "empty": {}}
    [group] = teacher_groups(teacher)
    assert group.positive == "a" and group.negatives == tuple("abcdefg"[NEGATIVES_FROM - 1 :])


@pytest.fixture(scope="module")
def material(converted: Path):
    texts = data.load_collection("v1")
    run = data.load_run("dl20", "bm25")
    qids = sorted(run)[:3]
    made = [Group(q, next(iter(run[q])), tuple(list(run[q])[1:6])) for q in qids]
    return made, data.load_queries("dl20"), texts


def run(material, out: Path, **kwargs):
    made, queries, texts = material
    arguments = dict(steps=4, batch_size=2, group_size=3, checkpoint_every=2, seed=3, device="cpu", progress=False)
    config = TildeV2TrainingConfig(**arguments | kwargs)
    return train_tilde_v2(tiny_tilde_v2(), WordPieceTokenizer.from_vocab(), made, queries, texts, out, config)


def test_resume_after_an_interruption_ends_with_the_uninterrupted_weights(
    material, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = run(material, tmp_path / "whole")
    assert len(whole.losses) == 4 and all(loss > 0 for loss in whole.losses)
    assert (tmp_path / "whole" / "training.json").is_file() and not (tmp_path / "whole" / "checkpoint.pt").exists()
    calls = {"n": 0}
    original = training.step_seed

    def interrupted(*args):
        calls["n"] += 1
        if calls["n"] == 7:  # two seeds a step: step 4 starts, the checkpoint holds step 2
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(training, "step_seed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(material, tmp_path / "cut")
    monkeypatch.setattr(training, "step_seed", original)
    resumed = run(material, tmp_path / "cut")
    assert (resumed.resumed_from, resumed.steps_run) == (2, 2), "the run went on from its checkpoint"
    assert resumed.losses == whole.losses
    for left, right in zip(resumed.model.state_dict().values(), whole.model.state_dict().values(), strict=True):
        assert torch.equal(left, right)
    again = run(material, tmp_path / "whole")
    assert again.steps_run == 0 and again.losses == whole.losses, "a finished run is loaded, not trained again"


def test_bad_input_is_a_clear_error(material, tmp_path: Path) -> None:
    made, queries, texts = material
    with pytest.raises(ValueError, match="'training_groups' is empty"):
        train_tilde_v2(tiny_tilde_v2(), WordPieceTokenizer.from_vocab(), [], queries, texts, tmp_path)
    with pytest.raises(KeyError, match="passage 'nope'"):
        bad = [Group(made[0].qid, "nope", made[0].negatives)]
        train_tilde_v2(tiny_tilde_v2(), WordPieceTokenizer.from_vocab(), bad, queries, texts, tmp_path)
    with pytest.raises(ValueError, match="'group_size'"):
        run(material, tmp_path / "x", group_size=0)
