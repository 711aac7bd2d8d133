"""Pseudo-queries cut from the corpus's own passages: on-topic training queries in any number.

Chapter 2's teacher labels training queries over the book corpus (:mod:`lib.experiments.distillation_set`).
The real MS MARCO dev-small queries are mostly off-topic there (their relevant passages are not in
the book's 30k passages), so most of their triples compare two passages that have little to do
with the query. A pseudo-query is a short span of words of a book passage, in the spirit of the
Inverse Cloze Task (Lee, Chang, Toutanova, *Latent Retrieval for Weakly Supervised Open Domain
Question Answering*, ACL 2019, §4: a sentence of a passage as a pseudo-question for its context):
the BM25 candidates of such a query are passages that share its words — lists like the ones a
re-ranker sees at test time, where every candidate matches the query lexically and the teacher has
to tell them apart. The book's spans are shorter than ICT's sentences (MS MARCO queries have about
six words) and stay inside one sentence; the passage keeps the span (no masking): which candidate
is better is the teacher's judgement, not the span's origin.

The pseudo-query's id is ``pseudo-<passage id>``; the same seed gives the same queries.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

#: Prefix of a pseudo-query's id (the rest is the passage it was cut from).
PSEUDO_PREFIX = "pseudo-"
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_EDGE_PUNCTUATION = ".,;:!?()[]\"'"


def span_query(text: str, shortest: int, longest: int, generator: random.Random) -> str | None:
    """A span of ``shortest``–``longest`` words from one sentence of ``text`` (``None``: no sentence is that long).

    The sentence is drawn uniformly among those with at least ``shortest`` words, the span's length
    uniformly in ``[shortest, min(longest, sentence length)]``, its start uniformly; punctuation at
    the span's edges is removed.
    """
    sentences = [s.split() for s in _SENTENCE_END.split(text)]
    usable = [words for words in sentences if len(words) >= shortest]
    if not usable:
        return None
    words = generator.choice(usable)
    length = generator.randint(shortest, min(longest, len(words)))
    start = generator.randint(0, len(words) - length)
    span = [word.strip(_EDGE_PUNCTUATION) for word in words[start : start + length]]
    query = " ".join(word for word in span if word)
    return query or None


def pseudo_queries(
    corpus: Mapping[str, str], count: int, seed: int, shortest: int = 3, longest: int = 8
) -> dict[str, str]:
    """``count`` pseudo-queries (module docstring), one per passage drawn without replacement from ``corpus``.

    Passages are visited in a seeded shuffle of their sorted ids; a passage with no sentence of
    ``shortest`` words is skipped. Fewer than ``count`` queries come back only if the corpus runs out.
    """
    if count < 0:
        raise ValueError(f"parameter 'count' must be >= 0, got {count}")
    if not 1 <= shortest <= longest:
        raise ValueError(f"span lengths must satisfy 1 <= shortest <= longest, got {shortest}, {longest}")
    order = sorted(corpus)
    random.Random(f"pseudo-order:{seed}").shuffle(order)
    queries: dict[str, str] = {}
    for pid in order:
        if len(queries) == count:
            break
        query = span_query(corpus[pid], shortest, longest, random.Random(f"pseudo:{seed}:{pid}"))
        if query is not None:
            queries[PSEUDO_PREFIX + pid] = query
    return queries


__all__ = ["PSEUDO_PREFIX", "pseudo_queries", "span_query"]
