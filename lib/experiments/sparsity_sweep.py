"""Chapter 8's slides 31–32: TK-Sparse's removed share swept, against a stopword list applied before TK.

TK-Sparse (:mod:`lib.models.tk_sparse`) learns which passage words to drop; the book trains it to drop a target share
of them (the authors weigh an L1 penalty instead, which acted as a switch at book scale). Slide 32 reports that it
removes 20–40 % of the words without losing effectiveness; slide 31's baseline is the classic one, a stopword list
removed from the text before the model. :func:`sparsity_sweep` trains TK-Sparse once per removal target of the
lecture settings on chapter 2's protocol and TK-2's schedule (:func:`run_model`, a run named
``tk2-sparse-target-<t>``; the module default target is chapter 8's own ``tk2-sparse``, passed in, not trained again)
and :func:`stopword_baseline` trains TK-2 on texts without NLTK's stopwords
(:class:`lib.representations.stopwords.StopwordRemoving`, the run ``tk2-stopwords``). Each row: the share of word
occurrences a model removes from the **validation** passages (first 200 words each, as the model reads them, at the
gate's running threshold), its best validation value, and each test year's nDCG@10 re-ranking every candidate.
:func:`chosen_target` picks the target on validation alone: the sparsest within :data:`VALIDATION_TOLERANCE` of TK-2.

``python -m lib.experiments.sparsity_sweep --profile book --targets 0.3 0.5 --gate-rates 1e-4 1e-3`` decides the
sweep's settings on validation alone (:func:`probe`): TK-Sparse trained to each target under each gate rate on
chapter 2's protocol and TK-2's schedule, stopped where chapter 8 stops it (``--whole-schedule``: all of it), **no
test year scored**; each run's best validation value, its step, the share of the validation passages' terms removed
at that checkpoint and at every validation go to ``artifacts/<profile>/setting-probe/sparsity/results.csv`` (each
run's history beside it), the evidence :mod:`lib.core.decisions` cites. ``--model tk-bert6-sparse --stop-at 200``
probes the same gate on TK-BERT-6 (chapter 3's sparse compact TK) on its own schedule, cut at a step
(``setting-probe/sparsity-tk-bert6-sparse/``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from lib.analyses.stopword_gate import gate_occurrences
from lib.core.atomic import write_csv
from lib.core.profiles import TrainingSettings
from lib.core.run_context import RunContext, run_context
from lib.experiments import artifacts, model_setup
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.model_runs import ModelResult, RunVariant, run_model, train_on_protocol
from lib.experiments.model_setup import Representations
from lib.experiments.setting_probe import PROBE_FOLDER
from lib.experiments.tk_choice import is_sparse
from lib.models.tk import TKConfig, width_for
from lib.models.tk_sparse import GATE_LR, REMOVAL_TARGET, TKSparse
from lib.representations.stopwords import NLTK_ENGLISH_STOPWORDS, StopwordRemoving
from lib.representations.text import DOC_MAX_LENGTH, tokenize


def validation_texts(protocol: Protocol) -> list[str]:
    """The passages of the validation candidates, in pid order: the texts the removed shares are measured on."""
    pids = sorted({pid for candidates in protocol.validation.run.values() for pid in candidates})
    return [protocol.texts[pid] for pid in pids]


def _row(label: str, target: float | None, removed: float, results: Mapping[str, ModelResult]) -> dict[str, Any]:
    first = next(iter(results.values()))
    row: dict[str, Any] = {
        "model": label,
        "target": target,
        "removed (validation passages)": removed,
        "validation": first.training.best_metric if first.training is not None else float("nan"),
    }
    row |= {f"{name.upper()} nDCG@10": result.metrics_at_full_depth["nDCG@10"] for name, result in results.items()}
    return row


@dataclass(frozen=True)
class Sweep:
    """:func:`sparsity_sweep`'s result: its ``table`` (a row per removal target) and each target's trained TK-Sparse
    (``models``, its validated best checkpoint), e.g. the chosen target's for slide 33's words."""

    table: pd.DataFrame
    models: dict[float, TKSparse]


def sparsity_sweep(
    targets: Sequence[float],
    protocol: Protocol,
    representations: Representations,
    settings: TrainingSettings,
    context: Any,
    default: Mapping[str, ModelResult],
    stop_at: int | None = None,
) -> Sweep:
    """One row per removal target of ``targets`` (module docstring) and each target's trained model; ``default``: the
    results of the ``tk2-sparse`` run at the module's target (:data:`REMOVAL_TARGET`), used for that target.
    ``context`` as :func:`run_model`'s; ``stop_at``: the last step each target trains (:class:`RunVariant`; ``None``:
    the whole schedule)."""
    texts = validation_texts(protocol)
    rows, models = [], {}
    for target in targets:
        if target == REMOVAL_TARGET:
            results = default
        else:
            torch.manual_seed(context.seed)
            config = TKConfig(num_layers=2, **width_for(representations.embeddings.shape[1]))
            model = TKSparse(representations.embeddings, config=config, removal_target=target)
            start = (model, f"TK-Sparse, target {target:g}")
            variant = RunVariant(name=f"target-{target:g}", start=start, stop_at=stop_at)
            results = run_model("tk2-sparse", protocol, representations, settings, context, variant=variant)
        trained = models[target] = next(iter(results.values())).training.model
        removed = gate_occurrences(trained, representations.vocabulary, texts, DOC_MAX_LENGTH)["removed"].mean()
        rows.append(_row("TK-Sparse", target, float(removed), results))
    return Sweep(pd.DataFrame(rows), models)


def stopword_share(texts: Sequence[str], stopwords: frozenset[str] = frozenset(NLTK_ENGLISH_STOPWORDS)) -> float:
    """The share of word occurrences (the first 200 words of each text) that ``stopwords`` lists."""
    words = [word for text in texts for word in tokenize(text)[:DOC_MAX_LENGTH]]
    return sum(word in stopwords for word in words) / max(len(words), 1)


def stopword_baseline(
    protocol: Protocol,
    representations: Representations,
    settings: TrainingSettings,
    context: Any,
    stop_at: int | None = None,
) -> dict[str, Any]:
    """Slide 31's baseline: TK-2 trained and tested on texts without NLTK's stopwords (the run ``tk2-stopwords``),
    as a row of :func:`sparsity_sweep`'s table (its λ empty, its removed share the list's share of the words);
    ``stop_at`` as :func:`sparsity_sweep`'s."""
    variant = RunVariant(name="stopwords", tokenizer=StopwordRemoving(representations.vocabulary), stop_at=stop_at)
    results = run_model("tk2", protocol, representations, settings, context, variant=variant)
    return _row("TK-2, stopword list removed", None, stopword_share(validation_texts(protocol)), results)


