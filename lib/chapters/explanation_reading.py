"""Chapter 5's readings: what the exact explanation of TK's score says about the paper's example and a DL19 case.

The sentences come from :class:`lib.analyses.explain_tk.PairExplanation` tables of the book's TK: which
passage it prefers, the kernels that separate two scores most, and how close "define" comes to the
definition words (and the parenthesis) that the paper's Figure 3 highlights.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from lib.analyses.explain_tk import PairExplanation, closest_words, passage_matches

#: The definition words of the paper's relevant passage for "androgen receptor define" (its Figure 3).
DEFINITION_PHRASES = ("also", "known", "as", "subfamily", "is", "type")


def paper_passages_reading(missing: Sequence[str], tk_label: str) -> str:
    """Where the paper's two passages come from: the book collection, or (``missing``: the ids it lacks) the
    texts the papers print."""
    if not missing:
        return "Both passages are in the book collection; their text is taken from there."
    return (
        f"Passage(s) {', '.join(missing)} are **not** in the book collection (it holds the TREC DL candidates and "
        "judged passages, not all of MS MARCO), so the chapter uses the passage texts that the papers print "
        f"(copied from the TU Wien notebook's Figure 2). The book's {tk_label} never saw this query in training: "
        "it is an MS MARCO dev query."
    )


def define_position(explanation: PairExplanation) -> int | None:
    """The position of "define" among the explanation's query tokens (``None``: the query has none)."""
    return explanation.query_tokens.index("define") if "define" in explanation.query_tokens else None


def definition_phrases(explanation: PairExplanation) -> str:
    """The cosine of "define" with each of :data:`DEFINITION_PHRASES` that occurs in the passage."""
    matches = passage_matches(explanation, query_term=define_position(explanation))
    best = matches.groupby("term")["cosine"].max()
    return ", ".join(f"{word} {best[word]:.2f}" for word in DEFINITION_PHRASES if word in best.index)


def kernel_differences(first: PairExplanation, second: PairExplanation, count: int = 3) -> str:
    """The ``count`` kernels whose contributions to the two scores differ most, ``first`` minus ``second``."""
    delta = first.kernels.set_index("mu")["term"] - second.kernels.set_index("mu")["term"]
    largest = delta.sort_values(key=abs, ascending=False).head(count)
    return ", ".join(f"μ = {mu:g} ({value:+.3f})" for mu, value in largest.items())


def androgen_reading(relevant: PairExplanation, bm25_top: PairExplanation, tk_label: str) -> str:
    """The paper's example in words: which passage the book's TK prefers, against the paper's TK, the kernels
    that separate the scores, and how "define" matches the definition words and the parenthesis."""
    agrees = relevant.s > bm25_top.s
    preferred = "the relevant passage" if agrees else "BM25's top passage"
    define_matches = passage_matches(relevant, query_term=define_position(relevant))
    define_cosines: pd.Series = define_matches["cosine"]
    reading = [
        f"The book's {tk_label} scores the relevant passage {relevant.s:.3f} and BM25's top passage "
        f"{bm25_top.s:.3f}: it prefers {preferred}, "
        + (
            "as the paper's TK did."
            if agrees
            else "the opposite of the paper's TK, which put the relevant passage first."
        )
        + f" The kernels that separate the two scores most (relevant minus BM25 top) are "
        f"{kernel_differences(relevant, bm25_top)}.",
        f'In the relevant passage, the cosine of "define" with the paper\'s definition words is: '
        f'{definition_phrases(relevant)}; over all its tokens "define" has a median cosine of '
        f"{define_cosines.median():.2f} and a maximum of {define_cosines.max():.2f} "
        f"(with {relevant.passage_tokens[int(define_cosines.idxmax())]!r}).",
    ]
    if "(" in relevant.passage_tokens:
        parenthesis = define_matches.groupby("term")["cosine"].max()["("]
        reading.append(
            f'This TK sees punctuation: "define" has a cosine of {parenthesis:.2f} with "(", the paper\'s cue.'
        )
    else:
        reading.append(
            "This TK's word tokenizer drops punctuation, so the parentheses that the paper's TK matched with "
            '"define" are not tokens here.'
        )
    return " ".join(reading)


def case_reading(relevant: PairExplanation, other: PairExplanation, tk_label: str) -> str:
    """A DL19 case in words: both scores, the kernels that separate them, the log and length parts, the passage
    lengths, and, when the query holds "define", its closest words in both passages."""
    parts = [
        f"{tk_label} scores the relevant passage {relevant.s:.3f} and the non-relevant one {other.s:.3f}. "
        f"The kernels that make the difference most are {kernel_differences(relevant, other)}.",
        f"The weighted log part β·s_log is {relevant.beta * relevant.s_log:.3f} against "
        f"{other.beta * other.s_log:.3f}, the length part γ·s_len "
        f"{relevant.gamma * relevant.s_len:.3f} against {other.gamma * other.s_len:.3f}; "
        f"the passages have {len(relevant.passage_tokens)} and {len(other.passage_tokens)} tokens.",
    ]
    if define_position(relevant) is not None:
        parts.append(
            'This query contains "define" too: in the relevant passage its closest words are '
            f"{closest_words(relevant)['define']}; in the non-relevant one, {closest_words(other)['define']}."
        )
    return " ".join(parts)
