"""A setting re-decided on validation alone (``lib.experiments.setting_probe``): each value trained, only the
validation set scored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from lib.core.profiles import get_profile
from lib.core.run_context import run_context
from lib.experiments import distillation_protocol, model_setup, setting_probe
from lib.experiments.setting_probe import parse_value, probe, value_label, with_setting
from lib.representations.text import Vocabulary
from lib.training import pairwise
from tests.experiments.test_distillation_protocol import protocol  # noqa: F401  (fixture)
from tests.experiments.test_distillation_set import corpus, index  # noqa: F401  (the real index slice)


def test_values_parse_and_label_as_the_command_line_gives_them() -> None:
    assert [parse_value(text) for text in ("none", "None", "1e-3", "64", "glove-6b-50d")] == [
        None, None, 1e-3, 64, "glove-6b-50d",
    ]  # fmt: skip
    assert [value_label(value) for value in (None, 1e-3, 64, "x")] == ["none", "0.001", "64", "x"]


def test_with_setting_sets_none_too_and_refuses_an_unknown_setting() -> None:
    book = get_profile("book").training
    assert book.word_learning_rate == 1e-3
    assert with_setting(book, "word_learning_rate", None).word_learning_rate is None  # replace() would keep 1e-3
    with pytest.raises(ValueError, match="parameter 'setting' is 'learning_rat'"):
        with_setting(book, "learning_rat", 1.0)


def test_bad_arguments_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    context = run_context(setting_probe.PROBE_FOLDER, "smoke", 42, "cpu")
    with pytest.raises(ValueError, match="'values' and 'models'"):
        probe(context, "word_learning_rate", [], ["tk2"])
    with pytest.raises(ValueError, match="'bi-encoder' is zero-shot"):
        probe(context, "word_learning_rate", [1e-3], ["bi-encoder"])


@pytest.mark.usefixtures("converted", "one_torch_thread")
def test_each_value_trains_and_only_the_validation_queries_are_ever_scored(
    protocol: distillation_protocol.Protocol,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    words = Vocabulary.build(list(protocol.texts.values())[:200])
    representations = model_setup.Representations(words, torch.randn(len(words), 8), Path(), None)
    monkeypatch.setattr(model_setup, "prepare_representations", lambda *args, **kwargs: representations)
    monkeypatch.setattr(distillation_protocol, "prepare_protocol", lambda *args, **kwargs: protocol)
    monkeypatch.setattr(setting_probe.artifacts, "book_index", lambda profile: tmp_path)
    scored: list[set[str]] = []
    real_scoring = pairwise.score_candidates

    def recorded(model: Any, tokenizer: Any, queries: Any, texts: Any, run: Any, **kwargs: Any) -> Any:
        scored.append(set(run))
        return real_scoring(model, tokenizer, queries, texts, run, **kwargs)

    monkeypatch.setattr(pairwise, "score_candidates", recorded)
    rates: list[dict[str, float]] = []
    real_config = model_setup.training_config
    monkeypatch.setattr(
        model_setup,
        "training_config",
        lambda *args: rates.append(real_config(*args).learning_rates) or real_config(*args),
    )
    context = run_context(setting_probe.PROBE_FOLDER, "smoke", 42, "cpu")
    table = probe(context, "word_learning_rate", [1e-3, None], ["knrm"], progress=False)
    assert list(table["word_learning_rate"]) == ["0.001", "none"] and list(table["model"]) == ["knrm", "knrm"]
    assert rates == [{"embedding_lr": 1e-3, "other_lr": 1e-3}, {}]  # one rate, then the paper's groups
    assert (table["validation_set"] == "dl21").all() and (table["best_step"] > 0).all()
    assert scored and all(queries <= set(protocol.validation.queries) for queries in scored), "a test year was scored"
    written = pd.read_csv(tmp_path / "smoke" / "setting-probe" / "word_learning_rate" / "results.csv")
    assert written["best_validation"].tolist() == table["best_validation"].tolist()
    for label in ("0.001", "none"):
        history = tmp_path / "smoke" / "setting-probe" / "word_learning_rate" / label / "knrm" / "history.csv"
        assert len(pd.read_csv(history)) >= 1
