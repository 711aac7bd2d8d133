"""Chapter 9's data (``lib.experiments.long_documents``): TIME with BM25's candidates, assembled test-year documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import data
from lib.core.profiles import LongSettings, get_profile
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.evaluation.position_effect import sweep_ranks
from lib.experiments.long_documents import (
    assembled_set,
    cascade_scores,
    cascade_sweep_ranks,
    document_costs,
    document_scores,
    own_passages,
    sweep_ranks_by_model,
    sweep_set,
    time_lengths,
    time_set,
)
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import QUERY_MAX_LENGTH
from lib.reranking.scoring import ScoringOptions, score_candidates
from tests.models.test_idcm import tiny_idcm
from tests.models.test_tkl import make_model as tiny_tkl
from tests.training.test_pairwise import HashTokenizer


def test_time_as_a_judged_set_with_bm25s_candidates(converted: Path, tmp_path: Path) -> None:
    judged, documents = time_set(get_profile("smoke"), tmp_path, depth=20)
    assert list(judged.queries) == ["1", "2", "3", "4", "5", "6", "7", "8"]  # the smoke slice, in query order
    assert len(documents) == 423 and all(len(judged.run[qid]) == 20 for qid in judged.queries)
    found = sum(doc in judged.run[qid] for qid, docs in judged.qrels.items() for doc in docs)
    assert found / sum(map(len, judged.qrels.values())) > 0.6  # most judged documents are in BM25's top 20
    again, _ = time_set(get_profile("smoke"), tmp_path, depth=20)  # the index is reused
    assert again.run == judged.run


def _real_year(qids: int = 4) -> tuple[JudgedSet, dict[str, str]]:
    qrels, run, queries = data.load_qrels("dl19"), data.load_run("dl19", "bm25"), data.load_queries("dl19")
    chosen = sorted(qrels, key=query_order)[:qids]
    judged = JudgedSet("dl19", {q: queries[q] for q in chosen}, {q: qrels[q] for q in chosen},
                       {q: run[q] for q in run})  # fmt: skip
    return judged, data.load_collection("v1")


def test_assembled_test_documents_from_a_real_year(converted: Path, tmp_path: Path) -> None:
    judged, texts = _real_year()
    assembled, as_judged, bm25 = assembled_set(judged, texts, time_lengths(), (2, 4, 2), seed=0, folder=tmp_path)
    assert as_judged.name == "dl19-assembled" and set(as_judged.queries) == set(judged.queries)
    own = own_passages(judged)
    ranks = {True: [], False: []}
    for qid in judged.queries:
        grades = as_judged.qrels[qid]
        assert sum(grade >= 2 for grade in grades.values()) == 2 and len(grades) == 6
        assert set(bm25[qid]) == set(as_judged.run[qid]) == set(grades)
        mine = {sum(pid in own[qid] for pid in assembled.layouts[docid].filler()) for docid in grades}
        judged_zero = sum(grade == 0 and pid in texts for pid, grade in judged.qrels[qid].items())
        assert mine == {min(2, judged_zero // 6)}  # the same number of the query's own passages in every document
        for rank, docid in enumerate(ranking_from_run(bm25[qid])):
            ranks[grades[docid] >= 2].append(rank)
    # the relevant passage is all that tells the kinds apart, and BM25 finds it: relevant documents rank higher
    assert sum(ranks[True]) / len(ranks[True]) < sum(ranks[False]) / len(ranks[False])


def test_the_position_sweep_of_a_real_year_with_bm25_scores_of_its_competitors(raw: Path, tmp_path: Path) -> None:
    minilm_tokenizer = WordPieceTokenizer.from_vocab()
    judged, texts = _real_year(qids=3)
    assembled, _, _ = assembled_set(judged, texts, time_lengths(), (1, 4, 2), seed=0, folder=tmp_path / "assembled")
    long = LongSettings(max_pieces=512, sweep_offsets=(0, 256))
    documents, variants, swept, bm25 = sweep_set(judged, assembled, texts, minilm_tokenizer, long, 0, tmp_path / "s")
    assert set(swept.queries) == set(judged.queries) and all(len(run) == 3 for run in swept.run.values())
    for docid, variant in variants.items():
        pieces = len(minilm_tokenizer.pieces([documents[docid]])[0])
        assert pieces >= 2 * long.max_pieces  # longer than any model reads
        before = " ".join(texts[pid] for pid in variant.layout.passages[: variant.layout.relevant_at])
        assert variant.offset == (len(minilm_tokenizer.pieces([before])[0]) if before else 0)
    for qid in swept.queries:  # BM25 reads every word: the same score wherever the passage sits
        assert len({bm25[qid][f"{qid}-at-{t}"] for t in ("0", "256", "end")}) == 1
        others = [doc for doc in assembled.run[qid] if assembled.layouts[doc].relevant_at is None]
        assert set(bm25[qid]) == {*swept.run[qid], *others}
    sweep = (documents, variants, swept, bm25)
    ranks = sweep_ranks_by_model({}, sweep, assembled, {}, get_profile("smoke"), long.max_pieces)["bm25"]
    assert len(ranks) == 3 * len(swept.queries) and set(ranks["docid"]) == set(variants)  # the sweep's alone
    assert (ranks.groupby("qid")["rank"].nunique() == 1).all()  # BM25 ranks it alike wherever the passage sits


@pytest.mark.usefixtures("one_torch_thread")
def test_idcm_on_the_sweep_at_every_k_against_its_own_scores_of_the_competitors(
    raw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    judged, texts = _real_year(qids=2)
    assembled, as_judged, _ = assembled_set(judged, texts, time_lengths(), (1, 3, 2), seed=0, folder=tmp_path / "a")
    long = LongSettings(max_pieces=128, sweep_offsets=(0, 64))
    sweep = sweep_set(judged, assembled, texts, WordPieceTokenizer.from_vocab(), long, 0, tmp_path / "s")
    model, tokenizer, profile = tiny_idcm(), HashTokenizer(vocab=3000), get_profile("smoke")
    competitors = cascade_scores(model, tokenizer, as_judged, assembled.documents, profile, [1, None], 128)
    ranks = cascade_sweep_ranks(model, tokenizer, sweep, assembled, competitors, profile, 128)
    assert set(ranks) == {1, None} and all(len(frame) == 3 * 2 for frame in ranks.values())
    model.select_k = None  # the very ranks the full cascade's own scores of the sweep give
    alone = document_scores(model, tokenizer, sweep[2], sweep[0], profile, "idcm-None", 128)
    expected = sweep_ranks(alone, competitors[None], assembled.layouts, sweep[1])
    assert ranks[None]["rank"].tolist() == expected["rank"].tolist() and ranks[None]["rank"].between(1, 4).all()


@pytest.mark.usefixtures("one_torch_thread")
def test_the_cascade_at_every_k_from_one_pass_kept_as_each_k_alone(
    converted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    judged, documents = time_set(get_profile("smoke"), tmp_path, depth=3)
    judged = JudgedSet("time", judged.queries, judged.qrels, {qid: judged.run[qid] for qid in ["1", "2"]})
    model, tokenizer, profile = tiny_idcm(), HashTokenizer(vocab=3000), get_profile("smoke")
    calls = []
    model.bert_cat.register_forward_hook(lambda module, inputs, output: calls.append(inputs[0].shape[0]))
    swept = cascade_scores(model, tokenizer, judged, documents, profile, [1, None], max_pieces=40)
    assert set(swept) == {1, None} and calls  # computed, in one pass per batch
    calls.clear()
    assert cascade_scores(model, tokenizer, judged, documents, profile, [1, None], max_pieces=40) == swept
    assert not calls  # both read back from the score cache
    for k in (1, None):  # the very scores (and cache entries) the model gives at that k alone
        model.select_k = k
        kept = document_scores(model, tokenizer, judged, documents, profile, f"idcm-{k}", max_pieces=40)
        assert kept == swept[k] and not calls
        options = ScoringOptions(8, QUERY_MAX_LENGTH, 40)
        alone = score_candidates(model, tokenizer, judged.queries, documents, judged.run, None, options)
        for qid in alone:
            assert alone[qid] == pytest.approx(swept[k][qid], abs=1e-5)
        calls.clear()
    assert swept[1] != swept[None]


@pytest.mark.usefixtures("one_torch_thread")
def test_the_cost_of_a_document_in_both_regimes_on_time(converted: Path, tmp_path: Path) -> None:
    judged, documents = time_set(get_profile("smoke"), tmp_path, depth=4)
    long = LongSettings(time_max_pieces=300, max_pieces=300, sweep_offsets=(0,), regime_queries=2, regime_counts=(2, 4))
    tkl = tiny_tkl()
    models = {"tkl": (tkl, HashTokenizer(vocab=40)), "idcm": (tiny_idcm(), HashTokenizer(vocab=3000))}
    costs = document_costs(models, judged, documents, long, tmp_path / "indexes")
    assert [(row.model, row.regime) for row in costs.itertuples()] == [("tkl", "whole"), ("tkl", "stored"),
                                                                       ("idcm", "whole")]  # fmt: skip
    assert (costs["queries"] == 2).all() and (costs["ms_2"] > 0).all() and (costs["documents_per_ms"] > 0).all()
    stored = costs.set_index(["model", "regime"]).loc[("tkl", "stored")]
    width = tkl.embedding.embedding_dim
    assert stored["bytes_per_passage"] > 2 * width * 100  # float16 vectors of documents longer than passages
