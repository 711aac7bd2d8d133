"""The settings record of a chapter (``lib.experiments.settings_record``): written and read back."""

from __future__ import annotations

import json

import pytest

from lib.core.profiles import get_profile
from lib.experiments import settings_record

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


def test_settings_read_back_as_they_were_written(tmp_path):
    settings = get_profile("book").training.replace(max_steps=17)
    settings_record.write_settings(tmp_path / "settings.json", settings, seed=5)
    record = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert isinstance(record["distill_pseudo_span"], list), "JSON has no tuples"
    assert settings_record.read_settings(record) == (settings, 5)
    with pytest.raises(ValueError, match="unknown setting"):
        settings_record.read_settings({**record, "learning_rate": 1.0})
    with pytest.raises(ValueError, match="no 'seed'"):
        settings_record.read_settings({key: value for key, value in record.items() if key != "seed"})
