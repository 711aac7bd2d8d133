"""The Figure 3 view: text escaped, words coloured by their kernel, the per-kernel values shown; word spans."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from lib import data
from lib.analyses.explain_html import kernel_colours, passage_html, piece_spans, side_by_side_html, word_spans
from lib.analyses.explain_tk import explain_pair
from lib.core.types import ranking_from_run
from lib.models.tk_bert import TKBert
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import tokenize
from tests.analysis_helpers import hand_explanation, real_vocabulary, small_tk

MUS = [1.0, 0.9, 0.7, 0.5]
QUERY = "define <em>"  # tokens: define, em
LEFT = 'Define: <script>alert("x")</script> & more'  # define, script, alert, x, script, more
RIGHT = "It's a <i>definition</i> of x"  # it, s, a, i, definition, i, of, x


def left_explanation():
    match = np.array([[0.99, 0.1, 0.1, 0.7, 0.1, 0.88], [0.0, 0.1, 0.2, 0.1, 0.1, 0.1]])
    return hand_explanation(QUERY, LEFT, match, MUS, [1.25, -0.5, 0.75, 2.0], [0.125, 0.0, -0.25, 0.5], 1.0, 1.0)


def right_explanation():
    match = np.full((2, 8), 0.3)
    match[0, 4] = 0.91  # "definition"
    return hand_explanation(QUERY, RIGHT, match, MUS, [-3.5, 0.5, 1.5, 0.25], [0.0, 0.375, 0.0, -1.0], 1.0, 1.0)


def test_the_view_escapes_every_text() -> None:
    view = side_by_side_html(left_explanation(), right_explanation(), titles=("relevant <3>", 'BM25 "top" & co'))
    for raw in ("<script>", "</script>", "<i>", "<em>", "<3>", '"top"'):
        assert raw not in view
    assert "&lt;/script&gt;" in view and "alert(&quot;" in view
    assert "define &lt;em&gt;" in view  # the query
    assert "relevant &lt;3&gt;" in view and "BM25 &quot;top&quot; &amp; co" in view
    assert "It&#x27;s a &lt;i&gt;" in view and "&lt;/script&gt; &amp; " in view
    # no tag other than the view's own layout tags
    assert set(re.findall(r"</?([a-zA-Z]+)", view)) <= {"div", "span", "table", "tr", "th", "td", "b", "sup"}


def test_the_view_shows_the_per_kernel_values_and_scores() -> None:
    left, right = left_explanation(), right_explanation()
    view = side_by_side_html(left, right, digits=3)
    for explanation in (left, right):
        for column in ("log_term", "len_term"):
            for value in explanation.kernels[column]:
                assert f">{value:.3f}<" in view
        assert f">{explanation.s:.3f}<" in view  # s = Σ terms
        assert f">{explanation.beta * explanation.s_log:.3f}<" in view
    # by hand: left s = (1.25 - 0.5 + 0.75 + 2) + (0.125 - 0.25 + 0.5) = 3.875,
    # right s = (-3.5 + 0.5 + 1.5 + 0.25) + (0.375 - 1) = -1.875
    assert ">3.875<" in view and ">-1.875<" in view
    for label in ("μ = 1", "μ = 0.9", "μ = 0.7", "β·s_log", "γ·s_len"):
        assert label in view


def test_words_are_coloured_by_their_highlighted_kernel() -> None:
    left = left_explanation()
    colours = kernel_colours((1.0, 0.9, 0.7), MUS)
    text = passage_html(left, highlight=(1.0, 0.9, 0.7))
    # "Define" (0.99 → μ 1), "x" (0.7 → μ 0.7), "more" (0.88 → μ 0.9) are coloured; the rest is plain
    coloured = re.findall(r'<span style="[^"]*border-bottom: 2px solid (#[0-9a-f]{6})"[^>]*>([^<]*)</span>', text)
    assert coloured == [(colours[1.0], "Define"), (colours[0.7], "x"), (colours[0.9], "more")]
    only_exact = passage_html(left, highlight=(1.0,))
    assert re.findall(r"<span[^>]*>([^<]*)</span>", only_exact) == ["Define"]
    with pytest.raises(ValueError, match="highlight"):
        passage_html(left, highlight=(0.8,))
    with pytest.raises(ValueError, match="highlight"):
        passage_html(left, highlight=())


def test_text_beyond_the_cap_is_grey_and_the_query_term_rule_is_named() -> None:
    match = np.array([[0.99, 0.1], [0.1, 0.1]])
    capped = hand_explanation(QUERY, "define this and much more text", match, MUS, [0, 0, 0, 0], [0, 0, 0, 0])
    text = passage_html(capped)
    assert re.search(r'<span style="color: #999999"[^>]*>and much more text</span>$', text)
    assert "beyond the model&#x27;s cap of 2 tokens" in text
    view = side_by_side_html(left_explanation(), right_explanation(), query_term=0)
    assert "cosine with &#x27;define&#x27;" in view


def test_the_two_sides_must_explain_one_query_with_one_model() -> None:
    other = hand_explanation("another query", RIGHT, np.zeros((2, 8)), MUS, [0] * 4, [0] * 4)
    with pytest.raises(ValueError, match="different queries"):
        side_by_side_html(left_explanation(), other)
    scaled = hand_explanation(QUERY, RIGHT, np.zeros((2, 8)), MUS, [0] * 4, [0] * 4, beta=2.0)
    with pytest.raises(ValueError, match="different models"):
        side_by_side_html(left_explanation(), scaled)
    with pytest.raises(ValueError, match="digits"):
        side_by_side_html(left_explanation(), right_explanation(), digits=-1)


@pytest.mark.parametrize(
    "text",
    ["Wi-Fi (2.4 GHz)", "İstanbul's ΟΔΟΣ straße", "  leading, trailing.  ", "", "ﬁne _under_score 3/5"],
)
def test_word_spans_follow_the_tokenizer(text: str) -> None:
    spans = word_spans(text)
    assert len(spans) == len(tokenize(text))
    assert all(start < end for start, end in spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))
    if text.isascii():
        assert [text[start:end].lower() for start, end in spans] == tokenize(text)


def test_a_real_pair_renders(converted: Path) -> None:
    vocabulary = real_vocabulary()
    model = small_tk(vocabulary)
    queries, run, collection = data.load_queries("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    qid = sorted(run)[3]
    first, second = ranking_from_run(run[qid])[:2]
    left = explain_pair(model, vocabulary, queries[qid], collection[first])
    right = explain_pair(model, vocabulary, queries[qid], collection[second])
    view = side_by_side_html(left, right, titles=(f"pid {first}", f"pid {second}"))
    assert html.escape(queries[qid]) in view
    assert view.count("<tr") == 1 + 11 + 3  # header, 11 kernels, β·s_log, γ·s_len, s
    assert f">{left.s:.2f}<" in view and f">{right.s:.2f}<" in view


def test_a_word_piece_explanation_colours_pieces_in_the_original_text() -> None:
    assert piece_spans("The receptor (AR) binds.", ["the", "rec", "##eptor", "(", "ar", ")", "bind", "##s", "."]) == [
        (0, 3), (4, 7), (7, 12), (13, 14), (14, 16), (16, 17), (18, 22), (22, 23), (23, 24),
    ]  # fmt: skip
    assert piece_spans("Café", ["cafe"]) is None
    torch.manual_seed(0)
    model, tokenizer = TKBert(minilm_folder(), 1), load_tokenizer(minilm_folder())
    passage = "The androgen receptor (AR) is a type of nuclear receptor. " * 40
    explanation = explain_pair(model, tokenizer, "androgen receptor define", passage)
    page = passage_html(explanation, highlight=[1.0, 0.9, 0.7])
    assert "androgen" in page and "not scored" in page, "the pieces beyond the cap of 200 are greyed"
    short = explain_pair(model, tokenizer, "androgen receptor define", "The androgen receptor (AR).")
    assert "not scored" not in passage_html(short, highlight=[1.0, 0.9, 0.7])
