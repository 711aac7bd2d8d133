"""PreTTR's split swept over one set of weights: scores per split as the model gives them, the table, the choice."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from lib.core.types import JudgedSet
from lib.evaluation import split_sweep
from lib.evaluation.measures import evaluate
from lib.models.prettr import PreTTR
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.scoring import ScoringOptions, rerank, score_candidates
from tests.models.test_split_models import tiny_bert

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = {
    "p1": "the kernel pooling of tk counts soft matches",
    "p2": "bert reads query and passage together in every layer",
    "p3": "a passage about something else entirely, longer than the others by a few words",
    "p4": "tk contextualises query and passage separately",
}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> WordPieceTokenizer:
    """A WordPiece vocabulary of BERT's special tokens and the words of these texts."""
    words = sorted(
        {word for text in [*TEXTS.values(), "how does pool kernels"] for word in text.replace(",", "").split()}
    )
    special = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(special + words) + "\n", encoding="utf-8")
    return WordPieceTokenizer.from_vocab(path)


def judged(name: str) -> JudgedSet:
    return JudgedSet(
        name=name,
        queries={"q1": "how does tk pool kernels", "q2": "bert reads query and passage"},
        qrels={"q1": {"p1": 2, "p4": 1}, "q2": {"p2": 3}},
        run={"q1": {"p3": 4.0, "p1": 3.0, "p4": 2.0, "p2": 1.0}, "q2": {"p1": 3.0, "p3": 2.0, "p2": 1.0}},
    )


def test_split_scores_equal_the_model_at_each_split(tokenizer: WordPieceTokenizer) -> None:
    model = PreTTR(tiny_bert(), split=0)
    queries, run = judged("dl19").queries, judged("dl19").run
    candidates = {qid: list(pids) for qid, pids in run.items()}
    swept = split_sweep.split_scores(model, tokenizer, queries, TEXTS, candidates, [0, 2, 3], batch_size=3)
    for split in (0, 2, 3):
        model.split = split
        expected = score_candidates(model, tokenizer, queries, TEXTS, run, None, ScoringOptions(batch_size=2))
        for qid in run:
            assert swept[split][qid] == pytest.approx(expected[qid], abs=1e-5), (split, qid)


def test_the_sweep_measures_every_split_of_every_set(tokenizer: WordPieceTokenizer) -> None:
    model = PreTTR(tiny_bert(), split=0)
    sets = {"validation": judged("validation"), "dl19": judged("dl19")}
    table = split_sweep.split_sweep(
        model, tokenizer, TEXTS, sets, {"validation": 2, "dl19": None}, {"validation": "MRR@10"}, progress=False
    )
    assert list(table.index) == [0, 1, 2, 3] and table.index.name == "k"
    assert list(table.columns) == ["VALIDATION MRR@10", "DL19 nDCG@10"]
    model.split = 1
    scores = score_candidates(model, tokenizer, judged("dl19").queries, TEXTS, judged("dl19").run, depth=None)
    expected = evaluate(rerank(judged("dl19").run, scores, 4), judged("dl19").qrels, ["nDCG@10"])["nDCG@10"]
    assert table.loc[1, "DL19 nDCG@10"] == pytest.approx(expected)
    assert ((table >= 0) & (table <= 1)).all().all()


def test_choose_split_takes_the_best_validation_among_the_splits_that_save_enough() -> None:
    sweep = pd.DataFrame({"V": [0.9, 0.8, 0.7, 0.5, 0.6, 0.6, 0.65]}, index=pd.Index(range(7), name="k"))
    assert split_sweep.choose_split(sweep, "V", 0.5) == 5  # 3 <= k < 6; 4 and 5 tie at 0.6: the later, cheaper
    assert split_sweep.choose_split(sweep, "V", 0.0) == 0
    assert split_sweep.choose_split(sweep, "V", 0.9) == 5  # k = L = 6 is no re-ranker, whatever its value
    assert split_sweep.lowest_split(6, 0.5) == 3 and split_sweep.lowest_split(6, 0.9) == 5
    assert split_sweep.lowest_split(1, 0.5) == 0
    shallow = pd.DataFrame({"V": [0.4, 0.5]}, index=pd.Index([0, 1], name="k"))
    assert split_sweep.choose_split(shallow, "V", 0.5) == 0  # one layer: the only split with a joint layer
    for share in (1.0, -0.1):
        with pytest.raises(ValueError, match="min_saving"):
            split_sweep.choose_split(sweep, "V", share)


def test_forward_splits_runs_on_the_models_device(tokenizer: WordPieceTokenizer) -> None:
    model = PreTTR(tiny_bert(), split=0)
    queries, run = judged("dl19").queries, judged("dl19").run
    scores = split_sweep.split_scores(model, tokenizer, queries, TEXTS, {"q2": list(run["q2"])}, [1])
    assert set(scores) == {1} and set(scores[1]["q2"]) == set(run["q2"])
    assert all(isinstance(value, float) and torch.isfinite(torch.tensor(value)) for value in scores[1]["q2"].values())
