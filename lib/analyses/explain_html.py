"""The side-by-side view of two passages for one query, as the TK paper's Figure 3 (§6), in HTML.

Each passage is shown with its full text; a word is coloured and underlined by the kernel its best
match falls closest to (:func:`lib.analyses.explain_tk.passage_matches`: **maximum cosine over the query
terms**, or the cosine with one chosen query term), for the highlighted kernels only (by default
μ = 1.0, 0.9 and 0.7: the paper highlights 0.9 and 0.7; 1.0 is the exact-match region). Between
the passages, the per-kernel table (learned weights included, :class:`lib.analyses.explain_tk.PairExplanation`)
and the scores ``β·s_log``, ``γ·s_len`` and ``s``. Text beyond the model's 200-token cap is shown in
grey: the model did not see it.

The result is a plain HTML string with inline styles only (no script, no style sheet), so it shows
with ``IPython.display.HTML`` in Jupyter and in the Jupyter Book page. Every piece of text is escaped.

Words are located in the original text by the tokenizer's rule (:data:`lib.representations.text.TOKEN_PATTERN` on the
lower-cased text, :func:`word_spans`), so the view keeps the passage's case and punctuation.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import seaborn as sns

from lib.analyses.explain_tk import PairExplanation, passage_matches
from lib.core.plotting import PALETTE
from lib.representations.text import TOKEN_PATTERN

#: The kernels coloured by default: the paper's two (0.9, 0.7) and the exact-match region (1.0).
DEFAULT_HIGHLIGHT: tuple[float, ...] = (1.0, 0.9, 0.7)

_CELL = "padding: 1px 6px; text-align: right; font-variant-numeric: tabular-nums"


def word_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets in ``text`` of each token of :func:`lib.representations.text.tokenize`, in order.

    Tokens are the runs of :data:`lib.representations.text.TOKEN_PATTERN` in the lower-cased text; lower-casing each
    character separately keeps a map back to the original offsets (a character may lower-case to
    several, e.g. "İ").
    """
    lowered, origin = [], []
    for position, character in enumerate(text):
        for low in character.lower():
            lowered.append(low)
            origin.append(position)
    spans, previous_end = [], 0
    for found in TOKEN_PATTERN.finditer("".join(lowered)):
        start = max(origin[found.start()], previous_end)
        end = max(origin[found.end() - 1] + 1, start)
        spans.append((start, end))
        previous_end = end
    return spans


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def kernel_colours(highlight: Sequence[float], mus: Sequence[float]) -> dict[float, str]:
    """One colour (hex, the book's palette) per highlighted kernel centre; each must be one of ``mus``."""
    if isinstance(highlight, (int, float)) or len(highlight) == 0:
        raise ValueError(f"parameter 'highlight' must be a non-empty list of kernel centres, got {highlight!r}")
    chosen = []
    for value in highlight:
        close = [mu for mu in mus if abs(mu - float(value)) < 1e-6]
        if not close:
            raise ValueError(f"parameter 'highlight': {value!r} is not a kernel centre (centres: {list(mus)})")
        chosen.append(close[0])
    return dict(zip(chosen, sns.color_palette(PALETTE, len(chosen)).as_hex(), strict=True))


