"""Builders shared by the tests of the query analysis and TK interpretation modules (chapters 4 and 5).

- :func:`real_vocabulary` and :func:`small_tk`: a small TK with random embeddings over a vocabulary
  built from a slice of the real collection (the data must be converted: the ``converted`` fixture).
- :func:`hand_explanation`: a :class:`lib.analyses.explain_tk.PairExplanation` with a hand-made match matrix
  and kernel table, for tests whose expected output is computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from lib import data
from lib.analyses.explain_tk import KERNEL_COLUMNS, PairExplanation
from lib.models.tk import TK, TKConfig
from lib.representations.text import Vocabulary, tokenize

#: Tiny Transformer settings for fast tests (the paper's sizes are TK's defaults).
TINY = {"num_heads": 2, "head_dim": 4, "ff_dim": 8}
DIM = 16


def real_vocabulary(passages: int = 2000) -> Vocabulary:
    """The vocabulary (min count 2) of the first ``passages`` passages of the v1 collection, by passage id."""
    collection = data.load_collection("v1")
    return Vocabulary.build([collection[pid] for pid in sorted(collection)[:passages]], min_count=2)


def small_tk(vocabulary: Vocabulary, seed: int = 0, **settings) -> TK:
    """A tiny TK in eval mode with random ``DIM``-d embeddings (row 0, padding, is zero)."""
    generator = torch.Generator().manual_seed(seed)
    embeddings = torch.randn(len(vocabulary), DIM, generator=generator)
    embeddings[0] = 0.0
    torch.manual_seed(seed)
    return TK(embeddings, config=TKConfig(**{**TINY, **settings})).eval()


def hand_explanation(
    query: str,
    passage: str,
    match: np.ndarray,
    mus: list[float],
    log_terms: list[float],
    len_terms: list[float],
    beta: float = 1.0,
    gamma: float = 1.0,
) -> PairExplanation:
    """An explanation with the given match matrix (tokens: :func:`lib.representations.text.tokenize`) and kernel terms.

    The match matrix may cover fewer passage tokens than the text has (a text beyond the model's cap).
    Raw ``s_log_k`` / ``s_len_k`` equal the terms (weights 1), and ``s = Σ terms``.
    """
    query_tokens = tokenize(query)
    passage_tokens = tokenize(passage)[: match.shape[1]]
    assert match.shape[0] == len(query_tokens)
    kernels = pd.DataFrame(
        {
            "mu": mus,
            "sigma": [0.1] * len(mus),
            "s_log_k": log_terms,
            "s_len_k": len_terms,
            "w_log": [1.0] * len(mus),
            "w_len": [1.0] * len(mus),
            "log_term": log_terms,
            "len_term": len_terms,
            "term": np.add(log_terms, len_terms),
        },
        columns=list(KERNEL_COLUMNS),
    )
    kernel_sums = pd.DataFrame(np.zeros((len(query_tokens), len(mus))), columns=mus)
    kernel_sums.insert(0, "term", query_tokens)
    s_log, s_len = float(np.sum(log_terms)), float(np.sum(len_terms))
    return PairExplanation(
        query=query,
        passage=passage,
        query_tokens=query_tokens,
        passage_tokens=passage_tokens,
        match=np.asarray(match, dtype=float),
        kernel_sums=kernel_sums,
        kernels=kernels,
        s_log=s_log,
        s_len=s_len,
        s=beta * s_log + gamma * s_len,
        alpha=0.5,
        beta=beta,
        gamma=gamma,
        scaler=1.0,
    )
