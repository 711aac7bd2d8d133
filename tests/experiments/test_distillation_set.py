"""Chapter 2's teacher-labelled training set on a real slice: no test query, teacher scores, seeded triples."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lib.core.profiles import TrainingSettings, get_profile
from lib.core.types import ranking_from_run
from lib.data import load_collection, load_queries, load_run
from lib.data.pseudo_queries import PSEUDO_PREFIX
from lib.experiments.distillation_set import (
    build_distillation_set,
    file_distillation_set,
    random_passages,
    training_queries,
)
from lib.first_stage.lucene import build_index
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.dense import encode
from tests.first_stage.test_lucene import write_collection

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    """The book passages BM25 ranks in its top 5 for the first 40 DL19 and DL20 queries (a real slice)."""
    passages = load_collection("v1")
    chosen = {pid for name in ("dl19", "dl20") for qid, run in list(load_run(name, "bm25").items())[:40]
              for pid in ranking_from_run(run)[:5]}  # fmt: skip
    return {pid: passages[pid] for pid in sorted(chosen)}


@pytest.fixture(scope="module")
def index(corpus: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("index")
    return build_index(write_collection(folder / "collection.tsv", corpus), folder / "index", threads=1, progress=False)


def test_training_queries_are_dev_small_and_pseudo_queries_and_never_a_test_query(corpus: dict[str, str]) -> None:
    settings = get_profile("book").training.replace(distill_queries=500, distill_pseudo_queries=100)
    queries = training_queries(get_profile("book"), settings, corpus, seed=42)
    dev = {qid for qid in queries if not qid.startswith(PSEUDO_PREFIX)}
    assert len(dev) == 500 and dev <= set(load_queries("dev-small"))
    pseudo = {qid: text for qid, text in queries.items() if qid.startswith(PSEUDO_PREFIX)}
    assert len(pseudo) == 100
    assert all(text.split()[0].strip(".,") in corpus[qid.removeprefix(PSEUDO_PREFIX)] for qid, text in pseudo.items())
    for name in ("dl19", "dl20"):
        test = load_queries(name)
        assert not set(queries) & set(test)
        assert not {t.lower() for t in queries.values()} & {t.lower() for t in test.values()}


def test_the_set_holds_teacher_scores_of_bm25_and_teacher_candidates_and_seeded_triples(
    corpus: dict[str, str], index: Path, tmp_path: Path
) -> None:
    profile = get_profile("smoke")
    settings = profile.training.replace(distill_queries=6, distill_bm25_depth=8, distill_teacher_depth=3,
                                        distill_triples_per_query=4)  # fmt: skip
    teacher, tokenizer = BiEncoder(minilm_folder()), WordPieceTokenizer.from_vocab()
    first = build_distillation_set(profile, settings, teacher, tokenizer, index, tmp_path, 7, False, corpus)
    assert set(first.teacher) == set(first.queries) and len(first.queries) == 6 + settings.distill_pseudo_queries
    assert all(8 <= len(candidates) <= 11 for candidates in first.teacher.values() if len(candidates) >= 8)
    assert all(-1.0 <= score <= 1.0 for run in first.teacher.values() for score in run.values())
    assert len(first.triples) == len(first.margins) > 0 and all(margin >= 0 for margin in first.margins)
    assert {qid for qid, _, _ in first.triples} <= set(first.queries)
    started = time.perf_counter()
    again = build_distillation_set(profile, settings, teacher, tokenizer, index, tmp_path, 7, False, corpus)
    assert (again.triples, again.margins) == (first.triples, first.margins), "the same seed, the same triples"
    assert again.seconds["teacher encoding"] < first.seconds["teacher encoding"], "encodings are cached"
    assert time.perf_counter() - started < 60
    assert (tmp_path / "teacher-passages.ids.txt").read_text().split("\n") == sorted(corpus)


def test_no_training_query_at_all_is_an_error_naming_the_parameters(corpus: dict[str, str]) -> None:
    settings = get_profile("book").training.replace(distill_queries=0, distill_pseudo_queries=0)
    with pytest.raises(ValueError, match="distill_pseudo_queries"):
        training_queries(get_profile("book"), settings, corpus, seed=42)


def test_random_passages_are_seeded_per_query_and_never_a_candidate() -> None:
    candidates = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"c": 0.1}}
    ids = [f"p{i}" for i in range(50)] + ["a", "b", "c"]
    drawn = random_passages(candidates, ids, per_query=10, seed=1)
    assert all(len(pids) == 10 == len(set(pids)) for pids in drawn.values())
    assert not set(drawn["q1"]) & {"a", "b"} and "c" not in drawn["q2"]
    assert random_passages({"q2": candidates["q2"]}, ids, 10, seed=1)["q2"] == drawn["q2"]
    assert random_passages(candidates, ids, 10, seed=2) != drawn


def test_random_negatives_are_scored_by_the_teacher_from_the_cached_vectors(
    corpus: dict[str, str], index: Path, tmp_path: Path
) -> None:
    profile = get_profile("smoke")
    settings = profile.training.replace(distill_queries=4, distill_bm25_depth=8, distill_teacher_depth=3,
                                        distill_triples_per_query=8, distill_random_negatives=0.5)  # fmt: skip
    teacher, tokenizer = BiEncoder(minilm_folder()), WordPieceTokenizer.from_vocab()
    built = build_distillation_set(profile, settings, teacher, tokenizer, index, tmp_path, 7, False, corpus)
    outside = [(i, t) for i, t in enumerate(built.triples) if t[2] not in built.teacher[t[0]]]
    assert 0 < len(outside) < len(built.triples), "some negatives, not all, are random corpus passages"
    assert all(negative in corpus for _, (_, _, negative) in outside)
    i, (qid, positive, negative) = outside[0]
    query = encode(teacher, tokenizer, built.queries, [qid], QUERY_MAX_LENGTH).vectors[0]
    passage = encode(teacher, tokenizer, corpus, [negative], DOC_MAX_LENGTH).vectors[0]
    expected = 10.0 * (built.teacher[qid][positive] - float(query @ passage))
    assert built.margins[i] == pytest.approx(expected, abs=1e-4)


def test_a_teacher_scores_file_gives_its_triples_of_the_profiles_training_queries_and_no_test_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "data" / "mini"
    folder.mkdir(parents=True)
    (folder / "queries.train.tsv").write_text("1\tcats\n2\tdogs\n3\twhat is a zebra\n")
    (folder / "queries.dl19.tsv").write_text("9\tWhat is a zebra?\n")  # query 3's text
    (folder / "queries.dl20.tsv").write_text("8\tbirds\n")
    lines = ["3.0\t1.0\t1\tp1\tp2", "2.0\t2.5\t2\tp3\tp4", "1.0\t0.0\t3\tp5\tp6", "5.0\t4.0\t1\tp1\tp7"]
    (folder / "scores.tsv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TKBOOK_CONVERTED", "mini")
    settings = TrainingSettings(distill_query_set="train", teacher_scores="scores.tsv")
    book = get_profile("book")
    labelled = file_distillation_set(book, settings)
    assert labelled.queries == {"1": "cats", "2": "dogs"}, "query 3 shares a test query's text"
    assert labelled.triples == [("1", "p1", "p2"), ("2", "p3", "p4"), ("1", "p1", "p7")]
    assert labelled.margins == pytest.approx([2.0, -0.5, 1.0])
    assert labelled.teacher == {"1": {"p1": 3.0, "p2": 1.0, "p7": 4.0}, "2": {"p3": 2.0, "p4": 2.5}}, "first score"
    assert not labelled.passages.ids and labelled.summary()["candidates per query"] == 2.5
    first = file_distillation_set(book, settings.replace(distill_queries=1))
    assert list(first.queries) == ["1"] and len(first.triples) == 2, "the profile's slice, in query order"
    with pytest.raises(FileNotFoundError, match=r"mini/absent\.tsv: the teacher-scores file"):
        file_distillation_set(book, settings.replace(teacher_scores="absent.tsv"))
    (folder / "queries.dl20.tsv").write_text("1\tcats\n2\tdogs\n8\tbirds\n")
    with pytest.raises(ValueError, match=r"scores\.tsv: no triple of a train query outside the test years"):
        file_distillation_set(book, settings)
