"""Margin-MSE and listwise distillation: the losses by hand, their gradients, the samplers, and short real runs.

The student is the bag-of-words stand-in of ``test_pairwise``; the teacher of the real run is BM25's
own score of a real slice of TREC DL 2019 (a teacher that is cheap to compute in a test).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from lib.core.types import ranking_from_run
from lib.training import pairwise
from lib.training.distillation import TripleSampling, listwise_kl, margin_mse, teacher_groups, teacher_triples
from lib.training.pairwise import train
from tests.training.test_pairwise import (  # noqa: F401 (fixtures)
    HashTokenizer,
    Killed,
    assert_same_weights,
    dl19,
    make_model,
    small_config,
)


def test_margin_mse_hand_computed_on_two_triples() -> None:
    pos, neg = torch.tensor([2.0, 1.0]), torch.tensor([1.0, 3.0])
    teacher = torch.tensor([0.5, -1.0])
    # student margins 1 and -2; errors 0.5 and -1; mean of squares (0.25 + 1) / 2
    assert margin_mse(pos, neg, teacher).item() == pytest.approx(0.625)


def test_the_gradient_vanishes_when_the_student_matches_the_teachers_margins() -> None:
    pos = torch.tensor([2.0, -1.0, 0.5], requires_grad=True)
    neg = torch.tensor([1.0, 3.0, 0.5], requires_grad=True)
    loss = margin_mse(pos, neg, (pos - neg).detach())
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(pos.grad, torch.zeros(3)) and torch.equal(neg.grad, torch.zeros(3))
    with pytest.raises(ValueError, match="shapes differ"):
        margin_mse(pos, neg, torch.zeros(2))


TEACHER = {
    "q1": {f"p{i}": 1.0 - i / 10 for i in range(8)},
    "q2": {f"d{i}": float(i) for i in range(6)},
    "q3": {"x": 1.0, "y": 0.5},  # too few candidates for a negative from rank 5
}


def test_triples_come_from_the_teachers_top_and_bottom_and_are_seeded() -> None:
    sampling = TripleSampling(per_query=20, positive_top=2, negative_from=5, scale=10.0)
    triples, margins = teacher_triples(TEACHER, sampling, seed=3)
    assert len(triples) == len(margins) == 40 and {qid for qid, _, _ in triples} == {"q1", "q2"}
    for (qid, positive, negative), margin in zip(triples, margins, strict=True):
        ranking = ranking_from_run(TEACHER[qid])
        assert positive in ranking[:2] and negative in ranking[4:]
        assert margin == pytest.approx(10.0 * (TEACHER[qid][positive] - TEACHER[qid][negative])) and margin > 0
    assert teacher_triples(TEACHER, sampling, seed=3) == (triples, margins)
    assert teacher_triples(TEACHER, sampling, seed=4)[0] != triples
    alone = teacher_triples({"q2": TEACHER["q2"]}, sampling, seed=3)[0]
    assert alone == [t for t in triples if t[0] == "q2"], "a query's triples do not depend on the others"
    with pytest.raises(ValueError, match="negative_from"):
        TripleSampling(positive_top=5, negative_from=5)


RANDOM = {"q1": {"r1": 0.2, "r2": 0.95}, "q2": {"r3": -4.0}}


def test_a_fraction_of_negatives_are_random_passages_with_the_teachers_margin() -> None:
    sampling = TripleSampling(per_query=200, positive_top=2, negative_from=5, scale=10.0, random_negatives=0.25)
    triples, margins = teacher_triples(TEACHER, sampling, seed=3, random_passages=RANDOM)
    drawn = [(qid, negative) for qid, _, negative in triples if negative in RANDOM.get(qid, {})]
    assert 0.15 < len(drawn) / len(triples) < 0.35, "about a quarter of the negatives are random passages"
    assert {negative for _, negative in drawn} == {"r1", "r2", "r3"}
    for (qid, positive, negative), margin in zip(triples, margins, strict=True):
        negative_score = RANDOM[qid][negative] if negative in RANDOM[qid] else TEACHER[qid][negative]
        assert margin == pytest.approx(10.0 * (TEACHER[qid][positive] - negative_score))
    assert min(margins) < 0, "a random passage the teacher prefers to the positive gives a negative margin"
    assert teacher_triples(TEACHER, sampling, seed=3, random_passages=RANDOM) == (triples, margins)
    plain = TripleSampling(per_query=200, positive_top=2, negative_from=5, scale=10.0)
    assert teacher_triples(TEACHER, plain, seed=3, random_passages=RANDOM) == teacher_triples(TEACHER, plain, seed=3)
    none_drawn = teacher_triples(TEACHER, sampling, seed=3, random_passages={"q1": {}})[0]
    assert all(negative in TEACHER[qid] for qid, _, negative in none_drawn), "no random passage: a candidate"
    with pytest.raises(ValueError, match="random_passages"):
        teacher_triples(TEACHER, sampling, seed=3)
    with pytest.raises(ValueError, match="random_negatives"):
        TripleSampling(random_negatives=1.5)


def test_listwise_kl_hand_computed_and_blind_to_a_shift_of_a_querys_scores() -> None:
    student, teacher = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, math.log(3.0)]])
    # teacher (1/4, 3/4) against student (1/2, 1/2): 1/4·log(1/2) + 3/4·log(3/2)
    expected = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    assert listwise_kl(student, teacher).item() == pytest.approx(expected)
    scores = torch.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]], requires_grad=True)
    loss = listwise_kl(scores, scores.detach() + torch.tensor([[5.0], [-2.0]]))
    loss.backward()
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    assert torch.allclose(scores.grad, torch.zeros(2, 3), atol=1e-6)
    with pytest.raises(ValueError, match="shapes differ"):
        listwise_kl(scores, torch.zeros(2, 2))


def test_groups_of_one_negative_are_the_triples_and_larger_groups_add_distinct_negatives() -> None:
    sampling = TripleSampling(per_query=50, positive_top=2, negative_from=5, scale=10.0, random_negatives=0.25)
    triples, margins = teacher_triples(TEACHER, sampling, seed=3, random_passages=RANDOM)
    groups, scores = teacher_groups(TEACHER, sampling, seed=3, random_passages=RANDOM)
    assert groups == triples and [high - low for high, low in scores] == pytest.approx(margins)
    wide = TripleSampling(per_query=50, positive_top=2, negative_from=5, scale=10.0, random_negatives=0.25, negatives=3)
    groups, scores = teacher_groups(TEACHER, wide, seed=3, random_passages=RANDOM)
    assert len(groups) == 100 and {group[0] for group in groups} == {"q1", "q2"}
    for qid in ("q1", "q2"):
        first_group, first_triple = (next(row for row in rows if row[0] == qid) for rows in (groups, triples))
        assert first_group[:3] == first_triple, "the same seed: a query's first group begins with its first triple"
    for (qid, positive, *negatives), values in zip(groups, scores, strict=True):
        ranking, drawn = ranking_from_run(TEACHER[qid]), RANDOM[qid]
        assert len(set(negatives)) == 3 and positive in ranking[:2]
        assert all(n in ranking[4:] or n in drawn for n in negatives)
        expected = [TEACHER[qid][positive]] + [drawn[n] if n in drawn else TEACHER[qid][n] for n in negatives]
        assert values == pytest.approx([10.0 * value for value in expected])
    assert teacher_groups(TEACHER, wide, seed=3, random_passages=RANDOM) == (groups, scores)
    with pytest.raises(ValueError, match="fewer than 'negatives'"):
        teacher_groups(TEACHER, TripleSampling(negative_from=5, positive_top=2, negatives=5), seed=3)
    with pytest.raises(ValueError, match="teacher_groups"):
        teacher_triples(TEACHER, wide, seed=3, random_passages=RANDOM)
    with pytest.raises(ValueError, match="'negatives'"):
        TripleSampling(negatives=0)


@pytest.fixture(scope="module")
def teacher_slice(dl19: dict) -> dict:  # noqa: F811
    """BM25 as the teacher of 10 DL19 queries (their BM25 top-20): training triples, and held-out ones.

    The held-out triples are other (positive, negative) pairs of the same queries, never trained on.
    """
    sampling = TripleSampling(per_query=24, positive_top=3, negative_from=8, scale=1.0)
    train_run = {q: dl19["run"][q] for q in dl19["train_qids"]}
    triples, margins = teacher_triples(train_run, sampling, seed=1)
    held_out = sorted(set(teacher_triples(train_run, sampling, seed=2)[0]) - set(triples))
    return {"triples": triples, "margins": margins, "held_out": held_out}


def _distil(dl19: dict, teacher_slice: dict, folder: Path, config, seed: int = 0):  # noqa: F811
    return train(
        make_model(seed), HashTokenizer(), teacher_slice["triples"], dl19["queries"], dl19["texts"],
        dl19["validation"], config, folder, margins=teacher_slice["margins"],
    )  # fmt: skip


def _agreement(model, dl19: dict, triples: list) -> float:  # noqa: F811
    """The share of held-out triples the student orders as the teacher does."""
    tokenizer = HashTokenizer()
    queries = tokenizer.encode([dl19["queries"][q] for q, _, _ in triples], 30)
    positives = tokenizer.encode([dl19["texts"][p] for _, p, _ in triples], 200)
    negatives = tokenizer.encode([dl19["texts"][n] for _, _, n in triples], 200)
    model.eval()
    with torch.no_grad():
        return (model(*queries, *positives) > model(*queries, *negatives)).float().mean().item()


def test_distillation_lowers_the_loss_and_raises_agreement_on_held_out_pairs(
    dl19: dict,  # noqa: F811
    teacher_slice: dict,
    tmp_path: Path,
) -> None:
    before = _agreement(make_model(0), dl19, teacher_slice["held_out"])
    config = small_config(max_steps=60, validate_every=20, batch_size=16)
    result = _distil(dl19, teacher_slice, tmp_path, config)
    history = result.history
    assert history["train_loss"].iloc[-1] < 0.8 * history["train_loss"].iloc[0]
    trained = make_model(0)
    trained.load_state_dict(torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"])
    after = _agreement(trained, dl19, teacher_slice["held_out"])
    assert after > before and after > 0.5, (before, after)


def test_an_interrupted_distillation_resumes_to_identical_weights(
    dl19: dict,  # noqa: F811
    teacher_slice: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = small_config(max_steps=8, validate_every=3)
    reference = _distil(dl19, teacher_slice, tmp_path / "reference", config)
    calls, real = {"n": 0}, pairwise.margin_mse

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(pairwise, "margin_mse", dying)
    with pytest.raises(Killed):
        _distil(dl19, teacher_slice, tmp_path / "killed", config)
    monkeypatch.setattr(pairwise, "margin_mse", real)
    resumed = _distil(dl19, teacher_slice, tmp_path / "killed", config, seed=9)
    assert_same_weights(resumed.model, reference.model)
    with pytest.raises(ValueError, match="margins"):
        _distil(dl19, {**teacher_slice, "margins": teacher_slice["margins"][:-1]}, tmp_path / "bad", config)


def test_listwise_distillation_over_groups_lowers_its_loss_and_raises_agreement(
    dl19: dict,  # noqa: F811
    teacher_slice: dict,
    tmp_path: Path,
) -> None:
    """The same student and teacher as Margin-MSE's, on groups of a positive and three negatives."""
    sampling = TripleSampling(per_query=8, positive_top=3, negative_from=8, scale=1.0, negatives=3)
    train_run = {q: dl19["run"][q] for q in dl19["train_qids"]}
    groups, scores = teacher_groups(train_run, sampling, seed=1)
    before = _agreement(make_model(0), dl19, teacher_slice["held_out"])
    config = small_config(max_steps=60, validate_every=20, batch_size=8)
    result = train(
        make_model(0), HashTokenizer(), groups, dl19["queries"], dl19["texts"], dl19["validation"], config,
        tmp_path / "listwise", teacher_scores=scores,
    )  # fmt: skip
    history = result.history
    assert history["train_loss"].iloc[-1] < 0.8 * history["train_loss"].iloc[0]
    after = _agreement(result.model, dl19, teacher_slice["held_out"])
    assert after > before and after > 0.5, (before, after)
    arguments = (HashTokenizer(), groups, dl19["queries"], dl19["texts"], dl19["validation"], config)
    with pytest.raises(ValueError, match="groups need 'teacher_scores'"):
        train(make_model(0), *arguments, tmp_path / "bad")
    with pytest.raises(ValueError, match=r"teacher_scores\[0\] has 3 values"):
        train(make_model(0), *arguments, tmp_path / "bad", teacher_scores=[row[:3] for row in scores])
    with pytest.raises(ValueError, match="exclude each other"):
        train(make_model(0), *arguments, tmp_path / "bad", teacher_scores=scores, margins=[0.0])
