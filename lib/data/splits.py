"""The book-scale splits (ARCHITECTURE.md, "Conventions"), defined here and nowhere else.

:data:`TEST_SETS` are the two test years; :func:`check_disjoint_from_tests` refuses any training or
validation query that is one of their queries (chapter 2's distillation set checks it every time).

The folds below name each test year and the other judged years. Chapter 6 (TILDE) trains on those
of them that are not test years — DL21 — so no DL19/DL20 judgment trains or validates any model of
the book; chapter 2 learns from a teacher instead (:mod:`lib.experiments.distillation_set`).

- fold ``dl19`` (the headline test, re-ranking the official BM25 top-100): other years DL20 + DL21;
- fold ``dl20`` (the second test, as TILDE does): other years DL19 + DL21.

DL21 uses the MS MARCO v2 corpus; its passages are training text only, never test text.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lib.data.readers import read_queries

TEST_SETS: tuple[str, ...] = ("dl19", "dl20")
JUDGED_SETS: tuple[str, ...] = ("dl19", "dl20", "dl21")
VALIDATION_FRACTION = 0.2


@dataclass(frozen=True)
class Fold:
    """One cross-year fold: the ``test`` set and the ``train`` sets it learns from."""

    test: str
    train: tuple[str, ...]


FOLDS: dict[str, Fold] = {test: Fold(test, tuple(s for s in JUDGED_SETS if s != test)) for test in TEST_SETS}


def _bucket(qid: str, seed: int) -> float:
    """A stable pseudo-random number in [0, 1) for a query id (independent of Python's hash seed)."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def train_validation_split(
    qids: list[str], fraction: float = VALIDATION_FRACTION, seed: int = 42
) -> tuple[list[str], list[str]]:
    """Split training query ids into (train, validation), deterministically for a given seed.

    The validation slice holds the ``round(fraction * len(qids))`` queries (at least one when there
    are two or more) with the smallest seeded hash; both lists come back sorted.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"parameter 'fraction' must be in [0, 1), got {fraction}")
    unique = sorted(set(qids))
    size = round(fraction * len(unique))
    if fraction > 0 and len(unique) >= 2:
        size = max(size, 1)
    ranked = sorted(unique, key=lambda q: (_bucket(q, seed), q))
    validation = set(ranked[:size])
    return [q for q in unique if q not in validation], sorted(validation)


def _normalised(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def without_test_queries(queries: Mapping[str, str], tests: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """``queries`` minus any sharing an id or a text with a test year (as :func:`check_disjoint_from_tests`)."""
    test_ids = {qid for test in tests.values() for qid in test}
    test_texts = {_normalised(text) for test in tests.values() for text in test.values()}
    return {qid: text for qid, text in queries.items() if qid not in test_ids and _normalised(text) not in test_texts}


def export_test_queries(folder: str | os.PathLike) -> dict[str, dict[str, str]]:
    """The test years' queries in an MS MARCO export ``folder`` (``queries.dl19.tsv``, ``queries.dl20.tsv``).

    The paper-scale command lines read their training and validation queries from such a folder
    (:mod:`lib.data.msmarco`) and drop or refuse any that is a test query; a missing file is a
    ``FileNotFoundError`` naming it, since without it nothing can be checked.
    """
    tests = {}
    for name in TEST_SETS:
        path = Path(folder) / f"queries.{name}.tsv"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: the {name} test queries are needed to keep them out of training and validation "
                "(python -m lib.data.msmarco writes them)"
            )
        tests[name] = read_queries(path)
    return tests


def check_disjoint_from_tests(queries: Mapping[str, str], tests: Mapping[str, Mapping[str, str]]) -> None:
    """Refuse training or validation ``queries`` that share an id or a text with a test year's queries.

    ``tests`` maps a test set's name (``dl19``) to its queries. Texts are compared as their lower-cased
    words (punctuation and spacing ignored). A shared id or text is a ``ValueError`` naming the test set and up to five
    of the shared queries: no test-year query ever enters training or validation.
    """
    for name, test in tests.items():
        test_texts = {_normalised(text): qid for qid, text in test.items()}
        shared = sorted(qid for qid in queries if qid in test)
        shared += sorted(qid for qid, text in queries.items() if _normalised(text) in test_texts and qid not in test)
        if shared:
            raise ValueError(
                f"{len(shared)} training/validation queries are {name} test queries (same id or text), "
                f"e.g. {shared[:5]}: remove them"
            )
