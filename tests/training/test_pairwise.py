"""Training: pairs from graded labels, the hinge loss, the loop, early stopping, checkpoints and resumption.

The model and tokenizer are tiny stand-ins (hashed words, a bag of embeddings with a dot product
and dropout) with the interfaces of ``lib.models``; the data is a real slice of TREC DL 2019.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from lib import data
from lib.core.device import amp_enabled, autocast, resolve_device
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.training import pairwise as training
from lib.training.pairwise import (
    TrainingConfig,
    hinge_loss,
    train,
    training_pairs,
)

# --- stand-ins with the model and tokenizer interfaces -------------------------------------------


class HashTokenizer:
    """Lower-cased words hashed (crc32) into ``vocab - 1`` buckets; id 0 is padding."""

    def __init__(self, vocab: int = 4096) -> None:
        self.vocab = vocab

    def encode(self, texts: Sequence[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [
            [1 + zlib.crc32(w.encode()) % (self.vocab - 1) for w in re.findall(r"\w+", t.lower())][:max_length]
            for t in texts
        ]
        width = max(1, max(len(r) for r in rows))
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return ids, ids != 0


class BagModel(nn.Module):
    """Mean of (dropped-out) word embeddings, projected, dot product: a model in a few lines."""

    def __init__(self, vocab: int = 4096, dim: int = 16, dropout: float = 0.1) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.projection = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)

    def _encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        vectors = self.dropout(self.embedding(ids)) * mask.unsqueeze(-1)
        return vectors.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)

    def forward(self, query_ids, query_mask, doc_ids, doc_mask) -> torch.Tensor:
        query = self.projection(self._encode(query_ids, query_mask))
        return (query * self._encode(doc_ids, doc_mask)).sum(-1)

    def optimizer_groups(self, embedding_lr: float = 1e-4, other_lr: float = 1e-3) -> list[dict]:
        return [
            {"params": list(self.embedding.parameters()), "lr": embedding_lr, "name": "embeddings"},
            {"params": list(self.projection.parameters()), "lr": other_lr, "name": "other"},
        ]


def make_model(seed: int = 0) -> BagModel:
    torch.manual_seed(seed)
    return BagModel()


# --- a real slice of TREC DL 2019 ------------------------------------------------------------------

DEPTH = 20  # candidates per query in this slice


@pytest.fixture(scope="module")
def dl19() -> dict:
    """DL19 queries, judgments, the BM25 top-20 and the v1 passages; 10 training and 4 validation queries."""
    try:
        queries, qrels, run = data.load_queries("dl19"), data.load_qrels("dl19"), data.load_run("dl19", "bm25")
        texts = data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qids = sorted(qrels, key=query_order)
    top = {qid: {pid: run[qid][pid] for pid in ranking_from_run(run[qid])[:DEPTH]} for qid in qids}
    train_qids, valid_qids = qids[:10], qids[10:14]
    return {
        "queries": queries,
        "qrels": qrels,
        "run": top,
        "texts": texts,
        "train_qids": train_qids,
        "validation": JudgedSet(
            "dl19",
            {q: queries[q] for q in valid_qids},
            {q: qrels[q] for q in valid_qids},
            {q: top[q] for q in valid_qids},
        ),
    }


@pytest.fixture(scope="module")
def pairs(dl19: dict) -> list:
    qrels = {q: dl19["qrels"][q] for q in dl19["train_qids"]}
    return training_pairs(qrels, dl19["run"], dl19["texts"], seed=1, max_pairs_per_query=60)


def small_config(**changes) -> TrainingConfig:
    settings = dict(
        batch_size=16,
        max_steps=12,
        validate_every=3,
        patience=None,
        rerank_depth=10,
        eval_batch_size=32,
        seed=7,
        device="cpu",
        learning_rates={"embedding_lr": 0.05, "other_lr": 0.01},
        progress=False,
    )
    settings.update(changes)
    return TrainingConfig(**settings)


def run_training(dl19: dict, pairs: list, folder: Path, config: TrainingConfig, seed: int = 0):
    return train(
        make_model(seed),
        HashTokenizer(),
        pairs,
        dl19["queries"],
        dl19["texts"],
        dl19["validation"],
        config,
        folder,
    )


def assert_same_weights(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


def without_seconds(history: pd.DataFrame) -> pd.DataFrame:
    return history.drop(columns="seconds")


# --- training pairs ----------------------------------------------------------------------------------

QRELS = {"q1": {"a": 3, "b": 1, "c": 0, "d": 2, "nt": 3}, "q2": {"x": 1, "y": 1}, "q3": {"z": 2}}
CANDIDATES = {"q1": {"a": 9.0, "u": 8.0, "c": 7.0, "v": 6.0, "nu": 5.0}, "q2": ["x", "w"], "q4": ["k"]}
TEXTS = {p: p for p in "abcduvxywzk"}  # "nt" (judged) and "nu" (unjudged) have no text


def test_training_pairs_hand_computed() -> None:
    pairs = training_pairs(QRELS, CANDIDATES, TEXTS, seed=0)
    # q1 grades: a 3, d 2, b 1, c 0 and the unjudged candidates u, v as 0; nt and nu have no text.
    # q2: x and y tie at 1 and both beat the unjudged candidate w. q3: one passage, no pair. q4: unjudged.
    expected = {
        ("q1", "a", "d"), ("q1", "a", "b"), ("q1", "a", "c"), ("q1", "a", "u"), ("q1", "a", "v"),
        ("q1", "d", "b"), ("q1", "d", "c"), ("q1", "d", "u"), ("q1", "d", "v"),
        ("q1", "b", "c"), ("q1", "b", "u"), ("q1", "b", "v"),
        ("q2", "x", "w"), ("q2", "y", "w"),
    }  # fmt: skip
    assert len(pairs) == len(set(pairs)) == len(expected)
    assert set(pairs) == expected


def test_training_pairs_on_real_data(dl19: dict) -> None:
    qrels = {q: dl19["qrels"][q] for q in dl19["train_qids"]}
    pairs = training_pairs(qrels, dl19["run"], dl19["texts"], seed=3)
    assert pairs
    unjudged_negatives = 0
    for qid, better, worse in pairs:
        assert better in dl19["texts"] and worse in dl19["texts"]
        grade_better = qrels[qid].get(better, 0)
        grade_worse = qrels[qid].get(worse, 0)
        assert grade_better > grade_worse
        assert better in qrels[qid]  # an unjudged passage (grade 0) never wins a pair
        if worse not in qrels[qid]:
            assert worse in dl19["run"][qid]  # an unjudged negative comes from the first stage
            unjudged_negatives += 1
    assert unjudged_negatives > 0
    assert pairs == training_pairs(qrels, dl19["run"], dl19["texts"], seed=3)  # deterministic


def test_training_pairs_cap_is_a_seeded_sample(dl19: dict) -> None:
    qrels = {q: dl19["qrels"][q] for q in dl19["train_qids"]}
    full = training_pairs(qrels, dl19["run"], dl19["texts"], seed=0)
    capped = training_pairs(qrels, dl19["run"], dl19["texts"], seed=5, max_pairs_per_query=25)
    per_query_full = pd.Series([q for q, _, _ in full]).value_counts()
    per_query = pd.Series([q for q, _, _ in capped]).value_counts()
    assert (per_query <= 25).all()
    assert per_query.sort_index().equals(per_query_full.clip(upper=25).sort_index())
    assert set(capped) <= set(full)
    assert capped == training_pairs(qrels, dl19["run"], dl19["texts"], seed=5, max_pairs_per_query=25)
    assert capped != training_pairs(qrels, dl19["run"], dl19["texts"], seed=6, max_pairs_per_query=25)
    with pytest.raises(ValueError, match="'max_pairs_per_query'"):
        training_pairs(qrels, dl19["run"], dl19["texts"], seed=5, max_pairs_per_query=0)


# --- the hinge loss ------------------------------------------------------------------------------------


def test_hinge_loss_hand_computed() -> None:
    pos = torch.tensor([2.0, 0.5, 0.0, 1.0])
    neg = torch.tensor([0.0, 0.0, 1.0, 0.25])
    # max(0, 1 - 2 + 0) = 0, 1 - 0.5 = 0.5, 1 - 0 + 1 = 2, 1 - 1 + 0.25 = 0.25 -> mean 2.75 / 4
    assert hinge_loss(pos, neg).item() == pytest.approx(2.75 / 4)
    # margin 0.5: 0, 0, 1.5, 0 -> 1.5 / 4
    assert hinge_loss(pos, neg, margin=0.5).item() == pytest.approx(1.5 / 4)
    pos.requires_grad_(True)
    hinge_loss(pos, neg).backward()
    assert pos.grad.tolist() == [0.0, -0.25, -0.25, -0.25]


# --- device and mixed precision -------------------------------------------------------------------------


def test_resolve_device() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device().type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="'device'"):
        resolve_device("gpu-please")
    with pytest.raises(ValueError, match="'device'"):
        resolve_device(3)  # type: ignore[arg-type]
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'device'.*CUDA is not available"):
            resolve_device("cuda")


def test_mixed_precision_policy() -> None:
    cpu = torch.device("cpu")
    assert not amp_enabled(cpu, "auto") and not amp_enabled(cpu, False) and amp_enabled(cpu, True)
    with autocast(cpu, "auto"):
        assert not torch.is_autocast_enabled("cpu")
    with autocast(cpu, True):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="'amp'"):
        amp_enabled(cpu, "yes")
    if torch.cuda.is_available():
        assert amp_enabled(torch.device("cuda"), "auto") == torch.cuda.is_bf16_supported()


def test_config_checks_its_values() -> None:
    assert TrainingConfig().batch_size == 64 and TrainingConfig().metric == "MRR@10"
    assert TrainingConfig().max_query_length == 30 and TrainingConfig().max_doc_length == 200
    with pytest.raises(ValueError, match="'batch_size'"):
        TrainingConfig(batch_size=0)
    with pytest.raises(ValueError, match="'metric'"):
        TrainingConfig(metric="MRR@100")
    with pytest.raises(ValueError, match="'patience'"):
        TrainingConfig(patience=0)
    with pytest.raises(ValueError, match="'amp'"):
        TrainingConfig(amp="fp16")
    assert TrainingConfig(metric="nDCG@10").measures == ["nDCG@10", "MRR@10"]
    with pytest.raises(ValueError, match="'warmup_steps'"):
        TrainingConfig(warmup_steps=-1)


def test_warmup_decay_rises_then_falls_to_zero() -> None:
    weight = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([{"params": [weight], "lr": 1e-3}])
    schedule = training.warmup_decay(optimizer, warmup_steps=4, max_steps=10)
    rates = []
    for _ in range(10):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    # step s: min(1, (s + 1) / 4) · (10 − s) / 10
    expected = [1e-3 * min(1.0, (s + 1) / 4) * (10 - s) / 10 for s in range(10)]
    assert rates == pytest.approx(expected)
    assert rates[3] == pytest.approx(7e-4) and max(rates) == rates[3] and rates[-1] == pytest.approx(1e-4)
    with pytest.raises(ValueError, match="'warmup_steps'"):
        training.warmup_decay(optimizer, warmup_steps=0, max_steps=10)


# --- batches of similar lengths -------------------------------------------------------------------------


def test_bucketed_batches_regroup_the_same_pairs_by_length(dl19: dict, pairs: list) -> None:
    lengths = training.pair_lengths(pairs, dl19["texts"])
    assert len(lengths) == len(pairs)
    assert lengths[0] == max(len(dl19["texts"][pairs[0][1]]), len(dl19["texts"][pairs[0][2]]))
    plain = training._PairOrder(len(pairs), seed=3)
    size, bucket = 8, 4
    order = training._BucketedOrder(training._PairOrder(len(pairs), seed=3), lengths, size, bucket, seed=3)
    unbucketed = training._BucketedOrder(training._PairOrder(len(pairs), seed=3), lengths, size, 1, seed=3)
    assert [unbucketed.batch(s) for s in range(5)] == [plain.batch(s * size, size) for s in range(5)]
    for group in range(3):
        batches = [order.batch(group * bucket + k) for k in range(bucket)]
        assert all(len(batch) == size for batch in batches)
        # the group holds exactly the plain stream's pairs of those steps
        stream = plain.batch(group * size * bucket, size * bucket)
        assert sorted(i for batch in batches for i in batch) == sorted(stream)
        # its batches are consecutive slices of the pairs sorted by length
        spans = sorted((min(lengths[batch]), max(lengths[batch])) for batch in batches)
        assert all(spans[k][1] <= spans[k + 1][0] for k in range(bucket - 1))
    # the step alone fixes the batch (a fresh order, steps taken in another order)
    again = training._BucketedOrder(training._PairOrder(len(pairs), seed=3), lengths, size, bucket, seed=3)
    assert [again.batch(s) for s in (9, 2, 5)] == [order.batch(s) for s in (9, 2, 5)]
    # less padding: the summed longest passage per batch falls over 40 steps
    padded = sum(max(lengths[order.batch(s)]) for s in range(40))
    assert padded < sum(max(lengths[plain.batch(s * size, size)]) for s in range(40))


def test_config_refuses_a_bucket_of_no_batches() -> None:
    with pytest.raises(ValueError, match="'bucket_batches'"):
        TrainingConfig(bucket_batches=0)


# --- the training loop ------------------------------------------------------------------------------------


def test_training_lowers_the_loss(dl19: dict, pairs: list, tmp_path: Path) -> None:
    config = small_config(max_steps=30, validate_every=10)
    result = run_training(dl19, pairs, tmp_path, config)
    history = result.history
    assert list(history["step"]) == [10, 20, 30]
    assert set(history.columns) >= {"step", "epoch", "train_loss", "MRR@10", "nDCG@10", "best", "seconds"}
    assert history["train_loss"].iloc[-1] < 0.8 * history["train_loss"].iloc[0]
    assert result.steps == 30 and not result.stopped_early
    assert result.best_step in set(history["step"])
    assert result.best_metric == history["MRR@10"].max()
    assert not result.model.training
    # the best weights: in best.pt and in the returned model
    assert_same_weights(result.model, _loaded(result.best_path))
    saved = pd.read_csv(tmp_path / "history.csv")
    assert list(saved["step"]) == [10, 20, 30]


def _loaded(path: Path) -> BagModel:
    model = BagModel()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model


class Killed(Exception):
    """Stands in for the process being killed."""


@pytest.mark.parametrize(("bucket_batches", "warmup_steps"), [(1, 0), (4, 0), (1, 4)])
def test_an_interrupted_run_resumes_to_the_same_result(
    dl19: dict, pairs: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket_batches: int, warmup_steps: int
) -> None:
    # validations at 3, 6, 9 and 11; with buckets the kill falls inside a group of 4 batches, with a
    # warm-up the schedule resumes mid-decay
    config = small_config(max_steps=11, validate_every=3, bucket_batches=bucket_batches, warmup_steps=warmup_steps)
    reference = run_training(dl19, pairs, tmp_path / "reference", config)

    calls = {"n": 0}
    real_loss = training.hinge_loss

    def dying_loss(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 8:  # killed during step 8, after the checkpoint of step 6
            raise Killed
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(training, "hinge_loss", dying_loss)
    with pytest.raises(Killed):
        run_training(dl19, pairs, tmp_path / "killed", config)
    checkpoint = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] == 6 and len(checkpoint["losses"]) == 6
    assert not checkpoint["finished"]
    assert {"model", "optimizer", "rng", "extra"} <= set(checkpoint)
    assert {"history", "best_model", "best_step", "bad_validations"} <= set(checkpoint["extra"])
    assert set(checkpoint["rng"]) == {"python", "numpy", "torch", "cuda"}
    assert [row["step"] for row in checkpoint["extra"]["history"]] == [3, 6]

    monkeypatch.setattr(training, "hinge_loss", real_loss)
    torch.manual_seed(12345)  # a new process: other global random state, a differently initialised model
    resumed = run_training(dl19, pairs, tmp_path / "killed", config, seed=99)
    assert_same_weights(resumed.model, reference.model)
    pd.testing.assert_frame_equal(without_seconds(resumed.history), without_seconds(reference.history))
    assert (resumed.best_step, resumed.best_metric) == (reference.best_step, reference.best_metric)
    last = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)
    final = torch.load(tmp_path / "reference" / "checkpoint.pt", weights_only=True)
    for name, tensor in final["model"].items():  # the last weights too, not only the best ones
        assert torch.equal(last["model"][name], tensor), name

    # a finished run returns from its checkpoint without training
    def no_training(*args, **kwargs):
        raise AssertionError("a finished run trained again")

    monkeypatch.setattr(training, "hinge_loss", no_training)
    again = run_training(dl19, pairs, tmp_path / "reference", config, seed=5)
    assert_same_weights(again.model, reference.model)
    pd.testing.assert_frame_equal(again.history, reference.history)


def test_a_checkpoint_of_other_arguments_is_refused(dl19: dict, pairs: list, tmp_path: Path) -> None:
    run_training(dl19, pairs, tmp_path, small_config(max_steps=3))
    with pytest.raises(ValueError, match="other arguments.*config.batch_size"):
        run_training(dl19, pairs, tmp_path, small_config(max_steps=3, batch_size=8))
    with pytest.raises(ValueError, match="pairs"):
        run_training(dl19, pairs[:-1], tmp_path, small_config(max_steps=3))
    run_training(dl19, pairs, tmp_path, small_config(max_steps=3, eval_batch_size=5))  # allowed to change


def test_a_checkpoint_from_other_starting_weights_is_refused(dl19: dict, pairs: list, tmp_path: Path) -> None:
    run_training(dl19, pairs, tmp_path, small_config(max_steps=3, start="bert-cat abc, split 5"))
    run_training(dl19, pairs, tmp_path, small_config(max_steps=3, start="bert-cat abc, split 5"))  # same: resumed
    with pytest.raises(ValueError, match="other arguments.*config.start"):
        run_training(dl19, pairs, tmp_path, small_config(max_steps=3, start="bert-cat abc, split 4"))
    plain = tmp_path / "plain"
    run_training(dl19, pairs, plain, small_config(max_steps=3))
    saved = torch.load(plain / "checkpoint.pt", weights_only=True)
    # without a start the fingerprint has no such key: checkpoints written before the field resume
    assert "batch_size" in saved["fingerprint"]["config"] and "start" not in saved["fingerprint"]["config"]


def test_with_mismatch_retrain_a_checkpoint_of_other_pairs_is_replaced_with_a_warning(
    dl19: dict, pairs: list, tmp_path: Path
) -> None:
    run_training(dl19, pairs, tmp_path, small_config(max_steps=3))
    with pytest.warns(UserWarning, match="other arguments.*pairs.*training again"):
        replaced = run_training(dl19, pairs[:-1], tmp_path, small_config(max_steps=3, mismatch="retrain"))
    fresh = run_training(dl19, pairs[:-1], tmp_path / "fresh", small_config(max_steps=3))
    assert_same_weights(replaced.model, fresh.model)


def test_early_stopping_restores_the_best_weights(
    dl19: dict, pairs: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted = iter([0.30, 0.50, 0.40, 0.50, 0.90, 0.95])  # best at the 2nd validation; 0.50 again is no gain

    def fake_evaluate(run, qrels, measures):
        value = next(scripted)
        return {name: value for name in measures}

    monkeypatch.setattr(training, "evaluate", fake_evaluate)
    config = small_config(max_steps=30, validate_every=2, patience=2)
    result = run_training(dl19, pairs, tmp_path / "early", config)
    assert list(result.history["step"]) == [2, 4, 6, 8]  # two validations without improvement after step 4
    assert list(result.history["best"]) == [True, True, False, False]
    assert result.stopped_early and result.steps == 8
    assert (result.best_step, result.best_metric) == (4, 0.50)

    # the weights after step 4 of the same run, as a run of 4 steps leaves them
    monkeypatch.undo()
    run_training(dl19, pairs, tmp_path / "four", small_config(max_steps=4, validate_every=2))
    after_four = BagModel()
    after_four.load_state_dict(torch.load(tmp_path / "four" / "checkpoint.pt", weights_only=True)["model"])
    assert_same_weights(result.model, after_four)
    assert_same_weights(_loaded(result.best_path), after_four)


def test_stop_at_trains_the_first_steps_of_the_whole_schedule(
    dl19: dict, pairs: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a warm-up and decay to step 12: stopping at 6 keeps the rates of the 12-step run, not those of a 6-step one
    whole = small_config(max_steps=12, validate_every=3, warmup_steps=2)
    run_training(dl19, pairs, tmp_path / "whole", whole)
    cut = run_training(dl19, pairs, tmp_path / "cut", dataclasses.replace(whole, stop_at=6))
    assert cut.steps == 6 and not cut.stopped_early and list(cut.history["step"]) == [3, 6]
    whole_history = pd.read_csv(tmp_path / "whole" / "history.csv")
    assert list(cut.history["MRR@10"]) == list(whole_history["MRR@10"][:2])
    checkpoint = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)
    assert checkpoint["finished"] and checkpoint["fingerprint"]["config"]["stop_at"] == 6
    short = run_training(dl19, pairs, tmp_path / "short", small_config(max_steps=6, validate_every=3, warmup_steps=2))
    assert list(short.history["train_loss"]) != list(cut.history["train_loss"])  # another schedule, other updates

    def no_training(*args, **kwargs):
        raise AssertionError("a run finished at stop_at trained again")

    monkeypatch.setattr(training, "hinge_loss", no_training)
    again = run_training(dl19, pairs, tmp_path / "cut", dataclasses.replace(whole, stop_at=6))
    assert_same_weights(again.model, cut.model)
    with pytest.raises(ValueError, match="'stop_at'"):
        small_config(max_steps=12, validate_every=3, stop_at=5)  # not a validation step
    with pytest.raises(ValueError, match="'stop_at'"):
        small_config(max_steps=12, validate_every=3, stop_at=15)
    saved = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=True)
    assert "stop_at" not in saved["fingerprint"]["config"]  # unset: checkpoints written before the field resume


def test_training_checks_its_inputs(dl19: dict, pairs: list, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'pairs'"):
        run_training(dl19, [], tmp_path, small_config())
    with pytest.raises(KeyError, match="'no-such-passage'"):
        run_training(dl19, [*pairs, (pairs[0][0], pairs[0][1], "no-such-passage")], tmp_path, small_config())


class RecordingBagModel(BagModel):
    """A bag model that records a scripted share of removed terms at each validation, as TK-Sparse does."""

    def __init__(self, removed: Sequence[float]) -> None:
        torch.manual_seed(0)
        super().__init__()
        self.removed, self.seen = iter(removed), []

    def validation_records(self, tokenizer, texts, max_length) -> dict:
        self.seen.append(len(texts))
        removed = next(self.removed)
        return {"removed": removed, "eligible": removed < 0.99}


def test_a_checkpoint_the_model_calls_ineligible_is_never_chosen(
    dl19: dict, pairs: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted = iter([0.30, 0.90, 0.40, 0.35])  # the best value comes with every term removed

    def fake_evaluate(run, qrels, measures):
        value = next(scripted)
        return {name: value for name in measures}

    monkeypatch.setattr(training, "evaluate", fake_evaluate)
    model = RecordingBagModel([0.2, 1.0, 0.5, 0.6])
    config = small_config(max_steps=8, validate_every=2)
    result = train(model, HashTokenizer(), pairs, dl19["queries"], dl19["texts"], dl19["validation"], config,
                   tmp_path / "records")  # fmt: skip
    assert list(result.history["removed"]) == [0.2, 1.0, 0.5, 0.6]
    assert list(result.history["eligible"]) == [True, False, True, True]
    assert list(result.history["best"]) == [True, False, True, False]
    assert (result.best_step, result.best_metric) == (6, 0.40)
    run = dl19["validation"].run
    passages = {pid for qid in dl19["validation"].queries for pid in ranking_from_run(run[qid])[:10]}
    assert model.seen == [len(passages)] * 4  # the validation candidates' passages at the re-ranking depth


def test_validations_before_a_first_eligible_checkpoint_do_not_count_against_patience(
    dl19: dict, pairs: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate still ramping in (ineligible) loses nothing to wait for; after an eligible best, an ineligible
    validation counts as one without improvement."""
    scripted = iter([0.50, 0.50, 0.30, 0.20, 0.20, 0.20])

    def fake_evaluate(run, qrels, measures):
        value = next(scripted)
        return {name: value for name in measures}

    monkeypatch.setattr(training, "evaluate", fake_evaluate)
    model = RecordingBagModel([1.0, 1.0, 0.3, 1.0, 0.3, 0.3])
    result = train(model, HashTokenizer(), pairs, dl19["queries"], dl19["texts"], dl19["validation"],
                   small_config(max_steps=12, validate_every=2, patience=2), tmp_path / "patience")  # fmt: skip
    assert list(result.history["eligible"]) == [False, False, True, False, True]
    assert list(result.history["step"]) == [2, 4, 6, 8, 10], "two ineligible validations first, then patience 2"
    assert (result.best_step, result.best_metric) == (6, 0.30)


def test_a_run_without_an_eligible_checkpoint_is_an_error_naming_the_folder(
    dl19: dict, pairs: list, tmp_path: Path
) -> None:
    model = RecordingBagModel([1.0, 0.995])
    with pytest.raises(ValueError, match=r"none of the 2 validations was eligible .*100% at 2, 100% at 4"):
        train(model, HashTokenizer(), pairs, dl19["queries"], dl19["texts"], dl19["validation"],
              small_config(max_steps=4, validate_every=2), tmp_path / "none")  # fmt: skip
