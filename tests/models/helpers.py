"""Batch builders shared by the kernel-model tests (TK, KNRM, Conv-KNRM)."""

from __future__ import annotations

import torch

VOCAB = 40


def pad(sequences: list[list[int]], length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token id lists to ``length`` (default: the longest): ids ``[B, L]`` and mask ``[B, L]``."""
    length = max(map(len, sequences)) if length is None else length
    ids = torch.zeros(len(sequences), length, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence)
    mask = torch.arange(length)[None, :] < torch.tensor([len(s) for s in sequences])[:, None]
    return ids, mask


def random_pairs(lengths: list[tuple[int, int]], seed: int = 1) -> tuple[list[list[int]], list[list[int]]]:
    """Random query and document id lists (ids 1..VOCAB-1) of the given (query, document) lengths."""
    generator = torch.Generator().manual_seed(seed)
    queries = [torch.randint(1, VOCAB, (lq,), generator=generator).tolist() for lq, _ in lengths]
    docs = [torch.randint(1, VOCAB, (ld,), generator=generator).tolist() for _, ld in lengths]
    return queries, docs
