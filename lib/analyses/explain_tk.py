"""Explaining one TK score (TK paper §6, eq. 4–10), as tidy tables built on :meth:`lib.models.tk.TK.explain`.

TK's only interaction between query and passage is the cosine match matrix ``M`` (eq. 4); every
later step is a sum, a logarithm or a weight, so the score decomposes exactly over the kernels:
``s = Σ_k (β·c·W_log[k]·s_log^k + γ·c·W_len[k]·s_len^k)`` (eq. 7–10, ``c`` the optional feature
scaler, 1 by default). :func:`explain_pair` returns that decomposition for one (query, passage) pair:

- the model's tokens of both texts (vocabulary terms, ``[UNK]`` for out-of-vocabulary words, cut at
  the paper's 30 / 200 tokens) and the match matrix;
- ``K_i^k`` (eq. 6) per query term and kernel;
- the per-kernel table: ``s_log^k`` and ``s_len^k`` (eq. 7, 8) before and after the learned weights;
- ``s_log``, ``s_len`` (eq. 9), ``β``, ``γ`` and the score ``s`` (eq. 10).

:func:`passage_matches` assigns every passage token to a kernel for the Figure 3 view
(:mod:`lib.analyses.explain_html`). **Best-match rule**: a token's match value is its **maximum cosine over the
real query terms** (or its cosine with one chosen query term, ``query_term``), and its kernel is the
one whose centre μ is closest to that value (ties: the larger μ). The paper colours words "closest to
the center of the kernel"; it does not say over which query term, hence the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lib.models.tk import TK
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary

#: Columns of the per-kernel table, in order.
KERNEL_COLUMNS: tuple[str, ...] = (
    "mu",
    "sigma",
    "s_log_k",
    "s_len_k",
    "w_log",
    "w_len",
    "log_term",
    "len_term",
    "term",
)


@dataclass(frozen=True)
class PairExplanation:
    """Every intermediate result of TK's score of one (query, passage) pair, as tables.

    ``kernels`` (one row per kernel, index ``k``, columns :data:`KERNEL_COLUMNS`): ``mu``, ``sigma``;
    ``s_log_k`` / ``s_len_k`` (eq. 7 / 8, no weight); ``w_log`` / ``w_len`` (the learned ``W_log[k]``,
    ``W_len[k]``); ``log_term = β·c·w_log·s_log_k`` and ``len_term = γ·c·w_len·s_len_k`` (the learned
    weights applied); ``term = log_term + len_term``. Then ``kernels.log_term.sum() = β·s_log``,
    ``kernels.len_term.sum() = γ·s_len`` and ``kernels.term.sum() = s``.
    """

    query: str
    passage: str
    #: The model's tokens (vocabulary terms, ``[UNK]`` for unknown words), after the length caps.
    query_tokens: list[str]
    passage_tokens: list[str]
    #: Cosine match matrix ``M`` (eq. 4), ``[len(query_tokens), len(passage_tokens)]``.
    match: np.ndarray
    #: ``K_i^k`` (eq. 6): one row per query token (index ``position``), a ``term`` column, one column per μ.
    kernel_sums: pd.DataFrame
    #: The per-kernel table (class docstring).
    kernels: pd.DataFrame
    #: ``s_log``, ``s_len`` (eq. 9, feature scaler included) and ``s = β·s_log + γ·s_len`` (eq. 10).
    s_log: float
    s_len: float
    s: float
    #: The learned scalars: α (eq. 1), β and γ (eq. 10) and the feature scaler ``c`` (1 when off).
    alpha: float
    beta: float
    gamma: float
    scaler: float
    #: Whether the tokens are word pieces (a WordPiece tokenizer: ``##`` continues a word, punctuation kept).
    word_pieces: bool = False


def _ids(
    tokenizer: Vocabulary | WordPieceTokenizer, text: str, max_length: int, name: str
) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(text, str):
        raise TypeError(f"parameter '{name}' must be a string, got {type(text).__name__}")
    ids, mask = tokenizer.encode([text], max_length)
    if not mask.any():
        raise ValueError(f"parameter '{name}' has no token to score: {text[:60]!r}")
    return ids, mask


def explain_pair(
    model: TK,
    tokenizer: Vocabulary | WordPieceTokenizer,
    query: str,
    passage: str,
    max_query_length: int = QUERY_MAX_LENGTH,
    max_doc_length: int = DOC_MAX_LENGTH,
) -> PairExplanation:
    """TK's score of (``query``, ``passage``) and its exact decomposition (module docstring).

    The texts are encoded as TK scores them (``tokenizer.encode``, the paper's 30 / 200 token caps);
    the model runs in eval mode under ``torch.inference_mode()`` on its own device (its training
    mode is restored). A text without any token is a ``ValueError`` naming the parameter.
    """
    query_ids, query_mask = _ids(tokenizer, query, max_query_length, "query")
    doc_ids, doc_mask = _ids(tokenizer, passage, max_doc_length, "passage")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            parts = model.explain(query_ids.to(device), query_mask.to(device), doc_ids.to(device), doc_mask.to(device))
    finally:
        model.train(was_training)
    query_tokens = tokenizer.decode(query_ids[0][query_mask[0]].tolist())
    passage_tokens = tokenizer.decode(doc_ids[0][doc_mask[0]].tolist())
    lq, ld = len(query_tokens), len(passage_tokens)
    mus = np.round(parts.mus.cpu().numpy().astype(float), 6)  # float32 centres, shown as 0.7 rather than 0.69999…

    def row(tensor: torch.Tensor) -> np.ndarray:
        return tensor[0].float().cpu().numpy().astype(float)

    kernel_sums = pd.DataFrame(parts.kernel_sums[0, :lq].cpu().numpy().astype(float), columns=list(mus))
    kernel_sums.insert(0, "term", query_tokens)
    kernel_sums.index.name = "position"
    log_term, len_term = row(parts.log_terms), row(parts.len_terms)
    kernels = pd.DataFrame(
        {
            "mu": mus,
            "sigma": np.round(parts.sigmas.cpu().numpy().astype(float), 6),
            "s_log_k": row(parts.s_log_k),
            "s_len_k": row(parts.s_len_k),
            "w_log": model.w_log.weight[0].detach().float().cpu().numpy().astype(float),
            "w_len": model.w_len.weight[0].detach().float().cpu().numpy().astype(float),
            "log_term": log_term,
            "len_term": len_term,
            "term": log_term + len_term,
        },
        columns=list(KERNEL_COLUMNS),
    )
    kernels.index.name = "k"
    return PairExplanation(
        query=query,
        passage=passage,
        query_tokens=query_tokens,
        passage_tokens=passage_tokens,
        match=parts.match[0, :lq, :ld].float().cpu().numpy(),
        kernel_sums=kernel_sums,
        kernels=kernels,
        s_log=float(parts.s_log[0]),
        s_len=float(parts.s_len[0]),
        s=float(parts.s[0]),
        alpha=float(parts.alpha.detach()),
        beta=float(parts.beta.detach()),
        gamma=float(parts.gamma.detach()),
        scaler=float(parts.scaler.detach()),
        word_pieces=isinstance(tokenizer, WordPieceTokenizer),
    )


def passage_matches(explanation: PairExplanation, query_term: int | None = None) -> pd.DataFrame:
    """Every passage token's best match and closest kernel (the best-match rule of the module docstring).

    One row per passage token (index ``position``): ``term``, ``cosine`` (its maximum cosine over the
    query terms, or its cosine with query token number ``query_term``), ``query_position`` and
    ``query_term`` (the query token giving that cosine; the first one on ties) and ``mu`` (the centre
    of the closest kernel; ties: the larger μ).
    """
    match = explanation.match
    if query_term is None:
        best = match.argmax(axis=0)
    elif isinstance(query_term, int | np.integer) and 0 <= query_term < match.shape[0]:
        best = np.full(match.shape[1], query_term)
    else:
        raise ValueError(
            f"parameter 'query_term' must be None or a query position in [0, {match.shape[0]}), got {query_term!r}"
        )
    cosine = match[best, np.arange(match.shape[1])].astype(float)
    mus = explanation.kernels["mu"].to_numpy()
    by_mu = np.argsort(-mus, kind="stable")  # larger μ first, so argmin's first-hit tie rule picks it
    closest = by_mu[np.abs(cosine[:, None] - mus[by_mu][None, :]).argmin(axis=1)]
    frame = pd.DataFrame(
        {
            "term": explanation.passage_tokens,
            "cosine": cosine,
            "query_position": best,
            "query_term": [explanation.query_tokens[i] for i in best],
            "mu": mus[closest],
        }
    )
    frame.index.name = "position"
    return frame


def closest_words(explanation: PairExplanation, n: int = 6) -> pd.Series:
    """Per query term, the ``n`` distinct passage words with the highest cosine to it: ``"word (0.87), …"``."""
    rows = {}
    for position, term in enumerate(explanation.query_tokens):
        matches = passage_matches(explanation, query_term=position).sort_values(
            "cosine", ascending=False, kind="stable"
        )
        matches = matches.drop_duplicates("term").head(n)
        rows[term] = ", ".join(f"{t} ({c:.2f})" for t, c in zip(matches["term"], matches["cosine"], strict=True))
    return pd.Series(rows)
