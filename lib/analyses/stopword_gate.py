"""TK-Sparse's contextualised stopwords (lecture 8, slides 30–33): which passage terms its gate removes.

TK-Sparse (``lib.models.tk_sparse``) gates each contextualised passage term; a gate of 0 removes the term
from every kernel, so an index need not store it. Unlike a stopword list, the gate decides per occurrence,
in context. :func:`gate_occurrences` reads the gate over passages, :func:`stopword_table` lists the terms
removed most often and :func:`stopword_overlap` compares the removals with NLTK's English stopword list;
:func:`gate_verdict` says which of the possible outcomes that comparison is (a gate can also remove everything).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from lib.models.tk_sparse import TKSparse
from lib.representations.stopwords import NLTK_ENGLISH_STOPWORDS
from lib.representations.text import Vocabulary, tokenize


def gate_occurrences(
    model: TKSparse, vocabulary: Vocabulary, texts: Sequence[str], max_length: int, batch_size: int = 64
) -> pd.DataFrame:
    """One row per passage term occurrence (the first ``max_length`` words of each text): ``term`` (the word,
    also when the vocabulary maps it to ``[UNK]``) and whether TK-Sparse's gate ``removed`` it (gate = 0)."""
    model.eval()
    rows: list[tuple[str, bool]] = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start : start + batch_size])
            ids, mask = vocabulary.encode(batch, max_length)
            _, gate = model.gates(ids, mask)
            for text, row_gate in zip(batch, (gate > 0).tolist(), strict=True):
                rows.extend((term, not kept) for term, kept in zip(tokenize(text)[:max_length], row_gate, strict=False))
    return pd.DataFrame(rows, columns=["term", "removed"])


def stopword_table(occurrences: pd.DataFrame, top: int = 20) -> pd.DataFrame:
    """The ``top`` most often removed terms: occurrences, removals, the share removed, and whether NLTK lists it."""
    grouped = occurrences.groupby("term")["removed"].agg(occurrences="size", removed="sum")
    grouped["share removed"] = grouped["removed"] / grouped["occurrences"]
    grouped["NLTK stopword"] = grouped.index.isin(NLTK_ENGLISH_STOPWORDS)
    return grouped.sort_values(["removed", "occurrences"], ascending=False).head(top)


def stopword_overlap(occurrences: pd.DataFrame) -> dict[str, float]:
    """How TK-Sparse's removals compare with NLTK's list (slide 33), as shares of term occurrences."""
    listed = occurrences["term"].isin(NLTK_ENGLISH_STOPWORDS)
    removed = occurrences["removed"]
    return {
        "removed": float(removed.mean()),
        "NLTK stopwords": float(listed.mean()),
        "removed that are NLTK stopwords": float((removed & listed).sum() / max(int(removed.sum()), 1)),
        "NLTK stopwords removed": float((removed & listed).sum() / max(int(listed.sum()), 1)),
    }


def gate_verdict(overlap: dict[str, float]) -> str:
    """What :func:`stopword_overlap`'s shares say, as a phrase: the gate removes every word (every candidate then
    scores alike: the ranking is the first stage's), none, exactly the listed stopwords, or an overlapping set."""
    if overlap["removed"] >= 0.999:
        return (
            "removes every word: TK-Sparse has collapsed, every candidate scores alike and the ranking is the first "
            "stage's"
        )
    if overlap["removed"] <= 0.001:
        return "removes (almost) no word: no stopword list to compare"
    if min(overlap["removed that are NLTK stopwords"], overlap["NLTK stopwords removed"]) >= 0.999:
        return "removes exactly the listed stopwords"
    return "and the list overlap without being the same, as on slide 33"
