"""The book-scale cross-year folds, the seeded train/validation split and the guard against test leakage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core import paths
from lib.data import load_queries, read_queries
from lib.data.splits import (
    FOLDS,
    JUDGED_SETS,
    TEST_SETS,
    VALIDATION_FRACTION,
    Fold,
    check_disjoint_from_tests,
    train_validation_split,
)


def test_folds() -> None:
    assert FOLDS == {"dl19": Fold("dl19", ("dl20", "dl21")), "dl20": Fold("dl20", ("dl19", "dl21"))}
    assert TEST_SETS == ("dl19", "dl20")
    for fold in FOLDS.values():
        assert fold.test not in fold.train
        assert {fold.test, *fold.train} == set(JUDGED_SETS)
    assert "dl21" not in FOLDS  # DL21 (v2 corpus) is training text only


@pytest.fixture(scope="module")
def dl19_fold_qids(converted: Path) -> list[str]:
    """The training queries of the headline fold: DL20 + DL21, 107 real query ids."""
    qids = [qid for name in FOLDS["dl19"].train for qid in read_queries(converted / f"queries.{name}.tsv")]
    assert len(qids) == len(set(qids)) == 54 + 53
    return qids


def test_split_is_a_partition(dl19_fold_qids: list[str]) -> None:
    train, validation = train_validation_split(dl19_fold_qids)
    assert not set(train) & set(validation)
    assert set(train) | set(validation) == set(dl19_fold_qids)
    assert len(train) + len(validation) == len(dl19_fold_qids)
    assert train == sorted(train) and validation == sorted(validation)


def test_validation_fraction(dl19_fold_qids: list[str]) -> None:
    assert VALIDATION_FRACTION == 0.2
    _, validation = train_validation_split(dl19_fold_qids)
    assert len(validation) == round(0.2 * 107) == 21
    _, validation = train_validation_split(dl19_fold_qids, fraction=0.5)
    assert len(validation) == round(0.5 * 107) == 54
    train, validation = train_validation_split(dl19_fold_qids, fraction=0.0)
    assert validation == [] and len(train) == 107


def test_split_is_deterministic(dl19_fold_qids: list[str]) -> None:
    first = train_validation_split(dl19_fold_qids, seed=7)
    assert train_validation_split(dl19_fold_qids, seed=7) == first
    # neither the order nor repetitions of the input matter
    assert train_validation_split(list(reversed(dl19_fold_qids)) + dl19_fold_qids[:5], seed=7) == first


def test_split_does_not_depend_on_the_hash_seed(dl19_fold_qids: list[str]) -> None:
    code = (
        "import json, sys; from lib.data.splits import train_validation_split; "
        "print(json.dumps(train_validation_split(json.loads(sys.stdin.read()))))"
    )
    results = set()
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(dl19_fold_qids),
            capture_output=True,
            text=True,
            check=True,
            cwd=paths.REPO_ROOT,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        results.add(done.stdout)
    assert len(results) == 1
    assert json.loads(results.pop()) == list(map(list, train_validation_split(dl19_fold_qids)))


def test_different_seeds_give_different_splits(dl19_fold_qids: list[str]) -> None:
    validations = {tuple(train_validation_split(dl19_fold_qids, seed=seed)[1]) for seed in range(5)}
    assert len(validations) == 5
    assert all(len(validation) == 21 for validation in validations)


def test_small_inputs() -> None:
    assert train_validation_split(["1", "2"]) in ((["1"], ["2"]), (["2"], ["1"]))  # at least one validation query
    assert train_validation_split(["1"]) == (["1"], [])
    assert train_validation_split([]) == ([], [])


@pytest.mark.parametrize("fraction", [1.0, 1.5, -0.1])
def test_fraction_out_of_range(fraction: float) -> None:
    with pytest.raises(ValueError, match="'fraction'"):
        train_validation_split(["1", "2", "3"], fraction=fraction)


def test_a_test_query_in_training_is_refused_by_id_or_by_text():
    tests = {"dl19": {"1": "What is a Kernel?", "2": "bm25"}}
    with pytest.raises(ValueError, match=r"1 training/validation queries are dl19 test queries.*'7'"):
        check_disjoint_from_tests({"7": "what is a   kernel", "8": "unrelated"}, tests)
    with pytest.raises(ValueError, match=r"dl19 test queries.*'2'"):
        check_disjoint_from_tests({"2": "another text"}, tests)


@pytest.mark.usefixtures("converted")
def test_the_distillation_queries_share_no_id_or_text_with_the_test_years():
    training = load_queries("dev-small") | load_queries("dl21")
    check_disjoint_from_tests(training, {name: load_queries(name) for name in TEST_SETS})