def run_names(targets: Sequence[float]) -> list[str]:
    """The runs of the sweep's table in its order: chapter 2's TK-2, the stopword baseline, TK-Sparse at each removal
    target."""
    sparse = ["tk2-sparse" if target == REMOVAL_TARGET else f"tk2-sparse-target-{target:g}" for target in targets]
    return ["tk2", "tk2-stopwords", *sparse]


#: How far (validation nDCG@10) below TK-2 a TK-Sparse may be for its removal target to be chosen.
VALIDATION_TOLERANCE = 0.01


def chosen_target(sweep: pd.DataFrame, reference: float, tolerance: float = VALIDATION_TOLERANCE) -> float:
    """The removal target chosen on validation alone: among the sweep's targets whose best validation value is at
    most ``tolerance`` below ``reference`` (TK-2's, which removes nothing), the one that removes the largest share of
    the validation passages' terms — the point of a gate is to remove what the ranking does not need — the smaller
    target on a tie; with none that close, the target with the best validation value."""
    rows = sweep.dropna(subset=["target"])
    close = rows[rows["validation"] >= reference - tolerance]
    if close.empty:
        return float(rows.sort_values(["validation", "target"], ascending=[False, True])["target"].iloc[0])
    order = ["removed (validation passages)", "target"]
    return float(close.sort_values(order, ascending=[False, True])["target"].iloc[0])


