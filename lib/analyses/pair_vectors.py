"""Does BERT-cat's ``[CLS]`` vector tell query–passage pairs apart? (chapter 2, "BERT-cat's `[CLS]` vector").

BERT-cat scores a pair by one linear layer on the output vector of ``[CLS]`` (Nogueira & Cho 2019;
lecture 8, slide 9). That is a good start when ``[CLS]`` was trained to summarise its input, as
bert-base-uncased's was by next-sentence prediction. all-MiniLM-L6-v2 was trained as a bi-encoder
whose output is the *mean* of its vectors (Reimers & Gurevych 2019, §3): nothing asked its ``[CLS]``
vector to carry anything, and the linear layer on top can only learn once fine-tuning has moved
information there.

:func:`pair_vector_similarity` measures it: the mean cosine between the vectors of different pairs,
for the ``[CLS]`` vector and for the mean of the output vectors. A cosine near 1 means every pair
gets (nearly) the same vector, so no linear layer on it can rank. :func:`similarity_by_depth` repeats
it after each of the starting BERT's layers (a BERT-cat on its first *k* layers), which shows where
the ``[CLS]`` vector starts to differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from transformers import BertConfig

from lib.models.bert_cat import BertCat
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH


def mean_pairwise_cosine(vectors: torch.Tensor) -> float:
    """The mean cosine between every two different rows of ``vectors`` ``[N, H]`` (N ≥ 2)."""
    if vectors.dim() != 2 or vectors.shape[0] < 2:
        raise ValueError(f"need at least 2 vectors as a [N, H] matrix, got shape {tuple(vectors.shape)}")
    unit = torch.nn.functional.normalize(vectors.double(), dim=1)
    similarity = unit @ unit.T
    count = vectors.shape[0]
    return float((similarity.sum() - similarity.diagonal().sum()) / (count * (count - 1)))


def pair_vector_similarity(
    model: BertCat, tokenizer: Any, pairs: Sequence[tuple[str, str]], batch_size: int = 32
) -> dict[str, float]:
    """Mean cosine across ``pairs`` (query text, passage text) of BERT-cat's two candidate pair vectors.

    Returns ``{"[CLS] vector": …, "mean of the output vectors": …}``: the vector BERT-cat scores, and
    the mean over the pair's tokens (what the bi-encoder it may start from was trained to make
    meaningful). Queries and passages are cut as everywhere in the book; the model runs in eval mode
    on its own device, without gradients.
    """
    if len(pairs) < 2:
        raise ValueError(f"parameter 'pairs' needs at least 2 query–passage pairs, got {len(pairs)}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    cls_vectors, mean_vectors = [], []
    with torch.inference_mode():
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            query_ids, query_mask = tokenizer.encode([query for query, _ in chunk], QUERY_MAX_LENGTH)
            doc_ids, doc_mask = tokenizer.encode([passage for _, passage in chunk], DOC_MAX_LENGTH)
            hidden, attention = model.encode_pairs(
                query_ids.to(device), query_mask.to(device), doc_ids.to(device), doc_mask.to(device)
            )
            weights = attention.unsqueeze(-1).to(hidden.dtype)
            cls_vectors.append(hidden[:, 0].float().cpu())
            mean_vectors.append(((hidden * weights).sum(dim=1) / weights.sum(dim=1)).float().cpu())
    model.train(was_training)
    return {
        "[CLS] vector": mean_pairwise_cosine(torch.cat(cls_vectors)),
        "mean of the output vectors": mean_pairwise_cosine(torch.cat(mean_vectors)),
    }


def similarity_by_depth(
    bert_path: Path, tokenizer: Any, pairs: Sequence[tuple[str, str]], depths: Sequence[int] | None = None
) -> pd.DataFrame:
    """:func:`pair_vector_similarity` of an untrained BERT-cat on the first *k* layers of the BERT in
    ``bert_path``, for each *k* of ``depths`` (``None``: 1 to all its layers); one row per *k*
    (index ``layers``). The new linear layers' random start draws from a forked generator, so the
    caller's random state is left as it was."""
    depths = list(range(1, BertConfig.from_pretrained(bert_path).num_hidden_layers + 1)) if depths is None else depths
    if not depths or min(depths) < 1:
        raise ValueError(f"parameter 'depths' must be positive layer counts, got {depths}")
    rows = []
    with torch.random.fork_rng(devices=[]):
        for depth in depths:
            model = BertCat(bert_path, num_layers=depth)
            rows.append({"layers": depth, **pair_vector_similarity(model, tokenizer, pairs)})
    return pd.DataFrame(rows).set_index("layers")
