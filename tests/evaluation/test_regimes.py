"""The two regimes of query-time cost (``lib.evaluation.regimes``): whole, and with the passage side stored."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from lib import data
from lib.core.types import query_order
from lib.evaluation.efficiency import median_ms
from lib.evaluation.regimes import (
    TimedQueries,
    Timing,
    candidates_of,
    committed_regimes,
    compact_costs,
    compact_table,
    cost_rows,
    estimated,
    gpu_memory,
    ladder_verdict,
    query_cost,
    regime_latencies,
    resident_table,
    stored_rerank,
    stored_run,
)
from lib.evaluation.stored_latency import is_precomputable
from lib.models.knrm import KNRM
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.passage_index import PQ, build_index
from lib.reranking.product_quantisation import fit_quantiser
from tests.reranking.test_passage_index import TEXTS, direct_scores, tk_and_words

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIRST_STAGE = {"q1": {"p1": 3.0, "p2": 2.0, "p3": 1.0}, "q2": {"p4": 2.0, "p3": 1.0}}
QUERIES = {"q1": "define androgen receptor", "q2": "nuclear receptor"}


class Counting:
    """Counts the calls of a model's ``encode_query`` (the query must be encoded once per query, not per chunk)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        original = model.encode_query

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        model.encode_query = counted


def test_candidates_repeat_in_first_stage_order_when_the_list_is_shorter() -> None:
    assert candidates_of(FIRST_STAGE, "q2", 5) == ["p4", "p3", "p4", "p3", "p4"]
    assert candidates_of(FIRST_STAGE, "q1", 2) == ["p1", "p2"]
    with pytest.raises(ValueError, match="'q3' has no candidates"):
        candidates_of({"q3": {}}, "q3", 1)