def probe(
    context: RunContext,
    targets: Sequence[float],
    gate_rates: Sequence[float] = (GATE_LR,),
    progress: bool = True,
    whole_schedule: bool = False,
    model_name: str = "tk2-sparse",
    stop_at: int | None = None,
) -> pd.DataFrame:
    """TK-Sparse trained under every λ of ``weights`` and gate rate of ``gate_rates`` (module docstring), validated
    only: one row per run — ``λ``, ``gate_lr``, ``best_step``, ``best_validation``, ``removed_at_best`` (the share of
    the validation candidates' terms removed at the chosen checkpoint), ``removed_by_validation`` (at each
    validation, ``step: share``), ``steps``, ``training_minutes`` — written to ``results.csv`` in the probe's folder.
    ``whole_schedule``: train TK-2's whole schedule instead of stopping where chapter 8 does (its own folder).
    ``model_name``: another registry TK with the gate (``tk-bert6-sparse``: its own schedule and rates, cut at
    ``stop_at``; its own folder)."""
    if not targets or not gate_rates:
        raise ValueError("parameters 'targets' and 'gate_rates' must each hold at least one value")
    if not is_sparse(model_name):
        raise ValueError(f"parameter 'model_name' must name a TK with TK-Sparse's gate (…-sparse), got {model_name!r}")
    profile, seed = context.profile, context.seed
    settings, protocol_seed, protocol = artifacts.training_protocol(profile)
    representations = model_setup.prepare_representations(context.with_seed(protocol_seed), settings,
                                                          with_small_bert=False)  # fmt: skip
    name = "sparsity-whole-schedule" if whole_schedule else "sparsity"
    folder, rows = context.out / (name if model_name == "tk2-sparse" else f"sparsity-{model_name}"), []
    if model_name == "tk2-sparse" and stop_at is None:
        stop_at = None if whole_schedule else profile.lecture.stop_at.get("tk2-sparse")
    for gate_rate in gate_rates:
        for target in targets:
            model, tokenizer = model_setup.build_model(model_name, representations, seed)
            model.removal_target = target
            training = model_setup.training_config(model_name, settings, seed, str(context.device))
            training = dataclasses.replace(
                training, stop_at=stop_at, progress=progress,
                learning_rates={**training.learning_rates, "gate_lr": gate_rate},
            )  # fmt: skip
            run_folder = folder / f"gate-{gate_rate:g}" / f"target-{target:g}"
            result = train_on_protocol(model, tokenizer, protocol, settings, seed, training, run_folder)
            history = result.history
            write_csv(run_folder / "history.csv", history)
            best = history[history["step"] == result.best_step].iloc[0]
            rows.append({
                "target": target, "gate_lr": gate_rate, "best_step": result.best_step,
                "best_validation": round(float(result.best_metric), 4),
                "removed_at_best": round(float(best["removed"]), 4),
                "removed_by_validation": " ".join(f"{int(r.step)}: {r.removed:.3f}" for r in history.itertuples()),
                "steps": result.steps, "training_minutes": round(float(history["seconds"].max()) / 60, 1),
            })  # fmt: skip
            print(f"[sparsity-probe] {rows[-1]}", flush=True)
    table = pd.DataFrame(rows)
    write_csv(folder / "results.csv", table)
    return table


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """The command line (module docstring): the probe of :func:`probe`, its table printed."""
    parser = argparse.ArgumentParser(description="TK-Sparse's λ and gate rate decided on validation alone.")
    parser.add_argument("--profile", default="book")
    parser.add_argument("--targets", nargs="+", type=float, required=True, help="the removal targets to train")
    parser.add_argument("--gate-rates", nargs="+", type=float, default=[GATE_LR], help=f"default: {GATE_LR:g}")
    parser.add_argument("--whole-schedule", action="store_true", help="train all of TK-2's steps, not chapter 8's")
    parser.add_argument("--model", default="tk2-sparse", help="the registry TK with the gate (default: tk2-sparse)")
    parser.add_argument("--stop-at", type=int, default=None, help="the last step trained (default: chapter 8's)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--device", default="auto")
    arguments = parser.parse_args(argv)
    context = run_context(PROBE_FOLDER, arguments.profile, arguments.seed, arguments.device)
    table = probe(context, arguments.targets, arguments.gate_rates, whole_schedule=arguments.whole_schedule,
                  model_name=arguments.model, stop_at=arguments.stop_at)  # fmt: skip
    print(table.to_string(index=False))
    return table


if __name__ == "__main__":
    main()


__all__ = [
    "VALIDATION_TOLERANCE", "Sweep", "chosen_target", "main", "probe", "run_names", "sparsity_sweep",
    "stopword_baseline", "stopword_share", "validation_texts",
]  # fmt: skip
