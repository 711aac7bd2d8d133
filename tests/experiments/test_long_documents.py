"""Chapter 9's data (``lib.experiments.long_documents``): TIME with BM25's candidates, assembled test-year documents."""

from __future__ import annotations

from pathlib import Path

from lib import data
from lib.core.profiles import get_profile
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.experiments.long_documents import assembled_set, time_lengths, time_set


def test_time_as_a_judged_set_with_bm25s_candidates(converted: Path, tmp_path: Path) -> None:
    judged, documents = time_set(get_profile("smoke"), tmp_path, depth=20)
    assert list(judged.queries) == ["1", "2", "3", "4", "5", "6", "7", "8"]  # the smoke slice, in query order
    assert len(documents) == 423 and all(len(judged.run[qid]) == 20 for qid in judged.queries)
    found = sum(doc in judged.run[qid] for qid, docs in judged.qrels.items() for doc in docs)
    assert found / sum(map(len, judged.qrels.values())) > 0.6  # most judged documents are in BM25's top 20
    again, _ = time_set(get_profile("smoke"), tmp_path, depth=20)  # the index is reused
    assert again.run == judged.run


def test_assembled_test_documents_from_a_real_year(converted: Path, tmp_path: Path) -> None:
    qrels, run, queries = data.load_qrels("dl19"), data.load_run("dl19", "bm25"), data.load_queries("dl19")
    texts = data.load_collection("v1")
    qids = sorted(qrels, key=query_order)[:4]
    judged = JudgedSet("dl19", {q: queries[q] for q in qids}, {q: qrels[q] for q in qids}, {q: run[q] for q in qids})
    assembled, as_judged, bm25 = assembled_set(judged, texts, time_lengths(), (2, 4), seed=0, folder=tmp_path)
    assert as_judged.name == "dl19-assembled" and set(as_judged.queries) == set(qids)
    for qid in qids:
        grades = as_judged.qrels[qid]
        assert sum(grade >= 2 for grade in grades.values()) == 2 and len(grades) == 6
        assert set(bm25[qid]) == set(as_judged.run[qid]) == set(grades)
        top = ranking_from_run(bm25[qid])[0]
        assert top in assembled.documents
