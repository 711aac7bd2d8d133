"""Static word-piece vectors distilled from a BERT's *outputs* (model2vec's recipe, Tulkens & van Dongen 2024).

A word model (KNRM, Conv-KNRM, TK) starts from one fixed vector per vocabulary term. GloVe 6B 50-d is
what installs here, and TK on it stays level with BM25 at book scale. model2vec builds such vectors
from a sentence encoder instead, in one pass and without training:

1. every word piece ``p`` of the BERT's vocabulary goes through the BERT *alone*, as ``[CLS] p [SEP]``;
2. its vector is the mean of the three output vectors (the encoder's own pooling, mean pooling for
   all-MiniLM-L6-v2);
3. a PCA over all pieces keeps the ``dim`` directions of largest variance (model2vec: 256).

The padding piece (row 0) is zeroed, as the word models' padding row. Named choices: model2vec's
Zipf re-weighting of the components is left out (the models fine-tune every row anyway); the PCA is
centred on the mean of the real pieces and each component's sign is fixed so that its largest
coordinate is positive (the same vectors on every run). The ``model2vec`` package pins an older
transformers than the book's, hence these few lines instead of a dependency.

Because a piece vector is what the encoder *outputs* for the piece, pieces that the encoder maps to
nearby sentence vectors (synonyms, paraphrases, topical relatives) get nearby static vectors: the
cosine match matrix of a kernel model then sees the encoder's notion of similarity, not BERT's raw
input embeddings (which are not meant to be compared by cosine without its layers).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from tqdm.auto import tqdm

from lib.core.broken_files import read_or_set_aside
from lib.representations.bert import CLS_ID, PAD_ID, SEP_ID, load_bert
from lib.representations.word_vectors import load_matrix, save_matrix

#: model2vec's default width of the distilled vectors.
PIECE_VECTOR_DIM = 256


@torch.no_grad()
def piece_outputs(
    bert_folder: str | os.PathLike,
    pieces: Sequence[int] | None = None,
    batch_size: int = 1024,
    progress: bool = True,
) -> torch.Tensor:
    """Step 1–2: the mean output vector of ``[CLS] p [SEP]`` for each piece id ``p`` of ``pieces`` (``None``:
    the BERT's whole vocabulary, in id order), ``[len(pieces), H]``."""
    bert = load_bert(bert_folder).eval()
    every = torch.arange(bert.config.vocab_size) if pieces is None else torch.as_tensor(list(pieces), dtype=torch.long)
    rows = []
    for start in tqdm(range(0, len(every), batch_size), desc="piece vectors", disable=not progress):
        chosen = every[start : start + batch_size]
        ids = torch.stack([torch.full_like(chosen, CLS_ID), chosen, torch.full_like(chosen, SEP_ID)], dim=1)
        hidden = bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        rows.append(hidden.float().mean(dim=1))
    return torch.cat(rows)


def principal_components(vectors: torch.Tensor, dim: int, skip: int = PAD_ID) -> torch.Tensor:
    """Step 3: ``vectors`` ``[V, H]`` projected on their ``dim`` principal components, ``[V, dim]``; row ``skip``
    (the padding piece) is left out of the fit and set to 0.

    Centred on the mean of the fitted rows; each component's sign makes its largest-magnitude coordinate
    positive. ``dim`` must be in 1..H.
    """
    if not 1 <= dim <= vectors.shape[1]:
        raise ValueError(f"parameter 'dim' must be in 1..{vectors.shape[1]}, got {dim}")
    fitted = torch.ones(vectors.shape[0], dtype=torch.bool)
    fitted[skip] = False
    data = vectors.double()
    mean = data[fitted].mean(dim=0)
    _, _, components = torch.linalg.svd(data[fitted] - mean, full_matrices=False)
    components = components[:dim]
    largest = components.gather(1, components.abs().argmax(dim=1, keepdim=True))
    components = components * torch.sign(largest)
    projected = ((data - mean) @ components.T).float()
    projected[skip] = 0.0
    return projected


def piece_vectors(
    bert_folder: str | os.PathLike, cache: Path, dim: int = PIECE_VECTOR_DIM, progress: bool = True
) -> torch.Tensor:
    """The ``[V, dim]`` static piece vectors of the BERT in ``bert_folder`` (steps 1–3), cached at ``cache``
    (``.npy``, written atomically): computed once, then read (a broken cache is set aside, with a warning, and
    computed again)."""
    matrix = read_or_set_aside(cache, load_matrix, "a cache of piece vectors")
    if matrix is not None:
        if matrix.shape[1] != dim:
            raise ValueError(f"{cache}: {matrix.shape[1]}-d piece vectors, but {dim}-d were asked for")
        return matrix
    matrix = principal_components(piece_outputs(bert_folder, progress=progress), dim)
    save_matrix(cache, matrix)
    return matrix