def piece_spans(text: str, pieces: Sequence[str]) -> list[tuple[int, int]] | None:
    """``(start, end)`` offsets in ``text`` of each word piece of ``pieces`` (a ``##`` piece without its
    ``##``), found in order in the lower-cased text; ``None`` when one is not found (``[UNK]``, or a
    character the uncased tokenizer normalised, such as an accent), and the caller shows the pieces alone."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    spans, cursor = [], 0
    for piece in pieces:
        bare = piece.removeprefix("##")
        start = lowered.find(bare, cursor) if bare and piece != "[UNK]" else -1
        if start < 0:
            return None
        spans.append((start, start + len(bare)))
        cursor = start + len(bare)
    return spans


def passage_html(
    explanation: PairExplanation,
    highlight: Sequence[float] = DEFAULT_HIGHLIGHT,
    query_term: int | None = None,
) -> str:
    """The passage's full text as HTML, words coloured and underlined by their highlighted kernel.

    Each coloured word has a tooltip with its cosine, the query term it matches and the kernel.
    """
    mus = explanation.kernels["mu"].tolist()
    colours = kernel_colours(highlight, mus)
    matches = passage_matches(explanation, query_term)
    text = explanation.passage
    seen = len(explanation.passage_tokens)
    if explanation.word_pieces:
        spans = piece_spans(text, explanation.passage_tokens)
        if spans is None:  # show the pieces themselves, one after the other
            text = " ".join(explanation.passage_tokens)
            spans = piece_spans(text, explanation.passage_tokens)
        if text[spans[-1][1] :].strip():  # pieces keep punctuation: text after the last piece was cut off
            spans.append((spans[-1][1] + len(text[spans[-1][1] :]) - len(text[spans[-1][1] :].lstrip()), len(text)))
    else:
        spans = word_spans(text)
    parts, cursor = [], 0
    for (start, end), match in zip(spans[:seen], matches.itertuples(), strict=True):
        parts.append(html.escape(text[cursor:start]))
        word = html.escape(text[start:end])
        colour = colours.get(match.mu)
        if colour is None:
            parts.append(word)
        else:
            tip = html.escape(f"μ = {match.mu:g}: cosine {match.cosine:.2f} with {match.query_term!r}", quote=True)
            style = f"background-color: {_rgba(colour, 0.25)}; border-bottom: 2px solid {colour}"
            parts.append(f'<span style="{style}" title="{tip}">{word}</span>')
        cursor = end
    if len(spans) == seen:
        parts.append(html.escape(text[cursor:]))
    else:
        unseen = spans[seen][0]
        title = html.escape(f"beyond the model's cap of {seen} tokens: not scored", quote=True)
        parts.append(html.escape(text[cursor:unseen]))
        parts.append(f'<span style="color: #999999" title="{title}">{html.escape(text[unseen:])}</span>')
    return "".join(parts)


def _number(value: float, digits: int) -> str:
    return html.escape(f"{value:.{digits}f}")


def kernel_table_html(left: PairExplanation, right: PairExplanation, highlight: Sequence[float], digits: int) -> str:
    """The middle column: per kernel the weighted log and length terms of both passages, then the scores."""
    mus = left.kernels["mu"].tolist()
    if right.kernels["mu"].tolist() != mus:
        raise ValueError("the two explanations come from models with different kernels")
    colours = kernel_colours(highlight, mus)
    head = (
        "<tr>"
        f'<th style="{_CELL}">log</th><th style="{_CELL}">len</th>'
        '<th style="padding: 1px 6px; text-align: center">μ</th>'
        f'<th style="{_CELL}">log</th><th style="{_CELL}">len</th>'
        "</tr>"
    )
    rows = [head]
    for k, mu in enumerate(mus):
        colour = colours.get(mu)
        background = f"background-color: {_rgba(colour, 0.25)}; " if colour else ""
        cells = [
            _number(side.kernels[column].iloc[k], digits)
            for side in (left, right)
            for column in ("log_term", "len_term")
        ]
        rows.append(
            f'<tr style="{background}">'
            f'<td style="{_CELL}">{cells[0]}</td><td style="{_CELL}">{cells[1]}</td>'
            f'<td style="padding: 1px 6px; text-align: center; font-weight: bold">{html.escape(f"{mu:g}")}</td>'
            f'<td style="{_CELL}">{cells[2]}</td><td style="{_CELL}">{cells[3]}</td>'
            "</tr>"
        )
    totals = [
        ("β·s_log", lambda e: e.beta * e.s_log),
        ("γ·s_len", lambda e: e.gamma * e.s_len),
        ("s", lambda e: e.s),
    ]
    for label, value in totals:
        rows.append(
            '<tr style="border-top: 1px solid #999999">'
            f'<td colspan="2" style="{_CELL}; font-weight: bold">{_number(value(left), digits)}</td>'
            f'<td style="padding: 1px 6px; text-align: center">{html.escape(label)}</td>'
            f'<td colspan="2" style="{_CELL}; font-weight: bold">{_number(value(right), digits)}</td>'
            "</tr>"
        )
    return '<table style="border-collapse: collapse; font-size: 0.9em">' + "".join(rows) + "</table>"


def side_by_side_html(
    left: PairExplanation,
    right: PairExplanation,
    titles: tuple[str, str] = ("Passage A", "Passage B"),
    highlight: Sequence[float] = DEFAULT_HIGHLIGHT,
    query_term: int | None = None,
    digits: int = 2,
) -> str:
    """Figure 3: two passages of one query side by side, the per-kernel table between them (module docstring).

    ``left`` and ``right`` explain the same query (:func:`lib.analyses.explain_tk.explain_pair`); ``titles``
    head the two passages (plain text, escaped); ``highlight`` names the coloured kernels by centre;
    ``query_term`` switches the best-match rule from "all query terms" to one query position;
    ``digits`` is the number of decimals of the table.
    """
    if left.query != right.query:
        raise ValueError(f"parameters 'left' and 'right' explain different queries: {left.query!r} / {right.query!r}")
    if (left.beta, left.gamma, left.scaler) != (right.beta, right.gamma, right.scaler):
        raise ValueError("parameters 'left' and 'right' come from different models (their β, γ or scaler differ)")
    if len(titles) != 2:
        raise ValueError(f"parameter 'titles' must hold two titles, got {len(titles)}")
    if digits < 0:
        raise ValueError(f"parameter 'digits' must be >= 0, got {digits}")
    colours = kernel_colours(highlight, left.kernels["mu"].tolist())
    legend = " ".join(
        f'<span style="background-color: {_rgba(colour, 0.25)}; border-bottom: 2px solid {colour}; padding: 0 4px">'
        f"μ = {html.escape(f'{mu:g}')}</span>"
        for mu, colour in colours.items()
    )
    passages = [passage_html(side, highlight, query_term) for side in (left, right)]
    rule = (
        "best cosine over the query terms" if query_term is None else f"cosine with {left.query_tokens[query_term]!r}"
    )
    scalars = f"β = {left.beta:.{digits}f}, γ = {left.gamma:.{digits}f}"
    if not np.isclose(left.scaler, 1.0):
        scalars += f", feature scaler c = {left.scaler:.{digits}f}"
    box = "flex: 1 1 0; min-width: 0; line-height: 1.6"
    return (
        '<div style="font-family: sans-serif; font-size: 0.95em">'
        f"<div><b>Query:</b> {html.escape(left.query)}</div>"
        f'<div style="margin: 4px 0">Words coloured by the kernel closest to their {html.escape(rule)}: {legend}</div>'
        '<div style="display: flex; gap: 16px; align-items: flex-start">'
        f'<div style="{box}"><div style="font-weight: bold; margin-bottom: 4px">{html.escape(titles[0])}</div>'
        f"{passages[0]}</div>"
        f'<div style="flex: none">{kernel_table_html(left, right, highlight, digits)}'
        f'<div style="font-size: 0.85em; margin-top: 4px">log / len: β·c·W·s<sup>k</sup>; {html.escape(scalars)}</div>'
        "</div>"
        f'<div style="{box}"><div style="font-weight: bold; margin-bottom: 4px">{html.escape(titles[1])}</div>'
        f"{passages[1]}</div>"
        "</div></div>"
    )
