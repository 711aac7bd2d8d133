"""Chapter 2's protocol (``lib.experiments.distillation_protocol``) on real data: query sets, validation, tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core import paths
from lib.core.profiles import get_profile
from lib.data import load_queries
from lib.data.pseudo_queries import PSEUDO_PREFIX
from lib.evaluation import measures as evaluation
from lib.experiments import distillation_protocol
from tests.data.test_loaders import data_folders  # noqa: F401  (fixture: a tiny book subset and MS MARCO export)
from tests.experiments.test_distillation_set import corpus, index  # noqa: F401,F811  (the real index slice)

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


@pytest.fixture(scope="module")
def protocol(
    index: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> distillation_protocol.Protocol:
    """The smoke profile's protocol over a real slice of the book index (teacher: the MiniLM bi-encoder)."""
    settings = get_profile("smoke").training.replace(distill_bm25_depth=8, distill_triples_per_query=6)
    folder = tmp_path_factory.mktemp("teacher")
    return distillation_protocol.prepare_protocol(get_profile("smoke"), settings, 42, index, folder, progress=False)


def test_the_protocol_never_trains_or_validates_on_a_test_year(protocol: distillation_protocol.Protocol) -> None:
    tests = {name: set(load_queries(name)) for name in ("dl19", "dl20")}
    training = {qid for qid, _, _ in protocol.triples}
    held_out = {qid for qid, _, _ in protocol.held_out}
    assert training and held_out and not training & held_out, "held-out queries are never trained on"
    pseudo = {qid for qid in protocol.queries if qid.startswith(PSEUDO_PREFIX)}
    assert pseudo and training | held_out <= set(load_queries("dev-small")) | pseudo
    assert set(protocol.validation.queries) <= set(load_queries("dl21"))
    for test in tests.values():
        assert not (training | held_out | set(protocol.validation.queries)) & test
    assert sorted(protocol.tests) == ["dl19", "dl20"]
    profile = get_profile("smoke")
    for name, test in protocol.tests.items():
        assert len(test.queries) == profile.query_limit and set(test.queries) <= tests[name]
        assert all(len(candidates) <= profile.training.candidate_depth for candidates in test.run.values())
    assert all(p in protocol.texts and n in protocol.texts for _, p, n in protocol.triples + protocol.held_out)
    assert len(protocol.margins) == len(protocol.triples) and len(protocol.held_out_margins) == len(protocol.held_out)
    summary = protocol.summary()
    assert summary["training triples"] + summary["held-out triples"] == summary["triples"]
    assert protocol.validation.name == "dl21"
    assert summary["validation queries (dl21)"] == len(protocol.validation.queries)


def test_pseudo_query_examples_show_the_query_its_passage_and_the_teachers_first_candidate(
    protocol: distillation_protocol.Protocol,
) -> None:
    rows = distillation_protocol.pseudo_query_examples(protocol, count=3, width=40)
    qids = sorted(q for q in protocol.queries if q.startswith(PSEUDO_PREFIX))[:3]
    assert [row["pseudo-query"] for row in rows] == [protocol.queries[q] for q in qids]
    for qid, row in zip(qids, rows, strict=True):
        source = protocol.texts[qid.removeprefix(PSEUDO_PREFIX)]
        assert row["cut from"] == source or (row["cut from"].endswith(" …") and source.startswith(row["cut from"][:-2]))
        assert len(row["cut from"]) <= 42


def test_query_sources_are_each_of_the_profiles_sources_alone() -> None:
    book = get_profile("book").training
    assert book.distill_queries is None and book.distill_pseudo_queries > 0, "the book trains on both sources"
    variants = distillation_protocol.query_source_settings(book)
    assert list(variants) == ["dev-small only", "pseudo-queries only"]
    dev, pseudo = variants["dev-small only"], variants["pseudo-queries only"]
    assert dev.distill_queries is None and dev.distill_pseudo_queries == 0
    assert pseudo.distill_queries == 0 and pseudo.distill_pseudo_queries == book.distill_pseudo_queries
    assert dev.replace(distill_pseudo_queries=book.distill_pseudo_queries) == book


def test_a_profile_with_one_source_of_queries_has_nothing_to_compare() -> None:
    book = get_profile("book").training
    assert distillation_protocol.query_source_settings(book.replace(distill_queries=0)) == {}
    assert distillation_protocol.query_source_settings(book.replace(distill_pseudo_queries=0)) == {}


def test_each_profile_validates_on_its_own_set_and_the_prose_names_it() -> None:
    assert distillation_protocol.validation_set(get_profile("book").training) == "dl21"
    assert distillation_protocol.validation_set(get_profile("smoke").training) == "dl21"
    assert distillation_protocol.validation_set(get_profile("paper").training) == "dev-small"
    assert distillation_protocol.query_set_label("dl21") == "DL21"
    assert distillation_protocol.query_set_label("dev-small") == "MS MARCO dev-small"


@pytest.fixture
def paper_export(data_folders: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The paper profile reads the tiny MS MARCO export; its artifacts go to a fresh folder."""
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    paths.use_profile_data("paper")


@pytest.mark.usefixtures("paper_export")
def test_the_paper_profile_validates_on_dev_small_from_the_msmarco_export() -> None:
    paper = get_profile("paper")
    name = distillation_protocol.validation_set(paper.training)
    with pytest.raises(FileNotFoundError, match="CH=01_data_and_first_stage PROFILE=paper"):
        distillation_protocol.query_set(name, paper, paper.training.candidate_depth)  # the export's run is unscored
    scored = {"2": {"0": 7.5, "1": 3.25}, "1048585": {"0": 1.5}}  # what chapter 1 retrieves in its place
    evaluation.write_trec_run(scored, paths.run_path("paper", name, "bm25"), tag="bm25")
    validation = distillation_protocol.query_set(name, paper, 1)
    assert validation.name == "dev-small"
    assert validation.queries == {"2": "andrew kaufman", "1048585": "what is paula deen's brother"}
    assert validation.qrels == {"2": {"1": 1}, "1048585": {"0": 1}}
    assert validation.run == {"2": {"0": 7.5}, "1048585": {"0": 1.5}}, "chapter 1's scored run, cut at the depth"


@pytest.mark.parametrize("test_year", ["dl19", "dl20"])
def test_a_test_year_never_validates(test_year: str, tmp_path: Path) -> None:
    settings = get_profile("book").training.replace(validation_set=test_year)
    with pytest.raises(ValueError, match=f"'validation_set' is '{test_year}', a test year"):
        distillation_protocol.validation_set(settings)
    with pytest.raises(ValueError, match="a test year"):  # refused before any teacher or index work
        distillation_protocol.prepare_protocol(
            get_profile("book"), settings, 42, tmp_path / "no-index", tmp_path, progress=False
        )


def test_the_training_queries_never_validate() -> None:
    settings = get_profile("paper").training.replace(distill_query_set="dev-small")
    with pytest.raises(ValueError, match="'distill_query_set' trains on"):
        distillation_protocol.validation_set(settings)
