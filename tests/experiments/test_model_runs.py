"""One model trained and tested on chapter 2's protocol (``lib.experiments.model_runs``): margins, runs, reuse."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.run_context import run_context
from lib.core.types import JudgedSet, ranking_from_run, top_of_run
from lib.data import read_run
from lib.evaluation import measures as evaluation
from lib.experiments import distillation_protocol, model_runs, model_setup
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import Vocabulary
from lib.training import pairwise
from tests.experiments.test_distillation_protocol import protocol  # noqa: F401  (fixture)
from tests.experiments.test_distillation_set import corpus, index  # noqa: F401  (the real index slice)

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


def test_the_teacher_scores_its_own_held_out_margins(protocol: distillation_protocol.Protocol) -> None:  # noqa: F811
    """The bi-encoder is the teacher: scored as a student, its margins are the teacher's divided by the scale."""
    teacher = BiEncoder(minilm_folder())
    margins = model_runs.held_out_margins(teacher, load_tokenizer(minilm_folder()), protocol)
    assert len(margins) == len(protocol.held_out)
    candidates = [negative in protocol.distillation.teacher[qid] for qid, _, negative in protocol.held_out]
    assert (margins["teacher"][candidates] >= 0).all(), "a negative from the candidates ranks below the positive"
    assert margins["student"].to_numpy() * 10 == pytest.approx(margins["teacher"].to_numpy(), abs=1e-3)


def test_listwise_groups_extend_the_training_triples_and_never_take_a_held_out_query(
    protocol: distillation_protocol.Protocol,  # noqa: F811
) -> None:
    settings = get_profile("smoke").training.replace(distill_triples_per_query=6, distill_negatives=3)
    groups, scores = model_runs.training_groups(protocol, settings, 42)
    assert all(len(group) == 5 and len(row) == 4 for group, row in zip(groups, scores, strict=True))
    assert {group[0] for group in groups} == {qid for qid, _, _ in protocol.triples}, "the training queries, no other"
    first = {qid: triple for qid, *triple in reversed(protocol.triples)}
    assert all(group[1:3] == tuple(first[group[0]]) for group in groups[::6]), "each query's first group: its triple"
    margin_of = {triple: margin for triple, margin in zip(protocol.triples, protocol.margins, strict=True)}
    for group, (high, low, *_) in zip(groups[::6], scores[::6], strict=True):
        assert high - low == pytest.approx(margin_of[group[:3]], abs=1e-5)


def test_a_run_reuses_another_chapters_finished_checkpoint_and_its_scores_instead_of_computing_them_again(
    protocol: distillation_protocol.Protocol,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    settings = get_profile("smoke").training.replace(candidate_depth=5)
    small = dataclasses.replace(
        protocol,
        tests={name: dataclasses.replace(test, run=top_of_run(test.run, 5)) for name, test in protocol.tests.items()},
    )
    words = Vocabulary.build(list(protocol.texts.values())[:200])
    representations = model_setup.Representations(words, torch.randn(len(words), 8), Path(), None)
    first = model_runs.run_model(
        "knrm", small, representations, settings, run_context("02_training", "smoke", 42, "cpu"), progress=False
    )

    def no_training(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a finished checkpoint of the same run must not be trained again")

    def no_scoring(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the same weights on the same candidates must not be scored again")

    monkeypatch.setattr(pairwise, "margin_mse", no_training)
    monkeypatch.setattr(pairwise, "hinge_loss", no_training)
    monkeypatch.setattr(model_runs, "score_candidates", no_scoring)
    again = model_runs.run_model(
        "knrm", small, representations, settings, run_context("07_trec_runs", "smoke", 42, "cpu"), progress=False,
        variant=model_runs.RunVariant("init42", reuse_from="02_training"),
    )  # fmt: skip
    assert (model_runs.checkpoint_folder(get_profile("smoke"), "07_trec_runs", "knrm-init42") / "best.pt").is_file()
    for name in first:
        assert again[name].best_step == first[name].best_step
        assert again[name].metrics_at_full_depth == first[name].metrics_at_full_depth
        assert again[name].tuned_depth == first[name].tuned_depth and again[name].weight == first[name].weight
    assert len(list((tmp_path / "artifacts" / "smoke" / "score-cache").glob("*.trec"))) == 1 + len(first)


def test_a_zero_shot_model_is_scored_untrained_and_both_runs_are_written(
    protocol: distillation_protocol.Protocol,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    # a measure neither profile uses, so that a hard-coded nDCG@10 or MRR@10 would show
    settings = get_profile("smoke").training.replace(candidate_depth=5, validation_metric="MAP")
    tuned_on = []

    def spying(original: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            tuned_on.append(kwargs["metric"])
            return original(*args, **kwargs)

        return spy

    monkeypatch.setattr(model_runs, "tune_depth", spying(model_runs.tune_depth))
    monkeypatch.setattr(model_runs, "tune_interpolation", spying(model_runs.tune_interpolation))
    small = dataclasses.replace(
        protocol,
        validation=JudgedSet(
            protocol.validation.name,
            {q: protocol.validation.queries[q] for q in list(protocol.validation.queries)[:2]},
            protocol.validation.qrels,
            {q: top_of_run(protocol.validation.run, 5)[q] for q in list(protocol.validation.queries)[:2]},
        ),
        tests={
            name: dataclasses.replace(
                test,
                queries=dict(list(test.queries.items())[:2]),
                run=top_of_run(test.run, 5, list(test.queries)[:2]),
            )
            for name, test in protocol.tests.items()
        },
    )
    representations = model_setup.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.zeros(2, 1), minilm_folder(), load_tokenizer(minilm_folder())
    )
    results = model_runs.run_model(
        "bi-encoder", small, representations, settings, run_context("02_training", "smoke", 42, "cpu")
    )
    assert sorted(results) == ["dl19", "dl20"]
    assert tuned_on == ["MAP", "MAP"], "the depth and the weight maximise the profile's validation measure"
    for name, result in results.items():
        assert result.training is None and result.best_step == 0 and result.history.empty
        assert result.history.columns[3:].tolist() == ["MAP", "MRR@10", "nDCG@10"]
        assert result.query_set == name and result.row()["set"] == name
        tuned = read_run(paths.run_path("smoke", name, "bi-encoder"))
        everything = read_run(paths.run_path("smoke", name, "bi-encoder-all"))
        test = small.tests[name]
        fused = read_run(paths.run_path("smoke", name, "bi-encoder-with-bm25"))
        assert set(everything) == set(test.queries) == set(tuned) == set(fused)
        assert 0.0 <= result.weight <= 1.0 and result.row()["λ"] == result.weight
        assert result.metrics_interpolated["nDCG@10"] == pytest.approx(
            evaluation.evaluate(fused, test.qrels)["nDCG@10"]
        )
        assert all(len(everything[q]) == len(test.run[q]) for q in everything)
        scores = read_run(model_runs.scores_path(get_profile("smoke"), "02_training", name, "bi-encoder"))
        for qid in everything:  # the -all run is the candidates in the model's order
            assert ranking_from_run(everything[qid]) == ranking_from_run(scores[qid])
        assert result.metrics_at_full_depth["nDCG@10"] == pytest.approx(
            evaluation.evaluate(everything, test.qrels)["nDCG@10"]
        )
