"""BERT for the book: the real bert-base-uncased WordPiece vocabulary and a small BERT pre-trained in the book.

No pre-trained BERT can be downloaded at book scale (ARCHITECTURE.md, "Conventions"). The BERT-style
models (BERT-cat, TILDE, …) therefore start from a small BERT that the book pre-trains with the
masked-LM objective of Devlin et al. on its own corpus, with the real bert-base-uncased vocabulary,
so that the ``paper`` profile only swaps the checkpoint for ``bert-base-uncased`` (its pinned,
hash-checked folder, :func:`lib.representations.pretrained.bert_base_uncased_folder`).

- :func:`small_bert_config` — the book's size, chosen for 2 CPU cores: 2 layers, hidden 128, 2 heads,
  feed-forward 512 (the shape of Google's "BERT-tiny", Turc et al. 2019; 4.4M parameters, 3.9M of
  them the 30,522-piece embedding) and 256 positions, enough for ``[CLS] q [SEP] d [SEP]`` with the
  paper's caps (3 + 30 + 200). Measured on the book machine (2 AMD EPYC cores, fp32): masked-LM
  pre-training at batch 32 × 128 runs ~1.8 steps/s (~7,000 word pieces/s) for this size against
  ~0.6 steps/s for the 4-layer, 256-wide "BERT-mini" (:data:`BERT_SIZES`), and BERT-cat scores
  ~260 vs. ~60 pairs/s; in the same 4 minutes of pre-training the tiny model also reaches the lower
  held-out MLM loss (6.99 vs. 7.27 nats; a unigram model: 7.12). Larger sizes are for a GPU.
- :class:`WordPieceTokenizer` — the tokenizer contract of :mod:`lib.representations.text` over the real
  ``vocab.txt``: ``encode`` returns word pieces **without** ``[CLS]``/``[SEP]`` (the models add them).
- masked-LM pre-training of the small BERT is :func:`lib.training.masked_lm.pretrain_mlm`.
- :func:`load_bert` — a local checkpoint folder (the ``paper`` profile's is the pinned bert-base-uncased
  folder), or a Hugging Face name that a user passes explicitly (unpinned: the hub's latest revision).

transformers 5 note: ``BertTokenizerFast(vocab_file=...)`` silently ignores ``vocab_file`` and builds
a five-token vocabulary; this module therefore reads ``vocab.txt`` itself and passes the mapping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer
from transformers.utils import logging as hf_logging

from lib.core import paths
from lib.core.atomic import atomic_write
from lib.representations.text import pad_batch

#: Where ``make data`` puts the real bert-base-uncased vocabulary (a registry file; 30,522 lines).
BERT_VOCAB_NAME = "AtaQou/AnakthshPlhroforias/colbertv2.0/vocab.txt"
#: bert-base-uncased's special ids.
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 100, 101, 102, 103
#: The first ordinary word piece of bert-base-uncased ("!"); ids below are [PAD], [unused*], specials.
FIRST_REGULAR_ID = 999


def bert_vocab_file() -> Path:
    """The real bert-base-uncased ``vocab.txt`` among the fetched registry files; missing: says what to run."""
    path = paths.raw_dir() / BERT_VOCAB_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file. Run `make data` (or `python -m lib.data.convert`) to fetch it.")
    return path


#: Named BERT shapes (Turc et al. 2019's compact BERTs): ``small_bert_config(**BERT_SIZES["mini"])``.
BERT_SIZES: dict[str, dict[str, int]] = {
    "tiny": {"layers": 2, "hidden": 128, "heads": 2, "intermediate": 512},
    "mini": {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024},
    "small": {"layers": 4, "hidden": 512, "heads": 8, "intermediate": 2048},
    "medium": {"layers": 8, "hidden": 512, "heads": 8, "intermediate": 2048},
}


def small_bert_config(
    vocab_size: int = 30522,
    layers: int = 2,
    hidden: int = 128,
    heads: int = 2,
    intermediate: int = 512,
    max_position: int = 256,
    dropout: float = 0.1,
) -> BertConfig:
    """A ``BertConfig`` for the book's small BERT (defaults: BERT-tiny's shape, 256 positions; see the module doc).

    ``max_position`` must hold the longest BERT-cat input: 3 + 30 + 200 = 233 word pieces with the
    paper's caps. Dropout 0.1 as BERT; everything else is bert-base-uncased's configuration.
    """
    if hidden % heads:
        raise ValueError(f"parameter 'hidden' ({hidden}) must be a multiple of 'heads' ({heads})")
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=max_position,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        pad_token_id=PAD_ID,
    )


def read_vocab(path: str | os.PathLike) -> dict[str, int]:
    """``{piece: id}`` of a BERT ``vocab.txt`` (one piece per line, id = line number from 0)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such vocabulary file")
    vocab: dict[str, int] = {}
    with open(path, encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            piece = line.rstrip("\n")
            if not piece:
                raise ValueError(f"{path}:{number}: empty vocabulary entry")
            if piece in vocab:
                raise ValueError(f"{path}:{number}: {piece!r} already has id {vocab[piece]}")
            vocab[piece] = number - 1
    return vocab


class WordPieceTokenizer:
    """bert-base-uncased's WordPiece tokenizer with the book's tokenizer contract.

    ``encode(texts, max_length)`` gives word-piece ids **without** ``[CLS]``/``[SEP]``, right-padded
    with 0 (``[PAD]``), and the mask; :attr:`hf` is the underlying transformers tokenizer.
    """

    def __init__(self, hf_tokenizer: BertTokenizer) -> None:
        self.hf = hf_tokenizer
        for name in ("pad", "cls", "sep", "mask", "unk"):
            if getattr(hf_tokenizer, f"{name}_token_id") is None:
                raise ValueError(f"the tokenizer has no [{name.upper()}] token")
        self.pad_id = hf_tokenizer.pad_token_id
        self.cls_id = hf_tokenizer.cls_token_id
        self.sep_id = hf_tokenizer.sep_token_id
        self.mask_id = hf_tokenizer.mask_token_id
        self.unk_id = hf_tokenizer.unk_token_id
        if self.pad_id != 0:
            raise ValueError(f"the tokenizer's [PAD] id is {self.pad_id}; the book's contract pads with 0")

    @classmethod
    def from_vocab(cls, vocab_file: str | os.PathLike | None = None, lowercase: bool = True) -> WordPieceTokenizer:
        """The tokenizer of a ``vocab.txt`` (default: the real bert-base-uncased one); no network."""
        vocab = read_vocab(bert_vocab_file() if vocab_file is None else vocab_file)
        return cls(BertTokenizer(vocab=vocab, do_lower_case=lowercase))

    def __len__(self) -> int:
        return len(self.hf)

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def pieces(self, texts: Sequence[str], max_length: int | None = None) -> list[list[int]]:
        """Word-piece ids of each text, without special tokens, cut at ``max_length`` (``None``: uncut). The tokenizer
        is left as it was (no truncation), so that it pickles the same whatever it tokenized last."""
        if isinstance(texts, str):
            raise TypeError("parameter 'texts' must be a list of strings, not one string")
        kwargs = {"truncation": True, "max_length": max_length} if max_length is not None else {}
        ids = self.hf(list(texts), add_special_tokens=False, **kwargs)["input_ids"]
        if max_length is not None:  # the backend keeps a call's truncation, and a pickle (a score-cache key) sees it
            self.hf.backend_tokenizer.no_truncation()
        return ids

    def encode(self, texts: Sequence[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The tokenizer contract: ``(ids LongTensor[B, L], mask BoolTensor[B, L])``, no special tokens."""
        if max_length < 1:
            raise ValueError(f"parameter 'max_length' must be at least 1, got {max_length}")
        return pad_batch(self.pieces(texts, max_length), max_length)

    def decode(self, ids: Sequence[int]) -> list[str]:
        """The word pieces of ``ids``."""
        return self.hf.convert_ids_to_tokens([int(i) for i in ids])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the tokenizer into the folder ``path`` (transformers files plus ``vocab.txt``), atomically."""
        with staged_folder(path) as staging:
            self.save_files(staging)
        return Path(path)

    def save_files(self, folder: Path) -> None:
        """Write the tokenizer's files into an existing folder (not atomic: for :func:`staged_folder` folders)."""
        self.hf.save_pretrained(folder)
        vocab = sorted(self.hf.get_vocab().items(), key=lambda item: item[1])
        with atomic_write(folder / "vocab.txt") as handle:
            handle.writelines(f"{piece}\n" for piece, _ in vocab)

    @classmethod
    def load(cls, path: str | os.PathLike) -> WordPieceTokenizer:
        """Read a tokenizer folder written by :meth:`save` (or by ``save_pretrained``), or a ``vocab.txt``."""
        path = Path(path)
        if path.is_file():
            return cls.from_vocab(path)
        if (path / "tokenizer.json").is_file() or (path / "tokenizer_config.json").is_file():
            return cls(BertTokenizer.from_pretrained(path, local_files_only=True))
        if (path / "vocab.txt").is_file():
            return cls.from_vocab(path / "vocab.txt")
        raise FileNotFoundError(f"{path}: no tokenizer.json, tokenizer_config.json or vocab.txt here")


@contextlib.contextmanager
def staged_folder(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary sibling folder whose files replace those of ``path`` on success (one rename per file).

    The folder ``path`` may already hold other files (a checkpoint); they are kept. An exception
    leaves ``path`` as it was.
    """
    target = Path(path)
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent))
    try:
        yield staging
        for item in sorted(staging.iterdir()):
            destination = target / item.name
            if destination.is_dir() and not item.is_dir():
                raise IsADirectoryError(f"{destination}: a folder is in the way of a file")
            os.replace(item, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --- loading ---------------------------------------------------------------------------------------------------------
def _looks_like_path(name: str) -> bool:
    """A local path rather than a hub name (``bert-base-uncased``, ``org/name``)."""
    return name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1


def load_bert(
    name_or_path: str | os.PathLike, lm_head: bool = False, pooler: bool = False, local_files_only: bool = False
) -> BertModel | BertForMaskedLM:
    """A BERT from a local checkpoint folder or a Hugging Face name.

    Args:
        name_or_path: a folder written by ``save_pretrained`` (e.g. by :func:`pretrain_mlm`, or the
            ``paper`` profile's :func:`lib.representations.pretrained.bert_base_uncased_folder`), or a hub
            name such as ``bert-base-uncased`` (unpinned; needs internet or the local Hugging Face cache). A name
            that is no existing folder and does not look like a path (``./x``, ``/x``, ``~/x``,
            ``a/b/c``) is a hub name, also when given as a ``Path``.
        lm_head: return ``BertForMaskedLM`` (TILDE needs the LM head) instead of ``BertModel``.
        pooler: keep BERT's pooler (dense + tanh on ``[CLS]``); the book's small BERT never trains it.
        local_files_only: never touch the network (only the cache) for a hub name.
    """
    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    kwargs = {} if lm_head else {"add_pooling_layer": pooler}
    model_class = BertForMaskedLM if lm_head else BertModel
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"{path}: no config.json, so not a transformers checkpoint (pretrain_mlm or save_pretrained writes one)"
            )
        with _quiet_transformers():
            return model_class.from_pretrained(path, local_files_only=True, **kwargs)
    if _looks_like_path(text) or path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint folder (the BERT pre-training chapter writes it)")
    try:
        with _quiet_transformers():
            return model_class.from_pretrained(text, local_files_only=local_files_only, **kwargs)
    except (OSError, ValueError) as error:
        raise OSError(
            f"cannot load {text!r}: it is not a local folder and the Hugging Face Hub (or its local cache) "
            f"does not give it ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
            f"A hub name needs internet to download {text!r} once (or download it elsewhere and pass the "
            "folder; the paper profile's pinned bert-base-uncased is "
            "lib.representations.pretrained.bert_base_uncased_folder())."
        ) from error


def load_tokenizer(name_or_path: str | os.PathLike) -> WordPieceTokenizer:
    """The tokenizer saved beside a checkpoint (or its ``vocab.txt``), or a hub name's tokenizer."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return WordPieceTokenizer.load(path)
    try:
        return WordPieceTokenizer(BertTokenizer.from_pretrained(os.fspath(name_or_path)))
    except (OSError, ValueError) as error:
        name = os.fspath(name_or_path)
        raise OSError(
            f"cannot load the tokenizer of {name!r}: no such folder and no Hugging Face Hub access"
        ) from error


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide transformers' load reports (unused LM-head weights of an MLM checkpoint are expected)."""
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


__all__ = [
    "BERT_SIZES",
    "BERT_VOCAB_NAME",
    "WordPieceTokenizer",
    "bert_vocab_file",
    "load_bert",
    "load_tokenizer",
    "read_vocab",
    "small_bert_config",
]
