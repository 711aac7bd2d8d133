"""The duo trainer (``lib.training.duo``): the loss, learning the teacher's order, resuming to the same weights.

The duo model is a tiny stand-in with DuoBert's interface (a bag of word embeddings per side); the data is a real
slice of TREC DL 2019, the margins its judgments' grade differences.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from lib import data
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.training import duo
from lib.training.duo import duo_margin_loss, train_duo
from lib.training.pairwise import TrainingConfig
from tests.training.test_pairwise import HashTokenizer, assert_same_weights, without_seconds

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class BagDuo(nn.Module):
    """``z = w · (bag(a) − bag(b)) ⊙ bag(q)``: antisymmetric in the passages, a model in a few lines."""

    def __init__(self, vocab: int = 4096, dim: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.weight = nn.Linear(dim, 1)

    def _bag(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return (self.embedding(ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)

    def forward(self, query_ids, query_mask, a_ids, a_mask, b_ids, b_mask) -> torch.Tensor:
        query = self._bag(query_ids, query_mask)
        return self.weight(query * (self._bag(a_ids, a_mask) - self._bag(b_ids, b_mask))).squeeze(-1)

    def optimizer_groups(self, bert_lr: float = 0.05, head_lr: float = 0.05) -> list[dict]:
        return [{"params": list(self.parameters()), "lr": bert_lr, "name": "bert"}]


@pytest.fixture(scope="module")
def slice_() -> dict:
    """Triples of 8 DL19 queries (a judged passage above a lower-graded one, margin = the grade difference) and
    4 other queries' BM25 top 6 as the validation set's mono ranking."""
    try:
        queries, qrels, run = data.load_queries("dl19"), data.load_qrels("dl19"), data.load_run("dl19", "bm25")
        texts = data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qids = sorted(qrels, key=query_order)
    triples, margins = [], []
    for qid in qids[:8]:
        graded = sorted(((grade, pid) for pid, grade in qrels[qid].items() if pid in texts), reverse=True)
        for (high, better), (low, worse) in zip(graded[:6], graded[-6:], strict=True):
            if high > low:
                triples.append((qid, better, worse))
                margins.append(float(high - low))
    validation_qids = qids[8:12]
    top = {qid: {pid: run[qid][pid] for pid in ranking_from_run(run[qid])[:6]} for qid in validation_qids}
    validation = JudgedSet(
        "dl19", {q: queries[q] for q in validation_qids}, {q: qrels[q] for q in validation_qids}, top
    )
    return {"queries": queries, "texts": texts, "triples": triples, "margins": margins, "validation": validation}


def config(**changes) -> TrainingConfig:
    settings = dict(batch_size=4, max_steps=8, validate_every=3, patience=None, rerank_depth=4, eval_batch_size=16,
                    seed=3, device="cpu", progress=False)  # fmt: skip
    return TrainingConfig(**{**settings, **changes})


def train_on(slice_: dict, folder: Path, settings: TrainingConfig, seed: int = 0):
    torch.manual_seed(seed)
    return train_duo(
        BagDuo(), HashTokenizer(), slice_["triples"], slice_["margins"], slice_["queries"], slice_["texts"],
        slice_["validation"], settings, folder,
    )  # fmt: skip


def test_the_loss_wants_the_margin_one_way_and_its_negative_the_other() -> None:
    margins = torch.tensor([2.0, 0.5])
    assert duo_margin_loss(margins, -margins, margins).item() == 0.0
    assert duo_margin_loss(torch.zeros(2), torch.zeros(2), margins).item() == pytest.approx((4 + 0.25) / 2)
    with pytest.raises(ValueError, match="shapes differ"):
        duo_margin_loss(torch.zeros(2), torch.zeros(3), margins)


def test_training_learns_the_order_and_validates_with_the_duo_reranking(slice_: dict, tmp_path: Path) -> None:
    assert len(slice_["triples"]) >= 16
    result = train_on(slice_, tmp_path, config(max_steps=30, validate_every=10))
    losses = result.history["train_loss"].tolist()
    assert losses[-1] < losses[0]
    assert list(result.history["step"]) == [10, 20, 30] and "nDCG@10" in result.history
    assert (tmp_path / "best.pt").is_file() and (tmp_path / "history.csv").is_file()
    with pytest.raises(ValueError, match="one margin each"):
        train_duo(BagDuo(), HashTokenizer(), slice_["triples"], [], {}, {}, slice_["validation"], config(), tmp_path)


def test_an_interrupted_run_resumes_to_the_same_weights(
    slice_: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = train_on(slice_, tmp_path / "reference", config())
    real, calls = duo.duo_margin_loss, {"n": 0}

    def dying(*args):
        calls["n"] += 1
        if calls["n"] == 5:  # killed in step 5, after the checkpoint of step 3
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(duo, "duo_margin_loss", dying)
    with pytest.raises(KeyboardInterrupt):
        train_on(slice_, tmp_path / "killed", config())
    monkeypatch.setattr(duo, "duo_margin_loss", real)
    resumed = train_on(slice_, tmp_path / "killed", config(), seed=9)
    assert_same_weights(resumed.model, reference.model)
    pd.testing.assert_frame_equal(without_seconds(resumed.history), without_seconds(reference.history))
