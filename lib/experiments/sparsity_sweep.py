"""Chapter 8's slides 31–32: TK-Sparse's weight λ swept, against a stopword list applied before TK.

TK-Sparse (:mod:`lib.models.tk_sparse`) learns which passage words to drop; the more its L1 penalty weighs (λ),
the more it drops. Slide 32 reports that it removes 20–40 % of the words without losing effectiveness; slide 31's
baseline is the classic one, a stopword list removed from the text before the model. :func:`sparsity_sweep` trains
TK-Sparse once per λ of the lecture settings on chapter 2's protocol and TK-2's schedule (:func:`run_model`, a run
named ``tk2-sparse-lambda-<λ>``; the module default λ is chapter 8's own ``tk2-sparse``, passed in, not trained
again) and :func:`stopword_baseline` trains TK-2 on texts without NLTK's stopwords
(:class:`lib.representations.stopwords.StopwordRemoving`, the run ``tk2-stopwords``). Each row: the share of word
occurrences a model removes from the **validation** passages (first 200 words each, as the model reads them), its
best validation value, and each test year's nDCG@10 re-ranking every candidate. :func:`chosen_weight` picks λ on
validation alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch

from lib.analyses.stopword_gate import gate_occurrences
from lib.core.profiles import TrainingSettings
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.model_runs import ModelResult, RunVariant, run_model
from lib.experiments.model_setup import Representations
from lib.models.tk import TKConfig, width_for
from lib.models.tk_sparse import SPARSITY_WEIGHT, TKSparse
from lib.representations.stopwords import NLTK_ENGLISH_STOPWORDS, StopwordRemoving
from lib.representations.text import DOC_MAX_LENGTH, tokenize


def validation_texts(protocol: Protocol) -> list[str]:
    """The passages of the validation candidates, in pid order: the texts the removed shares are measured on."""
    pids = sorted({pid for candidates in protocol.validation.run.values() for pid in candidates})
    return [protocol.texts[pid] for pid in pids]


def _row(label: str, weight: float | None, removed: float, results: Mapping[str, ModelResult]) -> dict[str, Any]:
    first = next(iter(results.values()))
    row: dict[str, Any] = {
        "model": label,
        "λ": weight,
        "removed (validation passages)": removed,
        "validation": first.training.best_metric if first.training is not None else float("nan"),
    }
    row |= {f"{name.upper()} nDCG@10": result.metrics_at_full_depth["nDCG@10"] for name, result in results.items()}
    return row


def sparsity_sweep(
    weights: Sequence[float],
    protocol: Protocol,
    representations: Representations,
    settings: TrainingSettings,
    context: Any,
    default: Mapping[str, ModelResult],
    stop_at: int | None = None,
) -> pd.DataFrame:
    """One row per λ of ``weights`` (module docstring); ``default``: the results of the ``tk2-sparse`` run at the
    module's λ (:data:`SPARSITY_WEIGHT`), used for that weight. ``context`` as :func:`run_model`'s; ``stop_at``: the
    last step each λ trains (:class:`RunVariant`; ``None``: the whole schedule)."""
    texts = validation_texts(protocol)
    rows = []
    for weight in weights:
        if weight == SPARSITY_WEIGHT:
            results = default
        else:
            torch.manual_seed(context.seed)
            config = TKConfig(num_layers=2, **width_for(representations.embeddings.shape[1]))
            model = TKSparse(representations.embeddings, config=config, sparsity_weight=weight)
            start = (model, f"TK-Sparse, λ = {weight:g}")
            variant = RunVariant(name=f"lambda-{weight:g}", start=start, stop_at=stop_at)
            results = run_model("tk2-sparse", protocol, representations, settings, context, variant=variant)
        trained = next(iter(results.values())).training.model
        removed = gate_occurrences(trained, representations.vocabulary, texts, DOC_MAX_LENGTH)["removed"].mean()
        rows.append(_row("TK-Sparse", weight, float(removed), results))
    return pd.DataFrame(rows)


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


def run_names(weights: Sequence[float]) -> list[str]:
    """The runs of the sweep's table in its order: chapter 2's TK-2, the stopword baseline, TK-Sparse at each λ."""
    sparse = ["tk2-sparse" if weight == SPARSITY_WEIGHT else f"tk2-sparse-lambda-{weight:g}" for weight in weights]
    return ["tk2", "tk2-stopwords", *sparse]


def chosen_weight(sweep: pd.DataFrame) -> float:
    """The λ of the sweep with the best validation value (the smaller λ on a tie): chosen on validation alone."""
    rows = sweep.dropna(subset=["λ"]).sort_values(["validation", "λ"], ascending=[False, True])
    return float(rows["λ"].iloc[0])


__all__ = ["chosen_weight", "run_names", "sparsity_sweep", "stopword_baseline", "stopword_share", "validation_texts"]
