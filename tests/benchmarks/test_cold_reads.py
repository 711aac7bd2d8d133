"""``python -m benchmarks.cold_reads`` times a padded index warm and cold and writes JSON (no speed assertions)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import cold_reads
from lib.evaluation.cold_reads import GIB, MSMARCO_PASSAGES, STATES
from lib.evaluation.regimes import TimedQueries
from lib.models.tk import TK, TKConfig
from lib.representations.text import Vocabulary
from lib.reranking.passage_index import READS, build_index, load_index, repeat_index

TEXTS = {"p1": "the androgen receptor", "p2": "a receptor binds androgen", "p3": "flights to vienna"}


def tiny_index(folder: Path, passages: int):
    """A TK index of :data:`TEXTS` padded with copies to ``passages``, and its real passages' count."""
    words = Vocabulary.build(list(TEXTS.values()), min_count=1)
    torch.manual_seed(0)
    model = TK(torch.randn(len(words), 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8)).eval()
    source = build_index(model, words, TEXTS, list(TEXTS), folder / "real", "int8", progress=False)
    return repeat_index(source, folder / "padded", passages), len(source)


def test_a_tiny_run_pads_the_index_and_times_every_state(converted, tmp_path: Path) -> None:
    out = tmp_path / "cold.json"
    code = cold_reads.main(
        ["--device", "cpu", "--models", "tk2", "--queries", "1", "--counts", "3", "10", "--repetitions", "1",
         "--passages", "2500", "--note", "a test", "--index-dir", str(tmp_path), "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    settings = result["settings"]
    assert settings["padding"].startswith("padded with copies, for timing only")
    assert settings["passages"] == 2500 and settings["note"] == "a test" and settings["counts"] == [3, 10]
    assert (
        settings["copies"] == math.ceil(2500 / settings["real_passages"])
        and "POSIX_FADV_DONTNEED" in settings["eviction"]
    )
    assert set(result["clock"]) >= {"device", "precision", "rule"} and "date" in result["environment"]
    [entry] = result["models"]
    assert (entry["name"], entry["model"], entry["dtype"]) == ("tk2", "tk2", "int8")
    assert entry["passages"] == 2500 and entry["encoded_passages"] == settings["real_passages"]
    assert entry["index_bytes"] > entry["bytes_per_passage"] * 2500 > 0
    assert set(settings["states"]) == set(STATES) and set(cold_reads.COLD_STATES.values()) == set(READS)
    for state in STATES:
        assert entry[state]["queries"] == 1 and all(entry[state][f"ms_{count}"] > 0 for count in (3, 10))
    assert 0 <= entry["warm"]["prefetch_ms_3"] and 0 <= entry["warm"]["prefetch_ms_10"] < entry["warm"]["ms_10"]
    for state in cold_reads.COLD_STATES:
        assert entry[state]["over_warm_10"] == pytest.approx(entry[state]["ms_10"] / entry["warm"]["ms_10"])
    projected = entry["bytes_per_passage"] * MSMARCO_PASSAGES + entry["codebook_bytes"]
    assert entry["projected_msmarco_bytes"] == pytest.approx(projected)
    assert entry["projected_msmarco_gib"] == pytest.approx(projected / GIB)
    assert result["reference"]["colbertv2"]["gib"] == 25.0 and result["reference"]["msmarco_passages"] == 8_841_823
    assert list(tmp_path.iterdir()) == [out]  # every index deleted


def test_passages_below_the_real_passages_or_below_one_are_refused_by_name(converted, tmp_path: Path, capsys) -> None:
    for passages, message in [("0", "--passages must be >= 1"), ("5", "--passages (5) must be at least the")]:
        with pytest.raises(SystemExit):
            cold_reads.main(["--passages", passages, "--models", "tk2", "--out", str(tmp_path / "x.json")])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cold_reads.main(["--models", "bert-huge", "--out", str(tmp_path / "x.json")])
    assert "unknown model 'bert-huge'" in capsys.readouterr().err
    missing = tmp_path / "no-such-folder"
    with pytest.raises(SystemExit):
        cold_reads.main(["--models", "tk2", "--index-dir", str(missing), "--out", str(tmp_path / "x.json")])
    assert f"--index-dir {missing} is not a folder" in capsys.readouterr().err


def test_served_names_choose_the_index() -> None:
    assert cold_reads.served("tk-bert6-pq") == ("tk-bert6", "pq")
    assert cold_reads.served("colbert") == ("colbert", "int8")


def test_candidates_map_to_scattered_copies_of_themselves_the_same_with_the_same_seed(tmp_path: Path) -> None:
    index, real = tiny_index(tmp_path, 30)  # 10 copies of 3 passages
    timed = TimedQueries({"q": {"p1": 3.0, "p2": 2.0, "p3": 1.0}}, {"q": "androgen"}, TEXTS, ["q"])
    run = cold_reads.spread_candidates(timed, index, real, 12, seed=0)
    mapped = sorted(run["q"], key=run["q"].get, reverse=True)  # the candidates' order: p1 p2 p3 p1 p2 p3 ...
    assert len(mapped) == 12 and [pid.split("#")[0] for pid in mapped] == ["p1", "p2", "p3"] * 4
    assert len(set(mapped)) == 12, "each repeat of a passage reads its own copy"
    assert run == cold_reads.spread_candidates(timed, index, real, 12, seed=0)
    assert run != cold_reads.spread_candidates(timed, index, real, 12, seed=1)
    for pid in mapped[:3]:
        assert all(
            torch.equal(a, b) for a, b in zip(index.gather([pid]), index.gather([pid.split("#")[0]]), strict=True)
        )
    vectors, mask = index.gather(mapped)
    for reads in cold_reads.COLD_STATES.values():
        opened = load_index(index.folder, reads)
        assert all(torch.equal(a, b) for a, b in zip(opened.gather(mapped), (vectors, mask), strict=True))


def test_eviction_drops_an_index_files_pages(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "vectors.bin").write_bytes(np.arange(200_000, dtype=np.int64).tobytes())
    (folder / "vectors.bin").read_bytes()
    before = cold_reads.resident_share([folder / "vectors.bin"])
    cold_reads.evict(folder)
    after = cold_reads.resident_share([folder / "vectors.bin"])
    if before is None:
        pytest.skip("mincore cannot be called here")
    assert before == 1.0 and 0.0 <= after <= before
    latency = cold_reads.page_read_us(folder / "vectors.bin", reads=8)
    assert set(latency) == {"evicted", "resident"} and min(latency.values()) > 0
