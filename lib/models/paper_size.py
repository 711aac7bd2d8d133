"""Random-weight models of the paper's (and the book's) sizes, for timing only.

A model's speed does not depend on its trained weights, so the TK paper's Docs./ms column (Table 2)
and its "TK with 2 layers 40 times faster than BERT-Base" (§3.3) can be re-measured on today's
hardware without the paper's checkpoints: every architecture of :data:`ARCHITECTURES` is built with
random weights in the paper's configuration (TK paper §4.3):

- ``tk1`` / ``tk2`` / ``tk3``: TK with 1–3 layers, 300-d word embeddings, 16 heads of size 32, FF 100,
  11 kernels (:class:`lib.models.tk.TK` defaults, the book's chapter-2 model);
- ``knrm``, ``conv-knrm``: 300-d word embeddings, 11 kernels (+ exact match), Conv-KNRM with 128
  filters and uni- to tri-grams (the book's chapter-2 models);
- ``bert-base`` / ``bert-large``: BERT-cat over ``bert-base-uncased``'s shapes (12 layers, 768 wide,
  12 heads, FF 3,072; 24 layers, 1,024 wide, 16 heads, FF 4,096; 512 positions, 30,522 word pieces);
- ``bert-cat-book``: BERT-cat over the book's small BERT (:func:`lib.representations.bert.small_bert_config`'s
  defaults, the shape chapter 2 trains), so the book-scale models can be timed side by side.

The word architectures are the registered models of the same name (:mod:`lib.models.registry`, which
also gives their labels), built from a random embedding matrix of ``vocab_size`` rows (any size: a
lookup costs the same); the BERT models use the real bert-base-uncased vocabulary
(:class:`lib.representations.bert.WordPieceTokenizer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import BertConfig, BertModel

from lib.models.bert_cat import BertCat
from lib.models.registry import Family, label, model_spec
from lib.representations.bert import PAD_ID, small_bert_config

#: Width of the word embeddings of the paper's non-BERT models (GloVe-42B, TK paper §4.3).
WORD_DIM = 300


@dataclass(frozen=True)
class Architecture:
    """A timed architecture: its book name, its label in tables, its tokenizer family, BERT shape, and the
    documents per ms the TK paper reports for it (Table 2, "Docs./ms", averaged over its collections,
    measured on the GPUs of 2019; ``None`` where the paper has no such model).
    """

    name: str
    label: str
    family: Family  # "word" (lib.representations.text.Vocabulary) or "wordpiece" (WordPieceTokenizer)
    bert_shape: tuple[int, int, int, int] | None = None  # layers, hidden, heads, intermediate
    paper_docs_per_ms: float | None = None


ARCHITECTURES: dict[str, Architecture] = {
    architecture.name: architecture
    for architecture in (
        Architecture("knrm", label("knrm"), "word", paper_docs_per_ms=49),
        Architecture("conv-knrm", label("conv-knrm"), "word", paper_docs_per_ms=10),
        Architecture("tk1", label("tk1"), "word", paper_docs_per_ms=6),
        Architecture("tk2", label("tk2"), "word", paper_docs_per_ms=4),
        Architecture("tk3", label("tk3"), "word", paper_docs_per_ms=2),
        Architecture("bert-cat-book", "BERT-cat (book's small BERT)", "wordpiece"),
        Architecture("bert-base", "BERT-Base (BERT-cat)", "wordpiece", (12, 768, 12, 3072), 0.1),
        Architecture("bert-large", "BERT-Large (BERT-cat)", "wordpiece", (24, 1024, 16, 4096), 0.03),
    )
}


def architecture(name: str) -> Architecture:
    """The :class:`Architecture` called ``name``; an unknown name is a ``ValueError`` listing the known ones."""
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {name!r}; known: {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def bert_config(name: str) -> BertConfig:
    """The ``BertConfig`` of a BERT architecture (``bert-base``, ``bert-large``, ``bert-cat-book``)."""
    spec = architecture(name)
    if spec.family != "wordpiece":
        raise ValueError(f"architecture {name!r} is not a BERT")
    if spec.bert_shape is None:
        return small_bert_config()
    layers, hidden, heads, intermediate = spec.bert_shape
    return BertConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        pad_token_id=PAD_ID,
    )


def build_timing_model(name: str, vocab_size: int = 50_000, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised (seeded) model of architecture ``name``, in eval mode, on the CPU, float32."""
    spec = architecture(name)
    if vocab_size < 2:
        raise ValueError(f"parameter 'vocab_size' must be >= 2, got {vocab_size}")
    torch.manual_seed(seed)
    if spec.family == "wordpiece":
        model: torch.nn.Module = BertCat(BertModel(bert_config(name), add_pooling_layer=False))
    else:
        embeddings = torch.randn(vocab_size, WORD_DIM) * 0.1
        embeddings[0] = 0.0
        model = model_spec(name).build(embeddings)
    return model.eval()


def parameter_count(model: torch.nn.Module) -> int:
    """The number of parameters of ``model`` (embeddings included)."""
    return sum(parameter.numel() for parameter in model.parameters())