def test_the_stored_ranking_is_the_models_and_the_query_is_encoded_once_whatever_the_chunks(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    counter = Counting(model)
    query = words.encode([QUERIES["q1"]], QUERY_MAX_LENGTH)
    pids = ["p1", "p2", "p3", "p4", "p1"]
    order = stored_rerank(model, query, index, pids, batch_size=2)  # three chunks
    assert counter.calls == 1
    expected = torch.argsort(direct_scores(model, words, QUERIES["q1"], [TEXTS[p] for p in pids]), descending=True)
    assert [pids[i] for i in order.tolist()] == [pids[i] for i in expected.tolist()]


def test_the_candidates_rows_are_asked_for_once_before_the_query_is_encoded(tmp_path: Path) -> None:
    """The stored regime's read overlaps the query's encoding: every candidate's rows asked for from the disk
    (``prefetch``) once, before ``encode_query`` runs."""
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    events: list[tuple[str, list[str] | None]] = []
    prefetch, encode_query = index.prefetch, model.encode_query
    index.prefetch = lambda pids: events.append(("prefetch", list(pids))) or prefetch(pids)
    model.encode_query = lambda *args: events.append(("encode_query", None)) or encode_query(*args)
    pids = ["p1", "p2", "p3", "p4", "p1"]
    stored_rerank(model, words.encode([QUERIES["q1"]], QUERY_MAX_LENGTH), index, pids, batch_size=2)
    assert events == [("prefetch", pids), ("encode_query", None)]


def test_stored_latencies_encode_each_query_once_per_run_and_report_median_and_spread(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    counter = Counting(model)
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1", "q2"])
    measured = regime_latencies(model, words, timed, Timing([3, 10], batch_size=2, repetitions=4), index)
    assert counter.calls == 2 * 2 * (4 + 1), "once per run: 2 counts × 2 queries × (4 timed + 1 warm-up)"
    assert set(measured) == {3, 10}
    for values in measured.values():
        assert values["ms"] > 0 and values["spread"] >= 1 and values["queries"] == 2


def test_the_cost_rows_have_both_regimes_for_a_storable_model_and_one_for_the_rest(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    assert is_precomputable(model) and not is_precomputable(KNRM(torch.randn(len(words), 8)))
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1", "q2"])
    rows = cost_rows("tk", model, words, timed, Timing([2, 5], repetitions=1), tmp_path, ("float16", "int8"))
    assert [(row["regime"], row["dtype"]) for row in rows] == [
        ("whole", "—"),
        ("stored", "float16"),
        ("stored", "int8"),
    ]
    assert rows[0]["bytes_per_passage"] == 0 and rows[1]["bytes_per_passage"] > rows[2]["bytes_per_passage"] > 0
    assert all(row["ms_2"] > 0 and row["ms_5"] > 0 and row["queries"] == 2 for row in rows)
    assert (tmp_path / "tk-int8" / "header.json").is_file()
    assert all(math.isnan(row["peak_memory_mb"]) for row in rows)  # a CPU: the process's memory is not the model's
    knrm = cost_rows("knrm", KNRM(torch.randn(len(words), 8)), words, timed, Timing([2]), tmp_path, resident=True)
    assert [row["regime"] for row in knrm] == ["whole"]
    held = cost_rows("tk", model, words, timed, Timing([2], repetitions=1), tmp_path / "held", ("int8",), resident=True)
    assert [(row["regime"], row["dtype"]) for row in held] == [("whole", "—"), ("stored", "int8"), ("resident", "int8")]
    assert held[2]["bytes_per_passage"] == held[1]["bytes_per_passage"] > 0 and held[2]["ms_2"] > 0
    with pytest.raises(ValueError, match="names no query"):
        regime_latencies(model, words, TimedQueries(FIRST_STAGE, QUERIES, TEXTS, []), Timing([1]))
    with pytest.raises(ValueError, match="positive counts"):
        Timing([0])
    with pytest.raises(ValueError, match="max_seconds > 0"):
        Timing([1], max_seconds=0)


def test_a_model_timed_stored_only_has_no_whole_row_and_one_that_cannot_store_refuses(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1"])
    rows = cost_rows("tk", model, words, timed, Timing([2], repetitions=1), tmp_path, ("int8",), whole=False)
    assert [(row["regime"], row["dtype"]) for row in rows] == [("stored", "int8")]
    with pytest.raises(ValueError, match="'knrm' cannot store passages"):
        cost_rows("knrm", KNRM(torch.randn(len(words), 8)), words, timed, Timing([2]), tmp_path, whole=False)


def test_every_query_is_timed_by_one_rule_a_warm_up_then_the_repetitions_however_long_a_run(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1", "q2"])
    counter = Counting(model)
    regime_latencies(model, words, timed, Timing([3], repetitions=4), index)
    assert counter.calls == 2 * (4 + 1), "stored: 2 queries × (1 warm-up + 4 timed runs)"
    forwards = []
    model.register_forward_hook(lambda *_: forwards.append(1))
    regime_latencies(model, words, timed, Timing([3], batch_size=8, repetitions=4))
    assert len(forwards) == 2 * (4 + 1), "whole: 2 queries × (1 warm-up + 4 timed runs), one batch each"
    calls = []
    assert median_ms(lambda: calls.append(1), torch.device("cpu"), 5, 2) >= 0 and len(calls) == 2 + 5
    with pytest.raises(ValueError, match="'repetitions' >= 1 and 'warmup' >= 0"):
        median_ms(lambda: None, torch.device("cpu"), 0, 1)


def test_the_token_cap_bounds_what_both_regimes_read(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1"])
    full = cost_rows("tk", model, words, timed, Timing([2], repetitions=1), tmp_path / "full")
    capped = cost_rows("tk", model, words, timed, Timing([2], repetitions=1, max_doc_length=2), tmp_path / "capped")
    assert 0 < capped[1]["bytes_per_passage"] < full[1]["bytes_per_passage"]
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "three", progress=False, max_length=3)
    assert all(int(index.gather([pid])[1].sum()) <= 3 for pid in TEXTS)
    with pytest.raises(ValueError, match="token cap"):
        Timing([1], max_doc_length=0)


def test_a_count_too_slow_to_time_is_estimated_on_the_line_of_the_two_below(tmp_path: Path) -> None:
    """A tiny time limit: the first count is measured, the second from the first (in proportion), the third from
    the line through the first two... of which only one was measured, so in proportion too; all flagged."""
    model, words = tk_and_words(TEXTS)
    counter = Counting(model)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1", "q2"])
    measured = regime_latencies(model, words, timed, Timing([4, 2, 8], repetitions=1, max_seconds=1e-9), index)
    assert counter.calls == 2 * 2, "only the smallest count is timed: 2 queries × (1 timed + 1 warm-up)"
    assert [measured[count]["measured"] for count in (2, 4, 8)] == [True, False, False]
    assert measured[4]["ms"] == pytest.approx(2 * measured[2]["ms"]) and math.isnan(measured[4]["spread"])
    assert measured[8]["ms"] == pytest.approx(4 * measured[2]["ms"])


def test_query_cost_reads_a_fixed_cost_and_a_speed_off_the_two_smallest_counts() -> None:
    fixed, speed = query_cost({"ms_10": 12.0, "ms_100": 30.0, "ms_1000": 500.0}, [1000, 100, 10])
    assert speed == pytest.approx(5.0) and fixed == pytest.approx(10.0)  # 0.2 ms per candidate after 10 ms
    assert query_cost({"ms_10": 1.0, "ms_100": 100.0}, [10, 100]) == pytest.approx((0.0, 90 / 99))  # no negative cost
    assert query_cost({"ms_10": 5.0, "ms_100": 4.0}, [10, 100]) == pytest.approx((0.0, 25.0))  # flat: all per candidate


@pytest.mark.usefixtures("converted")
def test_both_regimes_on_real_dl19_queries(tmp_path: Path) -> None:
    queries, run, texts = data.load_queries("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    qids = sorted(run, key=query_order)[:2]
    first_stage = {qid: dict(list(run[qid].items())[:30]) for qid in qids}
    model, words = tk_and_words({pid: texts[pid] for qid in qids for pid in first_stage[qid]})
    counter = Counting(model)
    timed = TimedQueries(first_stage, queries, texts, qids)
    rows = cost_rows("tk", model, words, timed, Timing([10, 100], repetitions=1), tmp_path)
    assert counter.calls == 2 * 2 * 2, "stored: once per query and run (1 timed + 1 warm-up), 2 counts"
    whole, stored = rows
    assert stored["bytes_per_passage"] > 0 and stored["index_seconds"] > 0
    assert whole["ms_100"] > 0 and stored["ms_100"] > 0


LABELS = {"tk": "TK", "bert": "BERT-cat", "bm25": "BM25"}


def test_the_compact_table_tests_each_index_against_bm25_and_the_full_tk() -> None:
    table = pd.DataFrame(
        [{"model": name, "regime": "stored", "dtype": dtype, "bytes_per_passage": size, "ms_100": ms,
          "ms_1000": 10 * ms}
         for name, dtype, size, ms in [("full", "float16", 60000, 30.0), ("full", "int8", 30000, 25.0),
                                       ("small", "float16", 5000, 8.0), ("small", "int8", 2600, 9.0)]]
    )  # fmt: skip
    qids = [f"q{i}" for i in range(8)]
    values = {
        "dl19": {
            "bm25": pd.Series([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3], index=qids),
            "full": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.9], index=qids),
            "small": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.8], index=qids),
        }
    }
    shown = compact_table(table, values, ["full", "small"], "full", {"full": "TK", "small": "TK d32", "bm25": "BM25"})
    small = shown.set_index("model").loc["TK d32"]
    assert small["bytes / passage (int8)"] == 2600 and small["stored ms for 100"] == 8.0
    assert small["DL19 nDCG@10"] == pytest.approx(0.6625)
    assert small["DL19 p vs BM25"].endswith("*") and not small["DL19 p vs TK"].endswith("*")
    assert math.isnan(shown.set_index("model").loc["TK"].get("DL19 p vs TK", math.nan))
    costs = compact_costs(shown, "TK", 1600.0, 100).iloc[0]
    assert costs["model"] == "TK d32" and (costs["bytes"], costs["dtype"]) == (2600, "int8")
    assert (costs["full bytes"], costs["full dtype"]) == (30000, "int8") and costs["× rival"] == 200.0
    assert costs["DL19 delta"] == pytest.approx(-0.0125) and costs["DL19 above BM25"] and not costs["DL19 differs"]


def test_the_compact_table_tests_against_a_rival_and_reads_each_test_with_its_sign() -> None:
    table = pd.DataFrame(
        [{"model": name, "regime": "stored", "dtype": "int8", "bytes_per_passage": 1000, "ms_100": 5.0, "ms_1000": 50.0}
         for name in ("full", "worse")]
    )  # fmt: skip
    qids = [f"q{i}" for i in range(8)]
    base = pd.Series([0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.5, 0.8], index=qids)
    values = {"dl19": {"bm25": base, "bert": base + 0.2 + 0.01 * pd.Series(range(8), index=qids),
                       "full": base + 0.001 * pd.Series(range(8), index=qids),
                       "worse": base - 0.3 - 0.01 * pd.Series(range(8), index=qids)}}  # fmt: skip
    labels = {"full": "TK", "worse": "TK small", "bm25": "BM25", "bert": "BERT-cat"}
    shown = compact_table(table, values, ["full", "worse"], "full", labels, rivals=("bert",)).set_index("model")
    worse = shown.loc["TK small"]
    assert worse["DL19 p vs BM25"].endswith("*") and worse["DL19 vs BM25"] == "below", "significant, but below"
    assert worse["DL19 vs BERT-cat"] == "below" and worse["DL19 p vs BERT-cat"].endswith("*")
    assert shown.loc["TK", "DL19 vs BM25"] in ("above", "no difference")
    costs = compact_costs(shown.reset_index(), "TK", 1000.0, 100, rival="BERT-cat").iloc[0]
    assert not costs["DL19 above BM25"], "a significant difference below BM25 is not 'above'"
    assert costs["DL19 vs rival"].startswith("below (p 0.0") and costs["DL19 vs rival"].endswith("*)")


def test_the_ladder_verdict_measures_each_tk_against_bert_cat_in_both_regimes() -> None:
    table = pd.DataFrame(
        [{"model": "bert", "regime": "whole", "ms_100": 1000.0},
         {"model": "tk", "regime": "whole", "ms_100": 500.0},
         {"model": "tk", "regime": "stored", "ms_100": 150.0},
         {"model": "tk", "regime": "stored", "ms_100": 100.0}]
    )  # fmt: skip
    row = ladder_verdict(table, ["tk"], "bert", LABELS).iloc[0].to_dict()
    assert row["whole: × BERT-cat"] == 2.0 and row["whole: ≥ 5×"] == "no"
    assert row["stored ms for 100"] == 100.0 and row["stored: × BERT-cat"] == 10.0 and row["stored: ≥ 5×"] == "yes"
    compact = pd.concat([table, pd.DataFrame([{"model": "tk-d32", "regime": "stored", "ms_100": 50.0}])])
    row = ladder_verdict(compact, ["tk-d32"], "bert", LABELS).iloc[0].to_dict()
    assert math.isnan(row["whole ms for 100"]) and row["whole: ≥ 5×"] == "—" and row["stored: × BERT-cat"] == 20.0


def test_the_estimated_latencies_are_named_by_model_regime_and_count() -> None:
    table = pd.DataFrame(
        [{"model": "bert", "regime": "whole", "measured_10": True, "measured_100": False},
         {"model": "tk", "regime": "stored", "measured_10": True, "measured_100": True},
         {"model": "tk", "regime": "whole", "measured_10": False, "measured_100": False}]
    )  # fmt: skip
    assert estimated(table, {"bert": "BERT-cat"}) == ["BERT-cat whole at 100", "tk whole at 10", "tk whole at 100"]
    rows = [{"model": "p", "regime": "stored", "dtype": dtype, "measured_10": False} for dtype in ("float16", "int8")]
    indexes = pd.DataFrame(rows)
    assert estimated(indexes, {}) == ["p stored float16 at 10", "p stored int8 at 10"]
    assert estimated(table.iloc[[1]], {}) == []


def test_committed_cost_tables_are_read_with_their_device_and_date(tmp_path: Path) -> None:
    assert committed_regimes(tmp_path, LABELS).empty
    real = sorted((Path(__file__).parents[2] / "benchmarks" / "results" / "regimes").glob("*.json"))
    assert real, "the H100's cost table is committed"
    (tmp_path / real[0].name).write_text(real[0].read_text())
    table = committed_regimes(tmp_path, {"tk2": "TK-2"})
    assert table["device"].str.contains("H100").all() and set(table["regime"]) == {"whole", "stored"}
    tk2 = table[(table["model"] == "TK-2") & (table["index"] == "int8")].iloc[0]
    assert tk2["bytes / passage"] > 0 and tk2["ms for 1,000"] > 0
    assert tk2["peak GPU MiB"] > 0  # the H100's file measured the memory
    older = json.loads(real[0].read_text())
    for row in older["rows"]:
        del row["peak_memory_mb"]
    (tmp_path / real[0].name).write_text(json.dumps(older))
    assert committed_regimes(tmp_path, {})["peak GPU MiB"].isna().all()  # a file from before it


def test_the_gpu_memory_column_takes_a_stored_models_cheaper_index_and_the_rest_run_whole() -> None:
    committed = pd.DataFrame(
        [{"device": "H100", "model": "TK", "regime": "whole", "peak GPU MiB": 800.0},
         {"device": "H100", "model": "TK", "regime": "stored", "peak GPU MiB": 150.0},
         {"device": "H100", "model": "TK", "regime": "stored", "peak GPU MiB": 140.0},
         {"device": "H100", "model": "BERT-cat", "regime": "whole", "peak GPU MiB": 900.0}]
    )  # fmt: skip
    shown = {"tk": "TK", "bert-cat": "BERT-cat", "tilde": "TILDE"}
    memory = gpu_memory(committed, shown, ["tk", "tilde"])
    column = memory["peak GPU MiB (H100)"]
    assert column["TK"] == 140.0 and column["BERT-cat"] == 900.0 and math.isnan(column["TILDE"])
    assert gpu_memory(committed.iloc[:0], shown, []).empty


def test_the_resident_table_sets_each_stored_model_beside_bert_cat_run_whole(tmp_path: Path) -> None:
    def row(model: str, regime: str, index: str, ms: float) -> dict:
        return {"device": "H200", "date": "2026-11-27", "model": model, "regime": regime, "index": index,
                "ms for 100": 1.0, "ms for 1,000": ms}  # fmt: skip

    committed = pd.DataFrame(
        [row("BERT-cat", "whole", "—", 80.0), row("TK", "whole", "—", 100.0), row("TK", "stored", "float16", 160.0),
         row("TK", "stored", "int8", 130.0), row("TK", "resident", "float16", 10.0),
         row("TK", "resident", "int8", 16.0)]
    )  # fmt: skip
    table = resident_table(committed, "BERT-cat")
    assert table["model"].tolist() == ["TK"]  # BERT-cat stores nothing
    tk = table.iloc[0]
    assert tk["whole (ms for 1,000)"] == 100.0 and tk["stored (ms for 1,000)"] == 130.0
    assert tk["resident (ms for 1,000)"] == 10.0 and tk["resident index"] == "float16"
    assert tk["× BERT-cat whole"] == 8.0
    assert resident_table(committed[committed["regime"] != "resident"], "BERT-cat").empty
    real = Path(__file__).parents[2] / "benchmarks" / "results" / "regimes" / "nvidia-h200-2026-11-27.json"
    (tmp_path / real.name).write_text(real.read_text())
    measured = resident_table(committed_regimes(tmp_path, {"bert-cat": "BERT-cat"}), "BERT-cat")
    assert "tk-bert6" in set(measured["model"]) and (measured["× BERT-cat whole"] > 0).all()


@pytest.mark.parametrize("subspaces", [4, 3])  # 3: subspaces of 3, 3 and 2 of the 8 numbers
def test_a_stored_run_scores_every_candidate_as_the_model_does_and_a_pq_index_as_its_centroids(
    tmp_path: Path, subspaces: int
) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    run = stored_run(model, words, QUERIES, FIRST_STAGE, index, batch_size=2, progress=False)
    assert {qid: sorted(scores) for qid, scores in run.items()} == {"q1": ["p1", "p2", "p3"], "q2": ["p3", "p4"]}
    for qid, scores in run.items():
        pids = sorted(scores)
        direct = direct_scores(model, words, QUERIES[qid], [TEXTS[p] for p in pids])
        torch.testing.assert_close(torch.tensor([scores[p] for p in pids]), direct, atol=2e-3, rtol=2e-3)
    vectors = np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32)
    quantiser = fit_quantiser(vectors, subspaces, iterations=3)
    codes = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "pq", PQ, progress=False, quantiser=quantiser)
    quantised = stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False)
    query = words.encode([QUERIES["q1"]], QUERY_MAX_LENGTH)
    with torch.no_grad():
        expected = model.score_stored(*model.encode_query(*query), *codes.gather(["p1", "p2", "p3"]))
    torch.testing.assert_close(torch.tensor([quantised["q1"][p] for p in ("p1", "p2", "p3")]), expected)
    assert quantised != run, "the centroids are not the model's own vectors"

    def never_decoded(pids: object) -> None:
        raise AssertionError("a TK reading a pq index must score from its codes, not decode them")

    codes.gather = never_decoded  # the codes-only path is taken: it never calls gather
    assert stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False) == quantised
    del codes.gather
    model.scores_from_match = False  # the same index read decoded instead of from its codes: the same scores
    decoded = stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False)
    del model.scores_from_match
    for qid, scores in quantised.items():
        torch.testing.assert_close(torch.tensor(list(scores.values())), torch.tensor(list(decoded[qid].values())))
    timed = TimedQueries(FIRST_STAGE, QUERIES, TEXTS, ["q1"])
    rows = cost_rows("tk-pq", model, words, timed, Timing([2], repetitions=1), tmp_path / "timed", (PQ,), whole=False,
                     quantiser=quantiser)  # fmt: skip
    assert [(row["regime"], row["dtype"]) for row in rows] == [("stored", PQ)]
    pieces = sum(len(TEXTS[pid].split()) for pid in FIRST_STAGE["q1"])  # q1's three candidates are indexed
    assert rows[0]["bytes_per_passage"] == pytest.approx((pieces * subspaces + 4 * 8) / 3)
    assert rows[0]["vectors_per_passage"] == pytest.approx(pieces / 3), "every piece of a TK's passage is stored"
    with pytest.raises(KeyError, match="'q9' of the first-stage run has no text"):
        stored_run(model, words, QUERIES, {"q9": {"p1": 1.0}}, index, batch_size=2, progress=False)


