"""The settings a chapter ran with, recorded beside its results and read back by later chapters."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib.core.atomic import write_json
from lib.core.profiles import TrainingSettings


def write_settings(path: Path, settings: TrainingSettings, seed: int) -> None:
    """Record the settings a chapter ran with (JSON, atomically)."""
    write_json(path, {"seed": seed, **json.loads(json.dumps(dataclasses.asdict(settings)))})


def read_settings(record: Mapping[str, Any]) -> tuple[TrainingSettings, int]:
    """The settings and seed of a record :func:`write_settings` wrote (JSON lists back to tuples).

    A key that is not a :class:`TrainingSettings` field, or a missing seed, is a ``ValueError``.
    """
    fields = {item.name: item for item in dataclasses.fields(TrainingSettings)}
    if "seed" not in record:
        raise ValueError("the settings record has no 'seed'")
    unknown = sorted(set(record) - set(fields) - {"seed"})
    if unknown:
        raise ValueError(f"the settings record has unknown setting(s) {unknown}")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in record.items() if key != "seed"}
    return TrainingSettings(**values), int(record["seed"])
