"""IDCM's student distilled from BERT-cat (``lib.training.idcm``): only the student learns, its window order moves
towards BERT-cat's, and an interrupted run resumes to the same weights. A tiny BERT-cat, real DL19 passages joined
into documents."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from lib import data
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.models.idcm import IDCM, IDCMConfig, lambda_loss_distillation
from lib.training import idcm as training
from lib.training.idcm import train_student
from lib.training.pairwise import TrainingConfig
from tests.models.helpers import tiny_bert_cat
from tests.training.test_pairwise import HashTokenizer, assert_same_weights, without_seconds

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def documents() -> dict:
    """6 DL19 queries, each with 4 documents of 3 BM25 candidates joined; the first 4 train, the last 2 validate."""
    try:
        queries, qrels, run = data.load_queries("dl19"), data.load_qrels("dl19"), data.load_run("dl19", "bm25")
        texts = data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qids = sorted(qrels, key=query_order)[:6]
    docs, candidates, judgments = {}, {}, {}
    for qid in qids:
        ranking = ranking_from_run(run[qid])[:12]
        candidates[qid], judgments[qid] = {}, {}
        for number in range(4):
            pids = ranking[3 * number : 3 * number + 3]
            docid = f"{qid}-{number}"
            docs[docid] = " ".join(texts[pid] for pid in pids)
            candidates[qid][docid] = float(4 - number)
            judgments[qid][docid] = max(qrels[qid].get(pid, 0) for pid in pids)
    examples = [(qid, docid) for qid in qids[:4] for docid in candidates[qid]]
    validation = JudgedSet("dl19", {q: queries[q] for q in qids[4:]}, {q: judgments[q] for q in qids[4:]},
                           {q: candidates[q] for q in qids[4:]})  # fmt: skip
    return {"queries": queries, "documents": docs, "examples": examples, "validation": validation}


def model() -> IDCM:
    idcm = IDCM(tiny_bert_cat(max_position=128), IDCMConfig(chunk_size=16, overlap=2, select_k=2))
    torch.manual_seed(5)
    return idcm


def config(**changes) -> TrainingConfig:
    settings = dict(batch_size=4, max_steps=6, validate_every=3, patience=None, rerank_depth=4, eval_batch_size=4,
                    seed=1, device="cpu", progress=False, max_doc_length=120,
                    learning_rates={"student_lr": 0.01})  # fmt: skip
    return TrainingConfig(**{**settings, **changes})


def train_on(documents: dict, folder: Path, settings: TrainingConfig, start: IDCM | None = None):
    return train_student(start or model(), HashTokenizer(vocab=3000), documents["examples"], documents["queries"],
                         documents["documents"], documents["validation"], settings, folder)  # fmt: skip


def test_only_the_student_learns_and_its_loss_falls(documents: dict, tmp_path: Path) -> None:
    start = model()
    bert_before = {name: tensor.clone() for name, tensor in start.bert_cat.state_dict().items()}
    student_before = {name: tensor.clone() for name, tensor in start.student.state_dict().items()}
    result = train_on(documents, tmp_path, config(max_steps=12, validate_every=6), start)
    assert all(torch.equal(bert_before[name], tensor) for name, tensor in result.model.bert_cat.state_dict().items())
    assert any(not torch.equal(student_before[name], t) for name, t in result.model.student.state_dict().items())
    losses = result.history["train_loss"].tolist()
    assert losses[-1] < losses[0] and list(result.history["step"]) == [6, 12]
    with pytest.raises(KeyError, match="no query or document"):
        train_student(model(), HashTokenizer(vocab=3000), [("x", "y")], {}, {}, documents["validation"], config(),
                      tmp_path / "bad")  # fmt: skip


def test_an_interrupted_run_resumes_to_the_same_weights(
    documents: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = train_on(documents, tmp_path / "reference", config())
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # in step 5, after the checkpoint of step 3
            raise KeyboardInterrupt
        return lambda_loss_distillation(*args, **kwargs)

    monkeypatch.setattr(training, "lambda_loss_distillation", dying)
    with pytest.raises(KeyboardInterrupt):
        train_on(documents, tmp_path / "killed", config())
    monkeypatch.setattr(training, "lambda_loss_distillation", lambda_loss_distillation)
    resumed = train_on(documents, tmp_path / "killed", config())
    assert_same_weights(resumed.model, reference.model)
    pd.testing.assert_frame_equal(without_seconds(resumed.history), without_seconds(reference.history))
