"""The context of one run (``lib.core.run_context``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.run_context import run_context


def test_a_context_from_a_profile_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    context = run_context("99_topic", "smoke", 4, "cpu")
    assert context.profile == get_profile("smoke") and context.seed == 4 and context.device == torch.device("cpu")
    assert context.out == tmp_path / "artifacts" / "smoke" / "99_topic" and context.out.is_dir()
    assert context.with_seed(1).seed == 1 and context.with_seed(1).out == context.out
    assert context.run_path("dl19", "bm25") == paths.run_path("smoke", "dl19", "bm25")
    with pytest.raises(ValueError, match="'profile'"):
        run_context("99_topic", "huge", 0)
