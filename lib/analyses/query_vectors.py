"""One vector per query: the mean of its TK contextualised term vectors (TK paper §5.3).

The paper clusters queries "based on their mean contextualized embedding of TK". Here a query's
vector is the mean of the hybrid contextualised vectors ``t̂`` of eq. 1 (:meth:`lib.models.tk.TK.contextualise`)
over its **real** tokens (padding excluded), with the paper's query cap of 30 tokens. Out-of-vocabulary
tokens are real tokens (they carry the ``[UNK]`` embedding and their context), as they are when TK scores.
A query without any token (a text of punctuation only) gets the zero vector.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from tqdm import tqdm

from lib.models.tk import TK
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import QUERY_MAX_LENGTH, Vocabulary


def mean_query_vectors(
    model: TK,
    tokenizer: Vocabulary | WordPieceTokenizer,
    queries: Mapping[str, str],
    batch_size: int = 256,
    max_length: int = QUERY_MAX_LENGTH,
    progress: bool = True,
) -> np.ndarray:
    """The mean contextualised vector of every query, ``[N, D]`` float32, rows in the order of ``queries``.

    ``queries`` maps query ids to texts (its iteration order is the row order). The model runs in
    eval mode under ``torch.inference_mode()`` on its own device (its training mode is restored),
    in batches of ``batch_size`` queries (a tqdm bar when ``progress``).
    """
    if batch_size < 1:
        raise ValueError(f"parameter 'batch_size' must be >= 1, got {batch_size}")
    if not queries:
        raise ValueError("parameter 'queries' is empty: no query to embed")
    texts = list(queries.values())
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    chunks = []
    try:
        with torch.inference_mode():
            starts = range(0, len(texts), batch_size)
            for start in tqdm(starts, desc="query vectors", unit="batch", disable=not progress):
                ids, mask = tokenizer.encode(texts[start : start + batch_size], max_length)
                ids, mask = ids.to(device), mask.to(device)
                vectors = model.contextualise(ids, mask).float()  # 0 at padding
                counts = mask.sum(dim=1, keepdim=True).clamp_min(1).float()
                chunks.append((vectors.sum(dim=1) / counts).cpu())
    finally:
        model.train(was_training)
    return torch.cat(chunks).numpy()
