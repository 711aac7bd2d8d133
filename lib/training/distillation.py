"""Margin-MSE knowledge distillation: a student learns the score margins of a teacher.

Hofstätter, Althammer, Schröder, Sertkan, Hanbury, *Improving Efficient Neural Ranking Models with
Cross-Architecture Knowledge Distillation* (2020), §3, eq. 1: for a triple (q, d⁺, d⁻),

    L = MSE( M_s(q, d⁺) − M_s(q, d⁻),  M_t(q, d⁺) − M_t(q, d⁻) ),

the student ``M_s`` matches the teacher's *margin*, not its scores, so a student whose scores live
on another scale (TK's kernel sums, a cosine) can still learn the teacher's preferences. The
lecture names the idea on its IDCM slides (38–39).

- :func:`margin_mse` is the loss;
- :func:`teacher_triples` samples (q, d⁺, d⁻) triples from a teacher's scores of each query's
  candidates, deterministically for a seed, with the teacher's margin of each.

Named choices (the paper trains on MS MARCO's own triples, which the book does not have): the
positive is drawn from the teacher's top ``positive_top`` candidates and the negative from rank
``negative_from`` down, so that a triple compares passages the teacher clearly tells apart;
``scale`` multiplies the teacher's scores (a cosine lies in [−1, 1]; ×10 gives margins of the order
of a kernel-pooling student's, as in the book's probe). ``random_negatives`` is the fraction of
triples whose negative is instead a random corpus passage, scored by the teacher too: a student that
only ever compares a query's BM25 candidates never learns that an off-topic passage is worse than
all of them, which re-ranking *all* candidates asks of it (MS MARCO's own training triples draw
their negatives from BM25's top 1,000, far deeper than the book's top 30).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from lib.core.types import Run, query_order, ranking_from_run

Triple = tuple[str, str, str]


def margin_mse(student_pos: torch.Tensor, student_neg: torch.Tensor, teacher_margin: torch.Tensor) -> torch.Tensor:
    """Margin-MSE (eq. 1 of the distillation paper): ``mean(((s⁺ − s⁻) − (t⁺ − t⁻))²)``."""
    if not student_pos.shape == student_neg.shape == teacher_margin.shape:
        raise ValueError(
            f"shapes differ: student {tuple(student_pos.shape)} / {tuple(student_neg.shape)}, "
            f"teacher margins {tuple(teacher_margin.shape)}"
        )
    return ((student_pos - student_neg) - teacher_margin).pow(2).mean()


@dataclass(frozen=True)
class TripleSampling:
    """How :func:`teacher_triples` samples: triples per query, where positives and negatives come from, the scale."""

    per_query: int = 16
    positive_top: int = 3
    negative_from: int = 5
    scale: float = 10.0
    random_negatives: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.random_negatives <= 1.0:
            raise ValueError(f"'random_negatives' is a fraction in [0, 1], got {self.random_negatives}")
        if self.per_query < 1 or self.positive_top < 1:
            raise ValueError(f"'per_query' and 'positive_top' must be >= 1, got {self.per_query}, {self.positive_top}")
        if self.negative_from <= self.positive_top:
            raise ValueError(
                f"'negative_from' ({self.negative_from}) must be below the positives (rank > {self.positive_top})"
            )


def teacher_triples(
    teacher: Run, sampling: TripleSampling, seed: int, random_passages: Run | None = None
) -> tuple[list[Triple], list[float]]:
    """Triples (qid, d⁺, d⁻) and the teacher's margins ``scale·(t⁺ − t⁻)``, from the teacher's scores.

    For each query (in query order) with at least ``negative_from`` candidates, ``per_query`` triples:
    a positive drawn uniformly from the teacher's top ``positive_top`` and a negative from rank
    ``negative_from`` (1-based) down, with a generator seeded by ``(seed, qid)`` — the same seed
    gives the same triples, whatever the other queries. Ties are ordered as trec_eval does
    (:func:`lib.core.types.ranking_from_run`). With ``sampling.random_negatives`` above 0, each
    triple's negative is, with that probability, drawn instead from ``random_passages[qid]`` (the
    teacher's scores of random corpus passages; required then; a query without any keeps its
    candidate negative). The margins of candidate negatives
    are positive or zero; a random passage the teacher prefers to the positive gives a negative margin.
    """
    if sampling.random_negatives > 0 and random_passages is None:
        raise ValueError("'random_negatives' > 0 needs the teacher's scores of random passages ('random_passages')")
    triples: list[Triple] = []
    margins: list[float] = []
    for qid in sorted(teacher, key=query_order):
        ranking = ranking_from_run(teacher[qid])
        if len(ranking) < sampling.negative_from:
            continue
        positives, negatives = ranking[: sampling.positive_top], ranking[sampling.negative_from - 1 :]
        generator = random.Random(f"triples:{seed}:{qid}")
        for _ in range(sampling.per_query):
            positive, negative = generator.choice(positives), generator.choice(negatives)
            scores = teacher[qid]
            drawn = random_passages.get(qid) if random_passages is not None else None
            if sampling.random_negatives > 0 and generator.random() < sampling.random_negatives and drawn:
                scores, negative = drawn, generator.choice(sorted(drawn))
            triples.append((qid, positive, negative))
            margins.append(sampling.scale * (teacher[qid][positive] - scores[negative]))
    return triples, margins


__all__ = ["Triple", "TripleSampling", "margin_mse", "teacher_triples"]
