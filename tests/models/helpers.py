"""Batch builders and tiny models shared by the model tests (TK, KNRM, Conv-KNRM; FirstP, MaxP, IDCM)."""

from __future__ import annotations

import torch
from transformers import BertModel

from lib.models.bert_cat import BertCat
from lib.representations.bert import small_bert_config

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


def random_texts(lengths: list[int], seed: int) -> list[list[int]]:
    """Random word-piece id lists (ids 999..2999, no special ids) of the given lengths."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(999, 3000, (n,), generator=generator).tolist() for n in lengths]


def long_batch(query_lengths: list[int], doc_lengths: list[int], extra: int = 0, seed: int = 0):
    """Random queries and documents of the given lengths, right-padded (``extra`` more columns): ids and masks."""
    queries, docs = random_texts(query_lengths, seed), random_texts(doc_lengths, seed + 1)
    q_ids, q_mask = pad(queries, max(query_lengths) + extra)
    d_ids, d_mask = pad(docs, max(doc_lengths) + extra)
    return q_ids, q_mask, d_ids, d_mask


def tiny_bert_cat(max_position: int = 64) -> BertCat:
    """A seeded BERT-cat on a 2-layer, 32-wide BERT of 3,000 word pieces (in training mode, as built)."""
    torch.manual_seed(0)
    config = small_bert_config(
        vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=max_position
    )
    return BertCat(BertModel(config))
