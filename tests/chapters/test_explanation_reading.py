"""Chapter 5's readings (``lib.chapters.explanation_reading``): sentences from hand-made explanations."""

from __future__ import annotations

import numpy as np

from lib.chapters.explanation_reading import (
    androgen_reading,
    case_reading,
    define_position,
    definition_phrases,
    kernel_differences,
    paper_passages_reading,
)
from tests.analysis_helpers import hand_explanation

# query tokens: receptor, define; passage tokens: receptor, also, known, as, type
RELEVANT = hand_explanation(
    "receptor define",
    "receptor also known as type",
    np.array([[0.9, 0.1, 0.0, 0.2, 0.1], [0.1, 0.6, 0.4, 0.3, 0.7]]),
    [1.0, 0.5, 0.0],
    [1.0, 2.0, 0.5],
    [0.0, 0.0, 0.0],
)
OTHER = hand_explanation(
    "receptor define",
    "receptor inhibitor",
    np.array([[0.9, 0.2], [0.1, 0.2]]),
    [1.0, 0.5, 0.0],
    [1.0, 0.5, 0.4],
    [0, 0, 0],
)


def test_define_and_its_definition_words() -> None:
    assert define_position(RELEVANT) == 1
    assert define_position(hand_explanation("cat", "a cat", np.array([[0.1, 0.9]]), [1.0], [1.0], [0.0])) is None
    assert definition_phrases(RELEVANT) == "also 0.60, known 0.40, as 0.30, type 0.70"


def test_kernel_differences_are_largest_first() -> None:
    assert kernel_differences(RELEVANT, OTHER) == "μ = 0.5 (+1.500), μ = 0 (+0.100), μ = 1 (+0.000)"


def test_the_androgen_reading_compares_with_the_papers_tk() -> None:
    text = androgen_reading(RELEVANT, OTHER, "TK-2")
    assert text.startswith(
        "The book's TK-2 scores the relevant passage 3.500 and BM25's top passage 1.900: it prefers the relevant "
        "passage, as the paper's TK did."
    )
    assert "median cosine of 0.40 and a maximum of 0.70 (with 'type')" in text
    assert text.endswith("are not tokens here.")
    assert "the opposite of the paper's TK" in androgen_reading(OTHER, RELEVANT, "TK-2")


def test_the_paper_passages_reading_names_the_missing_ones() -> None:
    assert paper_passages_reading([], "TK-2").startswith("Both passages are in the book collection")
    assert paper_passages_reading(["4339068", "1782337"], "TK-2").startswith(
        "Passage(s) 4339068, 1782337 are **not** in the book collection"
    )


def test_the_case_reading_adds_defines_closest_words_when_the_query_has_it() -> None:
    text = case_reading(RELEVANT, OTHER, "TK-2")
    assert text.startswith("TK-2 scores the relevant passage 3.500 and the non-relevant one 1.900.")
    assert "the passages have 5 and 2 tokens." in text
    assert text.endswith("in the non-relevant one, inhibitor (0.20), receptor (0.10).")
