"""The TILDE models of chapter 6: the paper's BiQDL model and the ablation's variants (TILDE paper Table 3).

Each variant is one fine-tuning run (:func:`lib.training.tilde.train_tilde`) from the same starting
BERT on the same (query, relevant passage) pairs, differing only in its loss (eq. 7–8) and its
target vocabulary (§4.3). The paper's Table 3 rows need four of them — L_QL over the full
vocabulary, L_QL, L_DL and BiQDL over the cleaned one — and the book adds BiQDL over the full
vocabulary, so that cleaning is ablated for the paper's own loss as well.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lib.models.tilde import Tilde
from lib.models.tilde_pooled_cache import PooledCache
from lib.representations.bert import WordPieceTokenizer
from lib.training.tilde import Pair, TildeTrainingConfig, TildeTrainingResult, train_tilde


@dataclass(frozen=True)
class Variant:
    """One TILDE fine-tuning: ``loss`` (``ql``, ``dl``, ``biqdl``) over a ``vocabulary`` (``cleaned``, ``full``)."""

    loss: str
    vocabulary: str

    @property
    def label(self) -> str:
        """The loss as the paper's Table 3 writes it, with the vocabulary when it is not the cleaned one."""
        name = {"ql": "L_QL", "dl": "L_DL", "biqdl": "L_BiQDL"}[self.loss]
        return name if self.vocabulary == "cleaned" else f"{name} (full vocabulary)"


#: The paper's model (Table 2): BiQDL over the cleaned vocabulary.
MAIN_VARIANT = "biqdl"
#: Every variant of the ablation, by the name of its artifacts folder.
VARIANTS: dict[str, Variant] = {
    "biqdl": Variant("biqdl", "cleaned"),
    "ql": Variant("ql", "cleaned"),
    "dl": Variant("dl", "cleaned"),
    "ql-full": Variant("ql", "full"),
    "biqdl-full": Variant("biqdl", "full"),
}


def check_variants(names: Sequence[str]) -> list[str]:
    """``names`` as a list, the main variant first; an unknown name is a ``ValueError`` naming the parameter."""
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        raise ValueError(f"parameter 'variants' has unknown name(s) {unknown}; known: {list(VARIANTS)}")
    if MAIN_VARIANT not in names:
        raise ValueError(f"parameter 'variants' must include the paper's model {MAIN_VARIANT!r}")
    return [MAIN_VARIANT, *[name for name in dict.fromkeys(names) if name != MAIN_VARIANT]]


def train_variants(
    names: Sequence[str],
    new_model: Callable[[], Tilde],
    tokenizer: WordPieceTokenizer,
    pairs: Sequence[Pair],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    folder: str | os.PathLike,
    config: TildeTrainingConfig,
    reconstruction: Sequence[str] = (),
    pooled_cache: PooledCache | None = None,
) -> dict[str, TildeTrainingResult]:
    """Fine-tune every variant of ``names`` from a model of ``new_model()`` into ``folder/<name>`` (resumable).

    Every variant starts from the same weights (``new_model`` must build the same ones each call) and
    sees the same batches (same ``config.seed``); ``config`` is each run's schedule, with the variant's
    own loss and vocabulary. A folder that already holds a finished run with the same arguments is
    loaded, not trained again. ``reconstruction`` and ``pooled_cache`` (with a frozen encoder, the
    variants share its vectors): see :func:`lib.training.tilde.train_tilde`.
    """
    results: dict[str, TildeTrainingResult] = {}
    for name in check_variants(names):
        variant = VARIANTS[name]
        own = dataclasses.replace(config, loss=variant.loss, vocabulary=variant.vocabulary)
        folder_of_variant = Path(folder) / name
        results[name] = train_tilde(
            new_model(), tokenizer, pairs, queries, texts, folder_of_variant, own, reconstruction, pooled_cache
        )
    return results


__all__ = ["MAIN_VARIANT", "VARIANTS", "Variant", "check_variants", "train_variants"]
