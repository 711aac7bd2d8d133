"""Cold reads' shared pieces (``lib.evaluation.cold_reads``): the projection and the reader of committed results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lib.evaluation.cold_reads import (
    COLBERTV2_MSMARCO,
    COLUMNS,
    GIB,
    MSMARCO_PASSAGES,
    PROJECTED,
    STATES,
    committed_cold_reads,
    projected_bytes,
)


def committed(folder: Path, name: str, date: str, counts: list[int]) -> None:
    """A result file as ``python -m benchmarks.cold_reads`` writes it: one model, every state."""
    states = {"warm": 1.0, "cold": 4.0, "cold-random": 2.0, "cold-prefetched": 1.5}
    entry = {
        "name": "tk-bert6-pq", "model": "tk-bert6", "dtype": "pq", "passages": 1000,
        "projected_msmarco_bytes": 3 * GIB,
        **{
            state: {**{f"ms_{c}": factor * c for c in counts}, **({} if state == "warm" else {
                f"over_warm_{c}": factor for c in counts})}
            for state, factor in states.items()
        },
    }  # fmt: skip
    result = {"device": "CPU", "environment": {"date": f"{date}T10:00:00Z"}, "clock": {"precision": "float32"},
              "models": [entry]}  # fmt: skip
    (folder / name).write_text(json.dumps(result))


def test_every_committed_file_gives_a_row_per_model_and_state(tmp_path: Path) -> None:
    committed(tmp_path, "a.json", "2026-11-28", [100, 1000])
    committed(tmp_path, "b.json", "2026-11-29", [100])
    frame = committed_cold_reads(tmp_path, labels={"tk-bert6-pq": "TK-BERT-6 (pq)"})
    assert list(frame.columns) == [
        *COLUMNS, "ms for 100", "ms for 1,000", "cold / warm for 100", "cold / warm for 1,000", PROJECTED,
    ]  # fmt: skip
    assert frame["state"].tolist() == list(STATES) * 2 == ["warm", "cold", "cold-random", "cold-prefetched"] * 2
    assert set(frame["precision"]) == {"float32"}
    assert set(frame["model"]) == {"TK-BERT-6 (pq)"} and frame["date"].tolist()[::4] == ["2026-11-28", "2026-11-29"]
    first = frame.iloc[:4]
    assert first["ms for 1,000"].tolist() == [1000.0, 4000.0, 2000.0, 1500.0]
    assert math.isnan(first["cold / warm for 100"].iloc[0]) and first["cold / warm for 100"].iloc[1] == 4.0
    assert frame[PROJECTED].tolist() == [3.0] * 8
    assert frame.iloc[4:]["ms for 1,000"].isna().all(), "a count the file did not time is NaN"


def test_no_committed_file_gives_an_empty_frame_with_its_columns(tmp_path: Path) -> None:
    frame = committed_cold_reads(tmp_path, counts=(100,))
    assert frame.empty and list(frame.columns) == [*COLUMNS, "ms for 100", "cold / warm for 100", PROJECTED]


def test_the_projection_is_bytes_per_passage_times_ms_marco_plus_the_codebooks() -> None:
    assert projected_bytes(100.0) == 100.0 * 8_841_823 == 100.0 * MSMARCO_PASSAGES
    assert projected_bytes(100.0, codebook_bytes=65536, passages=10) == 1000.0 + 65536
    assert COLBERTV2_MSMARCO["bytes_per_passage"] * MSMARCO_PASSAGES == pytest.approx(25 * GIB)
    with pytest.raises(ValueError, match="passages >= 1"):
        projected_bytes(1.0, passages=0)