def test_a_sparse_tk_scores_its_pq_index_of_kept_terms_from_the_codes_as_tk_does(tmp_path: Path) -> None:
    """TK-Sparse's gate keeps a term or removes it, and the kept terms score as TK's: its ``pq`` index, of the kept
    terms alone, is scored from the codes' match matrix (never decoded) as from the decoded vectors, to float
    rounding; the float16 index read through the same quantiser (``Requantised``) ranks the same."""
    from lib.experiments.compact_tk import Requantised
    from lib.models.tk import TKConfig
    from lib.models.tk_sparse import TKSparse

    _, words = tk_and_words(TEXTS)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(words), 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8))
    model.eval()
    ids, mask = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        _, scores = model._gate_inputs(ids, mask)
        model.threshold.fill_(float(scores[mask.bool()].median()))  # about half the terms removed
    quantiser = fit_quantiser(np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32), 4, iterations=3)
    codes = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "pq", PQ, progress=False, quantiser=quantiser)
    assert 0 < int(codes.offsets[-1]) < int(mask.sum()), "the removed terms are not stored"
    quantised = stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False)

    def never_decoded(pids: object) -> None:
        raise AssertionError("a sparse TK reading a pq index must score from its codes")

    codes.gather = never_decoded
    assert stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False) == quantised
    del codes.gather
    model.scores_from_match = False  # the same index read decoded, scored as stored vectors
    decoded = stored_run(model, words, QUERIES, FIRST_STAGE, codes, batch_size=3, progress=False)
    del model.scores_from_match
    plain = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "f16", progress=False)
    assert int(plain.offsets[-1]) == int(codes.offsets[-1]), "the same kept terms in every dtype"
    again = stored_run(model, words, QUERIES, FIRST_STAGE, Requantised(plain, quantiser), batch_size=3,
                       progress=False)  # fmt: skip
    exact = stored_run(model, words, QUERIES, FIRST_STAGE, plain, batch_size=3, progress=False)
    for qid, scores in quantised.items():
        values = torch.tensor([scores[pid] for pid in sorted(scores)])
        torch.testing.assert_close(values, torch.tensor([decoded[qid][pid] for pid in sorted(scores)]))
        torch.testing.assert_close(values, torch.tensor([again[qid][pid] for pid in sorted(scores)]),
                                   atol=2e-3, rtol=2e-3)  # fmt: skip
    assert quantised != exact, "the centroids are not the model's own directions"
