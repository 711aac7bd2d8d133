"""A setting re-decided on validation alone: the same models trained under each value, compared on validation only.

``python -m lib.experiments.setting_probe --profile book --setting word_learning_rate --values 1e-3 none
--models knrm conv-knrm tk1 tk2 tk3`` trains each model of ``--models`` once per value of ``--setting`` (a field of
the profile's ``training`` section; ``none`` is ``None``, e.g. the paper's learning-rate groups) on chapter 2's
distillation protocol and schedule, validated and early-stopped on the profile's validation set (DL21; dev-small
for ``paper``), and writes what each reached there into ``artifacts/<profile>/setting-probe/<setting>/results.csv``
(model, value, best step, best validation value, steps, training minutes summed over resumptions), each run's
validation history beside it. Runs resume from their checkpoints, so a second call with more models trains only
the new ones. **No test year is scored**: the protocol's test sets are never re-ranked, so the record of
:mod:`lib.core.decisions` can only cite validation. It needs chapter 1's index; the teacher's encodings are
shared with chapter 2 (computed here when chapter 2 has not run yet).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd

from lib.core.atomic import write_csv
from lib.core.profiles import TrainingSettings
from lib.core.run_context import RunContext, run_context
from lib.experiments import artifacts, distillation_protocol, model_runs, model_setup
from lib.models.registry import model_spec

#: The folder (under the profile's artifacts) a probe writes into, as a chapter's.
PROBE_FOLDER = "setting-probe"


def parse_value(text: str) -> Any:
    """A command-line value: ``none`` → ``None``, an int or float where it parses as one, else the string."""
    if text.lower() == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def value_label(value: Any) -> str:
    """A value as a folder and table label (``None`` → ``none``)."""
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def with_setting(settings: TrainingSettings, setting: str, value: Any) -> TrainingSettings:
    """``settings`` with ``setting`` set to ``value`` — ``None`` included (``replace`` would keep the profile's)."""
    if setting not in {item.name for item in dataclasses.fields(settings)}:
        raise ValueError(f"parameter 'setting' is {setting!r}, not a field of the profile's training section")
    return dataclasses.replace(settings, **{setting: value})


def probe(
    context: RunContext, setting: str, values: Sequence[Any], models: Sequence[str], progress: bool = True
) -> pd.DataFrame:
    """Train every model of ``models`` under each of ``values`` of ``setting`` (module doc): one row per run with its
    best validation value; each run's validation history is written beside ``results.csv``."""
    if not values or not models:
        raise ValueError("parameters 'values' and 'models' must each name at least one")
    for name in models:
        if model_spec(name).zero_shot:
            raise ValueError(f"parameter 'models': {name!r} is zero-shot, it trains under no setting")
    profile, seed, folder = context.profile, context.seed, context.out / setting
    rows = []
    for value in values:
        settings = with_setting(profile.training, setting, value)
        pieces = any(model_spec(name).family == "pieces" for name in models)
        representations = model_setup.prepare_representations(
            context, settings, with_small_bert=settings.bert_cat_start == "small-bert", with_piece_vectors=pieces
        )
        protocol = distillation_protocol.prepare_protocol(
            profile, settings, seed, artifacts.book_index(profile), artifacts.teacher_folder(profile), progress
        )
        for name in models:
            model, tokenizer = model_setup.build_model(name, representations, seed)
            config = dataclasses.replace(
                model_setup.training_config(name, settings, seed, str(context.device)), progress=progress
            )
            run_folder = folder / value_label(value) / name
            result = model_runs.train_on_protocol(model, tokenizer, protocol, settings, seed, config, run_folder)
            write_csv(run_folder / "history.csv", result.history)
            rows.append(
                {
                    "model": name,
                    setting: value_label(value),
                    "validation_set": protocol.validation.name,
                    "measure": config.metric,
                    "best_step": result.best_step,
                    "best_validation": round(float(result.best_metric), 4),
                    "steps": result.steps,
                    "training_minutes": round(float(result.history["seconds"].max()) / 60, 1),
                }
            )
            print(f"[setting-probe] {setting}={value_label(value)} {name}: {rows[-1]}", flush=True)
    table = pd.DataFrame(rows)
    write_csv(folder / "results.csv", table)
    return table


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """The command line (module doc); prints the table and each value's mean over the models."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="book")
    parser.add_argument("--setting", required=True, help="a field of the profile's training section")
    parser.add_argument("--values", nargs="+", required=True, help="the values to compare ('none' for None)")
    parser.add_argument("--models", nargs="+", required=True, help="registry models to train under each value")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--device", default="auto")
    arguments = parser.parse_args(argv)
    context = run_context(PROBE_FOLDER, arguments.profile, arguments.seed, arguments.device)
    values = [parse_value(text) for text in arguments.values]
    table = probe(context, arguments.setting, values, arguments.models)
    print(table.to_string(index=False))
    print(table.groupby(arguments.setting, sort=False)["best_validation"].mean().round(4).to_string())
    return table


if __name__ == "__main__":
    main()


__all__ = ["PROBE_FOLDER", "main", "parse_value", "probe", "value_label", "with_setting"]
