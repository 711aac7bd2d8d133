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
- **filler from one mixture** for both kinds: every document of a query holds the same number of the query's own
  non-relevant passages (``negatives``: on its topic) — ``own_per_document``, or fewer when the query has too few
  for all its documents — and the rest are passages of other queries (``pool``, never one of ``exclude[qid]``: the
  query's own candidates and judged passages), in a shuffled order. Without its relevant passage a relevant
  document cannot be told from a non-relevant one by topic (:func:`own_shares` measures it): an earlier design
  filled the relevant documents first, with the query's own passages, and gave relevance away by topic.

The query's candidates are its documents in a seeded random order (the run's scores descend in that order), so a
re-ranker sees no hint of the answer in the first stage. Everything is drawn from generators seeded by
``(seed, qid)``: the same inputs give the same documents, whatever the other queries.

:func:`position_sweep` builds the controlled test of slide 13 on top: per query, one relevant document's passages
made longer than every model reads (``total_pieces``) with more filler of the same mixture, and the same document
rebuilt with its relevant passage at each target offset in **word pieces** (what FirstP's cut depends on) and at the
end.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from lib.core.types import Qrels, Run, query_order

#: :func:`position_sweep`'s target for "after every filler passage" (the document's end).
END = -1


@dataclass(frozen=True)
class Layout:
    """One assembled document: its query, its passages in order, the index of its relevant passage among them
    (``None``: a non-relevant document) and that passage's grade (0 for a non-relevant document)."""

    qid: str
    passages: tuple[str, ...]
    relevant_at: int | None
    grade: int

    def filler(self) -> tuple[str, ...]:
        """The document's passages but its relevant one."""
        return tuple(pid for index, pid in enumerate(self.passages) if index != self.relevant_at)


@dataclass(frozen=True)
class AssembledSet:
    """Assembled documents of one query set: ``documents`` (id → text), binary-or-graded ``qrels`` (every document
    judged: its relevant passage's grade, or 0), the candidate ``run`` (a seeded random order) and each document's
    ``layouts``."""

    documents: dict[str, str]
    qrels: Qrels
    run: Run
    layouts: dict[str, Layout]


class _Pool:
    """Passages of other queries drawn at random, each used once per query; never one of ``excluded``."""

    def __init__(self, pool: Sequence[str], excluded: set[str], generator: random.Random) -> None:
        self.pool, self.used, self.generator = pool, set(excluded), generator

    def next(self) -> str | None:
        for _ in range(100):  # a draw from a pool that has unused passages succeeds long before this
            pid = self.pool[self.generator.randrange(len(self.pool))] if self.pool else None
            if pid is not None and pid not in self.used:
                self.used.add(pid)
                return pid
        return None

    def take(self, size: int, length: Callable[[str], int], start: Sequence[str] = ()) -> list[str]:
        """``start`` and then pool passages until their ``length`` reaches ``size`` (at least one passage, unless the
        pool is exhausted)."""
        chosen, total = list(start), sum(map(length, start))
        while not chosen or total < size:
            pid = self.next()
            if pid is None:
                break
            chosen.append(pid)
            total += length(pid)
        return chosen


def _query_documents(
    qid: str,
    relevant: Mapping[str, int],
    own: list[str],
    pool: _Pool,
    texts: Mapping[str, str],
    lengths: Sequence[int],
    counts: tuple[int, int, int],
    generator: random.Random,
) -> list[Layout]:
    """One query's documents (module docstring), in a random order; ``own`` its non-relevant passages, shuffled."""
    chosen = sorted(relevant, key=lambda pid: (-relevant[pid], pid))[: counts[0]]
    kinds = [*chosen, *[None] * counts[1]]
    per_document = min(counts[2], len(own) // len(kinds))
    words = lambda pid: len(texts[pid].split())  # noqa: E731
    layouts = []
    for number, pid in enumerate(kinds):
        target = generator.choice(lengths) - (words(pid) if pid else 0)
        around = pool.take(target, words, own[number * per_document : (number + 1) * per_document])
        generator.shuffle(around)
        if pid is None:
            if around:
                layouts.append(Layout(qid, tuple(around), None, 0))
            continue
        at = generator.randrange(len(around) + 1)
        layouts.append(Layout(qid, tuple(around[:at] + [pid] + around[at:]), at, int(relevant[pid])))
    generator.shuffle(layouts)
    return layouts


def _check(lengths: Sequence[int], counts: tuple[int, int, int], pool: Sequence[str], texts: Mapping[str, str]) -> None:
    if not lengths or min(lengths) < 1:
        raise ValueError("parameter 'lengths' must hold positive document lengths (words)")
    if counts[0] < 1 or counts[1] < 1 or counts[2] < 0:
        raise ValueError(f"'relevant_per_query' and 'others_per_query' must be >= 1 and 'own_per_document' >= 0, got "
                         f"{counts}")  # fmt: skip
    missing = [pid for pid in pool if pid not in texts][:3]
    if missing:
        raise KeyError(f"passages {missing} of the pool have no text")


def assemble(
    relevant: Mapping[str, Mapping[str, int]],
    negatives: Mapping[str, Sequence[str]],
    pool: Sequence[str],
    texts: Mapping[str, str],
    lengths: Sequence[int],
    seed: int,
    counts: tuple[int, int, int] = (3, 12, 2),
    exclude: Mapping[str, Collection[str]] | None = None,
) -> AssembledSet:
    """The assembled documents of every query of ``relevant`` (module docstring): ``relevant[qid]`` its relevant
    passages with their grades (a query without one is left out), ``negatives[qid]`` its own non-relevant passages,
    ``pool`` the passages to draw other queries' filler from, ``exclude[qid]`` the passages never drawn from it for
    ``qid`` (besides its relevant and own ones), ``lengths`` the document lengths (words) to draw from, ``counts``
    the relevant and non-relevant documents per query and the own passages per document. Document ids are
    ``<qid>-<n>``; every passage must have a text."""
    pool = list(pool)
    _check(lengths, counts, pool, texts)
    documents, qrels, run, layouts = {}, {}, {}, {}
    for qid in sorted(relevant, key=query_order):
        if not relevant[qid]:
            continue
        generator = random.Random(f"assembled:{seed}:{qid}")
        own = [pid for pid in negatives.get(qid, ()) if pid not in relevant[qid]]
        generator.shuffle(own)
        excluded = set(relevant[qid]) | set(negatives.get(qid, ())) | set((exclude or {}).get(qid, ()))
        found = _query_documents(qid, relevant[qid], own, _Pool(pool, excluded, generator), texts, lengths, counts,
                                 generator)  # fmt: skip
        qrels[qid], run[qid] = {}, {}
        for number, layout in enumerate(found):
            docid = f"{qid}-{number}"
            documents[docid] = " ".join(texts[pid] for pid in layout.passages)
            layouts[docid], qrels[qid][docid], run[qid][docid] = layout, layout.grade, float(len(found) - number)
    return AssembledSet(documents, qrels, run, layouts)


def own_shares(assembled: AssembledSet, own: Mapping[str, Collection[str]]) -> dict[str, dict[str, float]]:
    """Per kind of document (``"relevant"``, ``"non-relevant"``): the number of documents, and the mean number of the
    query's own passages (``own[qid]``: its candidates and judged passages) among a document's filler and their mean
    share of the document's passages (its relevant one included: both kinds are drawn to the same lengths, so that
    share is the same for both unless one holds more of the query's own) — averaged within each query first, then
    over the queries holding both kinds, so that a query with fewer own passages (and fewer in every document) weighs
    the same in both. Equal for both kinds when relevance is not given away by topic (module docstring)."""
    by_query: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for layout in assembled.layouts.values():
        filler = layout.filler()
        mine = sum(pid in own.get(layout.qid, ()) for pid in filler)
        kind = "non-relevant" if layout.relevant_at is None else "relevant"
        by_query.setdefault(layout.qid, {}).setdefault(kind, []).append((mine, mine / len(layout.passages)))
    result = {}
    for kind in ("relevant", "non-relevant"):
        queries = [kinds[kind] for kinds in by_query.values() if len(kinds) == 2]
        means = [(statistics.mean(n for n, _ in rows), statistics.mean(share for _, share in rows)) for rows in queries]
        result[kind] = {"documents": float(sum(map(len, queries))),
                        "own passages": statistics.mean(n for n, _ in means) if means else 0.0,
                        "own share": statistics.mean(share for _, share in means) if means else 0.0}  # fmt: skip
    return result


@dataclass(frozen=True)
class SweepVariant:
    """One document of the position sweep: its ``layout``, the ``target`` offset asked for (word pieces; :data:`END`
    for the end), the ``offset`` its relevant passage starts at (the passage boundary nearest the target) and that
    passage's ``length`` in word pieces."""

    layout: Layout
    target: int
    offset: int
    length: int


def _variants(qid: str, relevant: tuple[str, int, int], filler: list[str], sizes: list[int], targets: Sequence[int]):
    pid, grade, length = relevant
    starts = [sum(sizes[:index]) for index in range(len(filler) + 1)]  # the piece offset before each passage
    for target in [*targets, END]:
        at = len(filler) if target == END else min(range(len(starts)), key=lambda i: (abs(starts[i] - target), i))
        layout = Layout(qid, tuple(filler[:at] + [pid] + filler[at:]), at, grade)
        yield f"{qid}-at-{'end' if target == END else target}", SweepVariant(layout, target, starts[at], length)


def position_sweep(
    assembled: AssembledSet,
    pool: Sequence[str],
    texts: Mapping[str, str],
    pieces: Callable[[str], int],
    settings: tuple[Sequence[int], int],
    seed: int,
    exclude: Mapping[str, Collection[str]] | None = None,
) -> tuple[dict[str, str], dict[str, SweepVariant]]:
    """The controlled position sweep (module docstring): per query of ``assembled``, its first relevant document's
    filler (the highest grade) extended with ``pool`` passages (never one of the query's documents' passages or of
    ``exclude[qid]``) until it holds ``settings[1]`` word pieces (``pieces``: a passage's count, by id) and
    shuffled, then rebuilt with its relevant passage at each target of ``settings[0]`` and at the end. Returns the
    documents' texts and their :class:`SweepVariant` by id ``<qid>-at-<target>`` (``<qid>-at-end``)."""
    targets, total_pieces = settings
    if not targets or min(targets) < 0 or total_pieces <= max(targets):
        raise ValueError(f"sweep targets must be >= 0 and below the document's {total_pieces} pieces, got {targets}")
    documents, variants = {}, {}
    for qid in sorted(assembled.run, key=query_order):
        layouts = [assembled.layouts[docid] for docid in sorted(assembled.run[qid])]
        chosen = sorted((layout for layout in layouts if layout.relevant_at is not None),
                        key=lambda layout: (-layout.grade, layout.passages[layout.relevant_at]))  # fmt: skip
        if not chosen:
            continue
        generator = random.Random(f"sweep:{seed}:{qid}")
        used = {pid for layout in layouts for pid in layout.passages} | set((exclude or {}).get(qid, ()))
        filler = _Pool(list(pool), used, generator).take(total_pieces, pieces, chosen[0].filler())
        generator.shuffle(filler)
        relevant = chosen[0].passages[chosen[0].relevant_at]
        sizes = [pieces(pid) for pid in filler]
        for docid, variant in _variants(qid, (relevant, chosen[0].grade, pieces(relevant)), filler, sizes, targets):
            documents[docid] = " ".join(texts[pid] for pid in variant.layout.passages)
            variants[docid] = variant
    return documents, variants


__all__ = ["END", "AssembledSet", "Layout", "SweepVariant", "assemble", "own_shares", "position_sweep"]
