"""``lib.experiments.score_cache``: the same weights on the same candidates are scored once; any change, again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lib import data
from lib.core.types import query_order, ranking_from_run
from lib.experiments import score_cache
from lib.reranking.dense import Encodings
from lib.reranking.scoring import score_candidates
from tests.training.test_pairwise import BagModel, HashTokenizer


@pytest.fixture(scope="module")
def dl19() -> dict:
    """Four DL19 queries with their BM25 top-100 and v1 passages (a real slice)."""
    try:
        queries, run = data.load_queries("dl19"), data.load_run("dl19", "bm25")
        texts = data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qids = sorted(run, key=query_order)[:4]
    return {"queries": {q: queries[q] for q in qids}, "run": {q: run[q] for q in qids}, "texts": texts}


def model(seed: int = 0) -> BagModel:
    torch.manual_seed(seed)
    return BagModel(dropout=0.0)


class Counted:
    """``score_candidates`` on the slice, counting its calls."""

    def __init__(self, scorer: BagModel, dl19: dict, run: dict | None = None) -> None:
        self.scorer, self.dl19, self.run, self.calls = scorer, dl19, run or dl19["run"], 0

    def key(self, **setting) -> dict:
        slice_ = self.dl19
        return score_cache.scoring_key(
            self.scorer, HashTokenizer(), slice_["queries"], slice_["texts"], self.run, method="pairs", **setting
        )

    def __call__(self) -> dict:
        self.calls += 1
        slice_ = self.dl19
        return score_candidates(self.scorer, HashTokenizer(), slice_["queries"], slice_["texts"], self.run, depth=None)


def test_the_same_weights_on_the_same_candidates_are_scored_once(tmp_path: Path, dl19: dict) -> None:
    scorer = Counted(model(), dl19)
    first = score_cache.cached_scores(tmp_path, scorer.key(), dl19["run"], scorer)
    again = score_cache.cached_scores(tmp_path, Counted(model(), dl19).key(), dl19["run"], scorer)
    assert scorer.calls == 1
    assert again == first  # every float exactly, the same queries
    assert [list(scores) for scores in again.values()] == [list(scores) for scores in first.values()]  # the order
    assert sum(len(scores) for scores in again.values()) == sum(len(run) for run in dl19["run"].values())


def test_one_changed_weight_scores_again(tmp_path: Path, dl19: dict) -> None:
    scorer = Counted(model(), dl19)
    before = score_cache.cached_scores(tmp_path, scorer.key(), dl19["run"], scorer)
    with torch.no_grad():
        scorer.scorer.projection.bias[0] += 1e-3
    after = score_cache.cached_scores(tmp_path, scorer.key(), dl19["run"], scorer)
    assert scorer.calls == 2
    assert after != before


def test_a_changed_passage_text_or_setting_is_another_key(dl19: dict) -> None:
    scorer = Counted(model(), dl19)
    qid = next(iter(dl19["run"]))
    pid = ranking_from_run(dl19["run"][qid])[0]
    edited = {**dl19, "texts": {**dl19["texts"], pid: dl19["texts"][pid] + " more"}}
    base = scorer.key(device="cpu", bf16=False)
    assert Counted(scorer.scorer, edited).key(device="cpu", bf16=False) != base
    assert scorer.key(device="cpu", bf16=True) != base
    assert scorer.key(device="cuda", bf16=False) != base
    assert score_cache.tokenizer_digest(HashTokenizer(8192)) != score_cache.tokenizer_digest(HashTokenizer())


def test_a_query_without_candidates_is_kept(tmp_path: Path, dl19: dict) -> None:
    run = {**dl19["run"], "no-candidates": {}}
    scorer = Counted(model(), dl19, run)
    first = score_cache.cached_scores(tmp_path, scorer.key(), run, scorer)
    again = score_cache.cached_scores(tmp_path, scorer.key(), run, scorer)
    assert scorer.calls == 1 and again == first and again["no-candidates"] == {}


def test_kept_scores_of_other_candidates_are_set_aside_and_scored_again(tmp_path: Path, dl19: dict) -> None:
    scorer = Counted(model(), dl19)
    key = scorer.key()
    score_cache.cached_scores(tmp_path, key, dl19["run"], scorer)
    qid = next(iter(dl19["run"]))
    wider = {**dl19["run"], qid: {**dl19["run"][qid], "not-scored": 0.0}}
    with pytest.warns(UserWarning, match=r"\.trec: a kept score file \(the score cache\) is truncated or corrupt"):
        score_cache.cached_scores(tmp_path, key, wider, scorer)
    assert scorer.calls == 2  # scored again, not read back
    assert len(list(tmp_path.glob("*.trec.broken"))) == 1


def test_a_truncated_score_file_is_set_aside_with_a_warning_and_scored_again(tmp_path: Path, dl19: dict) -> None:
    scorer = Counted(model(), dl19)
    first = score_cache.cached_scores(tmp_path, scorer.key(), dl19["run"], scorer)
    (kept,) = tmp_path.glob("*.trec")
    text = kept.read_text(encoding="utf-8")
    kept.write_text(text[: len(text) // 2], encoding="utf-8")  # cut inside a line, as a killed copy leaves it
    with pytest.warns(UserWarning, match=rf"{kept.name}: a kept score file .* moved aside to {kept.name}.broken"):
        again = score_cache.cached_scores(tmp_path, scorer.key(), dl19["run"], scorer)
    assert again == first and scorer.calls == 2
    assert kept.read_text(encoding="utf-8") == text  # rebuilt whole
    assert kept.with_name(kept.name + ".broken").is_file()


def test_stored_vectors_digest_changes_with_any_vector() -> None:
    vectors = torch.nn.functional.normalize(torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    base = score_cache.encodings_digest(Encodings(["a", "b", "c"], vectors))
    moved = vectors.clone()
    moved[2, 3] += 1e-6
    assert score_cache.encodings_digest(Encodings(["a", "b", "c"], moved)) != base
    assert score_cache.encodings_digest(Encodings(["a", "c", "b"], vectors)) != base
    assert score_cache.encodings_digest(Encodings(["a", "b", "c"], vectors.clone())) == base


def test_a_tokenizers_digest_is_the_same_in_every_process() -> None:
    """Each chapter runs in its own kernel, with its own string hashing: a digest that moved with it would never hit."""
    script = (
        "from lib.experiments.score_cache import tokenizer_digest\n"
        "from lib.representations.bert import load_tokenizer\n"
        "from lib.representations.pretrained import minilm_folder\n"
        "from lib.representations.text import Vocabulary\n"
        "words = Vocabulary.build(['the kernel pooling of the match matrix', 'a passage of words'], min_count=1)\n"
        "print(tokenizer_digest(load_tokenizer(minilm_folder())), tokenizer_digest(words))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.split()[-2:]
        for seed in ("1", "2")
    ]  # fmt: skip
    assert all(len(run) == 2 and all(len(digest) == 64 for digest in run) for run in runs), runs
    assert runs[0] == runs[1], runs
