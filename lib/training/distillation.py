"""Margin-MSE knowledge distillation: a student learns the score margins of a teacher.

Hofstätter, Althammer, Schröder, Sertkan, Hanbury, *Improving Efficient Neural Ranking Models with
Cross-Architecture Knowledge Distillation* (2020), §3, eq. 1: for a triple (q, d⁺, d⁻),

    L = MSE( M_s(q, d⁺) − M_s(q, d⁻),  M_t(q, d⁺) − M_t(q, d⁻) ),

the student ``M_s`` matches the teacher's *margin*, not its scores, so a student whose scores live
on another scale (TK's kernel sums, a cosine) can still learn the teacher's preferences. The
lecture names the idea on its IDCM slides (38–39).

- :func:`margin_mse` is the loss;
- :func:`teacher_triples` samples (q, d⁺, d⁻) triples from a teacher's scores of each query's
  candidates, deterministically for a seed, with the teacher's margin of each;
- :func:`teacher_groups` samples groups of a positive and several negatives the same way, and
  :func:`listwise_kl` is the listwise loss over them (a lever of the book's TK, chapter 2).

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
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from lib.core.types import Run, query_order, ranking_from_run

Triple = tuple[str, str, str]
#: (qid, d⁺, d⁻₁ … d⁻ₖ): a positive and k negatives of one query.
Group = tuple[str, ...]


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
    """How :func:`teacher_triples` and :func:`teacher_groups` sample: triples (groups) per query, where positives
    and negatives come from, the scale, and ``negatives`` per group (1: a triple)."""

    per_query: int = 16
    positive_top: int = 3
    negative_from: int = 5
    scale: float = 10.0
    random_negatives: float = 0.0
    negatives: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.random_negatives <= 1.0:
            raise ValueError(f"'random_negatives' is a fraction in [0, 1], got {self.random_negatives}")
        if self.per_query < 1 or self.positive_top < 1 or self.negatives < 1:
            raise ValueError(
                f"'per_query', 'positive_top' and 'negatives' must be >= 1, "
                f"got {self.per_query}, {self.positive_top}, {self.negatives}"
            )
        if self.negative_from <= self.positive_top:
            raise ValueError(
                f"'negative_from' ({self.negative_from}) must be below the positives (rank > {self.positive_top})"
            )


def _draw_groups(
    teacher: Run, sampling: TripleSampling, seed: int, random_passages: Run | None
) -> Iterator[tuple[str, list[str], list[float]]]:
    """``(qid, [d⁺, d⁻₁ … d⁻ₖ], [t⁺, t⁻₁ … t⁻ₖ])`` with the teacher's unscaled scores, in query order.

    The draws of :func:`teacher_triples` (``k = 1``) and :func:`teacher_groups` (``k`` =
    ``sampling.negatives``): per group a positive, then each negative and, with ``random_negatives`` above
    0, the coin that may swap it for a random passage. A group's negatives are distinct (a repeat is drawn
    again), so ``k = 1`` consumes the generator exactly as triples always did.
    """
    if sampling.random_negatives > 0 and random_passages is None:
        raise ValueError("'random_negatives' > 0 needs the teacher's scores of random passages ('random_passages')")
    for qid in sorted(teacher, key=query_order):
        ranking = ranking_from_run(teacher[qid])
        if len(ranking) < sampling.negative_from:
            continue
        positives, negatives = ranking[: sampling.positive_top], ranking[sampling.negative_from - 1 :]
        drawn = random_passages.get(qid) if random_passages is not None else None
        pool = len(negatives) if not (drawn and sampling.random_negatives > 0) else len(drawn)
        pool += len(negatives) if drawn and 0 < sampling.random_negatives < 1 else 0
        if pool < sampling.negatives:
            raise ValueError(
                f"query {qid!r} has {pool} distinct negatives to draw, fewer than 'negatives' ({sampling.negatives})"
            )
        generator = random.Random(f"triples:{seed}:{qid}")
        for _ in range(sampling.per_query):
            positive = generator.choice(positives)
            group, scores = [positive], [teacher[qid][positive]]
            while len(group) <= sampling.negatives:
                negative, source = generator.choice(negatives), teacher[qid]
                if sampling.random_negatives > 0 and generator.random() < sampling.random_negatives and drawn:
                    source, negative = drawn, generator.choice(sorted(drawn))
                if negative not in group:
                    group.append(negative)
                    scores.append(source[negative])
            yield qid, group, scores


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
    ``sampling.negatives`` must be 1 (groups of more: :func:`teacher_groups`).
    """
    if sampling.negatives != 1:
        raise ValueError(f"triples have one negative; 'negatives' is {sampling.negatives} (use teacher_groups)")
    triples: list[Triple] = []
    margins: list[float] = []
    for qid, (positive, negative), (high, low) in _draw_groups(teacher, sampling, seed, random_passages):
        triples.append((qid, positive, negative))
        margins.append(sampling.scale * (high - low))
    return triples, margins


def teacher_groups(
    teacher: Run, sampling: TripleSampling, seed: int, random_passages: Run | None = None
) -> tuple[list[Group], list[list[float]]]:
    """Groups (qid, d⁺, d⁻₁ … d⁻ₖ) of ``k = sampling.negatives`` distinct negatives, and the teacher's scaled
    scores ``scale·t`` of each passage of a group: the input of :func:`listwise_kl`.

    Drawn as :func:`teacher_triples` draws (the same ranks, random negatives and per-query seeds), so that a
    query's first group begins with its first triple and ``k = 1`` gives the triples themselves; later groups
    differ from the triples, since each group draws more negatives from the same generator.
    """
    groups: list[Group] = []
    scores: list[list[float]] = []
    for qid, group, teacher_scores in _draw_groups(teacher, sampling, seed, random_passages):
        groups.append((qid, *group))
        scores.append([sampling.scale * value for value in teacher_scores])
    return groups, scores


def listwise_kl(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Listwise distillation over a group of one positive and k negatives per query (Santhanam et al., 2022,
    ColBERTv2, §3): ``mean_q KL(softmax(t_q) ‖ softmax(s_q))`` for scores ``[queries, k + 1]``.

    Like Margin-MSE it is blind to a shift of a query's scores; unlike it, it weighs every negative of the
    group at once, and the teacher's ``scale`` acts as its inverse temperature.
    """
    if student.shape != teacher.shape or student.dim() != 2:
        raise ValueError(
            f"shapes differ or are not [queries, passages]: student {tuple(student.shape)}, "
            f"teacher {tuple(teacher.shape)}"
        )
    target = torch.log_softmax(teacher, dim=1)
    return torch.sum(target.exp() * (target - torch.log_softmax(student, dim=1)), dim=1).mean()


__all__ = ["Group", "Triple", "TripleSampling", "listwise_kl", "margin_mse", "teacher_groups", "teacher_triples"]
