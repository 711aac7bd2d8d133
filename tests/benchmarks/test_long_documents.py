"""``python -m benchmarks.long_documents`` on the CPU: a row per model and setting, documents per ms measured."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import long_documents
from benchmarks.gpu_check import build_extra
from lib.core.profiles import get_profile
from lib.models.long_bert import MAXP_STRIDE


def test_every_long_document_model_is_timed(converted, tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    args = ["--device", "cpu", "--documents", "4", "--batch-size", "2", "--ks", "1", "--repetitions", "1"]
    assert long_documents.main([*args, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [row["model"] for row in result["rows"]] == ["firstp", "maxp", "idcm (k = 1)", "idcm (k = all)", "tkl"]
    assert all(row["documents_per_ms"] > 0 and row["documents"] == 4 for row in result["rows"])
    assert result["device"] and result["environment"]["torch"]
    long = get_profile("book").long  # the MaxP chapter 9 reads, not the class's default stride
    assert result["settings"] == {"first_pieces": long.first_pieces, "window": long.window, "stride": long.stride}
    maxp = build_extra("maxp", 3000)
    assert (maxp.size, maxp.stride) == (long.window, long.stride) != (maxp.size, MAXP_STRIDE)
