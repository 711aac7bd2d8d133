"""Documents assembled from the book's real passages, with the position of relevance known (chapter 9).

The book has long documents in TIME only (:mod:`lib.data.time_collection`: 83 queries, evaluation only) and no MS
MARCO document text. To train the long-document models of lecture 8 (slides 13, 34–40) and to test the lecture's
claim about *where* relevance sits (FirstP falls when it sits late; MaxP, TKL and IDCM do not), the book assembles
documents: **not real documents** — every table, figure and reading that uses them says "assembled" — but sequences
of real passages whose one relevant passage sits at a recorded position.

For each query with a relevant passage (a judged one, or a teacher's top passage for a teacher-labelled query):

- a **relevant document** per relevant passage (at most ``relevant_per_query``): filler passages up to a length
  drawn from ``lengths`` (words; the book draws TIME's document lengths), the relevant passage inserted at a
  position drawn uniformly among the document's passages;
- ``others_per_query`` **non-relevant documents** of filler alone, drawn the same way;
- **filler**: first the query's own passages that are judged but not relevant (``negatives``: hard, on its topic),
  then passages of other queries (``pool``), never a passage relevant to the query.

The query's candidates are its documents in a seeded random order (the run's scores descend in that order), so a
re-ranker sees no hint of the answer in the first stage. Everything is drawn from generators seeded by
``(seed, qid)``: the same inputs give the same documents, whatever the other queries.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lib.core.types import Qrels, Run, query_order


@dataclass(frozen=True)
class Layout:
    """One assembled document: its query, its passages in order, the index of its relevant passage among them
    (``None``: a non-relevant document) and that passage's grade (0 for a non-relevant document)."""

    qid: str
    passages: tuple[str, ...]
    relevant_at: int | None
    grade: int

    @property
    def relative_position(self) -> float | None:
        """Where the relevant passage sits: 0 at the start, 1 at the end (``None`` without one)."""
        if self.relevant_at is None:
            return None
        return self.relevant_at / max(len(self.passages) - 1, 1)


@dataclass(frozen=True)
class AssembledSet:
    """Assembled documents of one query set: ``documents`` (id → text), binary-or-graded ``qrels`` (every document
    judged: its relevant passage's grade, or 0), the candidate ``run`` (a seeded random order) and each document's
    ``layouts``."""

    documents: dict[str, str]
    qrels: Qrels
    run: Run
    layouts: dict[str, Layout]


class _Filler:
    """A query's filler passages, each used once: its own non-relevant passages (shuffled) first, then passages drawn
    at random from the pool; never one of ``excluded`` (the query's relevant passages)."""

    def __init__(self, own: Sequence[str], pool: Sequence[str], excluded: set[str], generator: random.Random) -> None:
        self.own = [pid for pid in own if pid not in excluded]
        generator.shuffle(self.own)
        self.pool, self.used, self.generator = pool, set(excluded) | set(self.own), generator

    def next(self) -> str | None:
        if self.own:
            return self.own.pop()
        for _ in range(100):  # a draw from a pool that has unused passages succeeds long before this
            pid = self.pool[self.generator.randrange(len(self.pool))] if self.pool else None
            if pid is not None and pid not in self.used:
                self.used.add(pid)
                return pid
        return None

    def take(self, words: int, texts: Mapping[str, str]) -> list[str]:
        """Passages until their words reach ``words`` (at least one, unless the supply is exhausted)."""
        chosen, total = [], 0
        while not chosen or total < words:
            pid = self.next()
            if pid is None:
                break
            chosen.append(pid)
            total += len(texts[pid].split())
        return chosen


def _query_documents(
    qid: str,
    relevant: Mapping[str, int],
    filler: _Filler,
    texts: Mapping[str, str],
    lengths: Sequence[int],
    counts: tuple[int, int],
    generator: random.Random,
) -> list[Layout]:
    """One query's documents (module docstring), in a random order."""
    layouts = []
    for pid in sorted(relevant, key=lambda pid: (-relevant[pid], pid))[: counts[0]]:
        around = filler.take(generator.choice(lengths) - len(texts[pid].split()), texts)
        at = generator.randrange(len(around) + 1)
        layouts.append(Layout(qid, tuple(around[:at] + [pid] + around[at:]), at, int(relevant[pid])))
    for _ in range(counts[1]):
        passages = filler.take(generator.choice(lengths), texts)
        if passages:
            layouts.append(Layout(qid, tuple(passages), None, 0))
    generator.shuffle(layouts)
    return layouts


def assemble(
    relevant: Mapping[str, Mapping[str, int]],
    negatives: Mapping[str, Sequence[str]],
    pool: Sequence[str],
    texts: Mapping[str, str],
    lengths: Sequence[int],
    seed: int,
    relevant_per_query: int = 3,
    others_per_query: int = 12,
) -> AssembledSet:
    """The assembled documents of every query of ``relevant`` (module docstring): ``relevant[qid]`` its relevant
    passages with their grades (a query without one is left out), ``negatives[qid]`` its own non-relevant passages,
    ``pool`` the passages of other queries, ``lengths`` the document lengths (words) to draw from. Document ids are
    ``<qid>-<n>``; every passage must have a text."""
    if not lengths or min(lengths) < 1:
        raise ValueError("parameter 'lengths' must hold positive document lengths (words)")
    if relevant_per_query < 1 or others_per_query < 1:
        raise ValueError(f"'relevant_per_query' and 'others_per_query' must be >= 1, got {relevant_per_query}, "
                         f"{others_per_query}")  # fmt: skip
    pool = list(pool)
    missing = [pid for pid in pool if pid not in texts][:3]
    if missing:
        raise KeyError(f"passages {missing} of the pool have no text")
    documents, qrels, run, layouts = {}, {}, {}, {}
    for qid in sorted(relevant, key=query_order):
        if not relevant[qid]:
            continue
        generator = random.Random(f"assembled:{seed}:{qid}")
        filler = _Filler(negatives.get(qid, ()), pool, set(relevant[qid]), generator)
        counts = (relevant_per_query, others_per_query)
        found = _query_documents(qid, relevant[qid], filler, texts, lengths, counts, generator)
        qrels[qid], run[qid] = {}, {}
        for number, layout in enumerate(found):
            docid = f"{qid}-{number}"
            documents[docid] = " ".join(texts[pid] for pid in layout.passages)
            layouts[docid], qrels[qid][docid], run[qid][docid] = layout, layout.grade, float(len(found) - number)
    return AssembledSet(documents, qrels, run, layouts)


__all__ = ["AssembledSet", "Layout", "assemble"]
