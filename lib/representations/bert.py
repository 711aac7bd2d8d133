"""BERT for the book: the real bert-base-uncased WordPiece vocabulary and a small BERT pre-trained in the book.

No pre-trained BERT can be downloaded at book scale (DESIGN.md, book-scale protocol). The BERT-style
models (BERT-cat, TILDE, …) therefore start from a small BERT that the book pre-trains with the
masked-LM objective of Devlin et al. on its own corpus, with the real bert-base-uncased vocabulary,
so that the ``paper`` profile only swaps the checkpoint for ``bert-base-uncased``.

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
- :func:`pretrain_mlm` — masked-LM pre-training with progress, atomic checkpoints and exact resume.
- :func:`load_bert` — a local checkpoint folder, or a Hugging Face name (``bert-base-uncased``) for
  the ``paper`` profile.

transformers 5 note: ``BertTokenizerFast(vocab_file=...)`` silently ignores ``vocab_file`` and builds
a five-token vocabulary; this module therefore reads ``vocab.txt`` itself and passes the mapping.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer
from transformers.utils import logging as hf_logging

from lib.core import paths
from lib.core.atomic import atomic_write, write_json
from lib.core.device import resolve_device
from lib.representations.text import pad_batch

#: Where ``make data`` puts the real bert-base-uncased vocabulary (a registry file; 30,522 lines).
BERT_VOCAB_NAME = "AtaQou/AnakthshPlhroforias/colbertv2.0/vocab.txt"
#: The ``paper`` profile's BERT.
PAPER_BERT = "bert-base-uncased"
#: bert-base-uncased's special ids.
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 100, 101, 102, 103
#: The first ordinary word piece of bert-base-uncased ("!"); ids below are [PAD], [unused*], specials.
FIRST_REGULAR_ID = 999

_CHECKPOINT = "checkpoint.pt"
_MARKER = "pretraining.json"


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
        """Word-piece ids of each text, without special tokens, cut at ``max_length`` (``None``: uncut)."""
        if isinstance(texts, str):
            raise TypeError("parameter 'texts' must be a list of strings, not one string")
        kwargs = {"truncation": True, "max_length": max_length} if max_length is not None else {}
        return self.hf(list(texts), add_special_tokens=False, **kwargs)["input_ids"]

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
    """A BERT from a local checkpoint folder or, for the ``paper`` profile, a Hugging Face name.

    Args:
        name_or_path: a folder written by ``save_pretrained`` (e.g. by :func:`pretrain_mlm`), or a hub
            name such as ``bert-base-uncased`` (needs internet or the local Hugging Face cache). A name
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
            f"The paper profile needs internet to download {text!r} once (or download it elsewhere and pass the "
            "folder); the book and smoke profiles use the small BERT that lib.representations.bert.pretrain_mlm writes."
        ) from error


def load_tokenizer(name_or_path: str | os.PathLike) -> WordPieceTokenizer:
    """The tokenizer saved beside a checkpoint, or a hub name's tokenizer (``paper`` profile)."""
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


# --- masked-LM pre-training ------------------------------------------------------------------------------------------
def pair_examples(pieces: Sequence[Sequence[int]], seq_len: int, seed: int) -> tuple[list[list[int]], list[int]]:
    """The pre-training sequences: ``[CLS] a [SEP] b [SEP]`` of two passages, with segment ids 0 | 1.

    The passages are shuffled with ``seed`` and paired in that order (an odd one out stands alone
    as ``[CLS] a [SEP]``); a pair longer than ``seq_len`` is cut longest-first, as BERT's pair
    truncation. The shape is that of BERT-cat's input ``[CLS] q [SEP] d [SEP]``, so the segment
    embedding of type 1 is trained too (there is no next-sentence objective). Returns the id
    lists and the length of each sequence's first segment (``[CLS] a [SEP]``).
    """
    if seq_len < 5:
        raise ValueError(f"parameter 'seq_len' must be at least 5, got {seq_len}")
    usable = [list(p) for p in pieces if len(p) > 0]
    if not usable:
        raise ValueError("no text has any word piece: nothing to pre-train on")
    order = np.random.default_rng(seed).permutation(len(usable))
    sequences: list[list[int]] = []
    first_lengths: list[int] = []
    for start in range(0, len(order), 2):
        a = usable[order[start]]
        if start + 1 == len(order):
            a = a[: seq_len - 2]
            sequences.append([CLS_ID, *a, SEP_ID])
            first_lengths.append(len(a) + 2)
            continue
        b = usable[order[start + 1]]
        la, lb = len(a), len(b)
        while la + lb > seq_len - 3:
            if la >= lb:
                la -= 1
            else:
                lb -= 1
        sequences.append([CLS_ID, *a[:la], SEP_ID, *b[:lb], SEP_ID])
        first_lengths.append(la + 2)
    return sequences, first_lengths


def mask_tokens(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    generator: torch.Generator,
    vocab_size: int,
    probability: float = 0.15,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: 15 % of the real, non-special positions; of those 80 % ``[MASK]``, 10 % random, 10 % kept.

    Random replacements are ordinary word pieces (ids from 999, "!", on: no ``[unused]`` or special
    token). At least one position of the batch is chosen, so the loss is always defined. Returns the
    corrupted ids and the labels (the original id at chosen positions, -100 elsewhere).
    """
    candidates = attention_mask.bool() & (input_ids != CLS_ID) & (input_ids != SEP_ID) & (input_ids != PAD_ID)
    chosen = (torch.rand(input_ids.shape, generator=generator) < probability) & candidates
    if not chosen.any():
        positions = candidates.flatten().nonzero().flatten()
        if len(positions) == 0:
            raise ValueError("a pre-training batch has no maskable position")
        pick = positions[torch.randint(len(positions), (1,), generator=generator)]
        chosen.view(-1)[pick] = True
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    action = torch.rand(input_ids.shape, generator=generator)
    random_ids = torch.randint(FIRST_REGULAR_ID, vocab_size, input_ids.shape, generator=generator)
    corrupted = input_ids.clone()
    corrupted[chosen & (action < 0.8)] = MASK_ID
    swap = chosen & (action >= 0.8) & (action < 0.9)
    corrupted[swap] = random_ids[swap]
    return corrupted, labels


def step_seed(seed: int, step: int) -> int:
    """The seed of one step: all randomness of step ``step`` (masking, dropout) comes from it."""
    return int(np.random.SeedSequence([seed, step]).generate_state(1)[0])


def _batch(
    sequences: list[list[int]], first_lengths: list[int], indices: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = [sequences[i] for i in indices]
    length = max(len(row) for row in rows)
    ids = torch.zeros((len(rows), length), dtype=torch.long)
    types = torch.zeros((len(rows), length), dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for r, (row, i) in enumerate(zip(rows, indices, strict=True)):
        ids[r, : len(row)] = torch.tensor(row)
        attention[r, : len(row)] = 1
        types[r, first_lengths[i] : len(row)] = 1
    return ids, types, attention


class BatchOrder:
    """Example indices for each step: an epoch-wise permutation of all sequences, seeded by (seed, epoch)."""

    def __init__(self, count: int, batch_size: int, seed: int) -> None:
        self.count, self.batch_size, self.seed = count, batch_size, seed
        self._cache: dict[int, np.ndarray] = {}

    def _epoch(self, epoch: int) -> np.ndarray:
        if epoch not in self._cache:
            self._cache = {epoch: np.random.default_rng([self.seed, epoch, 1]).permutation(self.count)}
        return self._cache[epoch]

    def batch(self, step: int) -> list[int]:
        first = step * self.batch_size
        return [int(self._epoch(g // self.count)[g % self.count]) for g in range(first, first + self.batch_size)]


def _warmup_linear(warmup: int, total: int):
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def _optimizer(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)


def texts_fingerprint(texts: Sequence[str]) -> str:
    """A short sha256 of a sequence of texts (order matters), for checkpoint compatibility checks."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


@dataclass
class PretrainResult:
    """What :func:`pretrain_mlm` did.

    Attributes:
        path: the checkpoint folder (``load_bert(path)``, ``load_tokenizer(path)``).
        losses: the MLM loss of every step, from step 1.
        seconds: wall-clock time of the steps run by this call (0 when the model was already complete).
        steps_run: steps run by this call; ``resumed_from`` the step it resumed at (0: fresh start).
        tokens_per_second, steps_per_second: throughput of this call (real tokens, padding excluded).
        params: the run's parameters (steps, batch size, …), as saved in ``pretraining.json``.
        device: where it ran; complete: whether all ``steps`` are done (``False`` after ``stop_after``).
        model: the ``BertForMaskedLM`` (on the CPU once saved); not part of ``pretraining.json``.
    """

    path: Path
    losses: list[float]
    seconds: float
    steps_run: int
    resumed_from: int
    tokens_per_second: float
    steps_per_second: float
    params: dict = field(default_factory=dict)
    device: str = "cpu"
    complete: bool = True
    model: BertForMaskedLM | None = field(default=None, repr=False, compare=False)


def pretrain_mlm(
    texts: Sequence[str],
    output_dir: str | os.PathLike,
    config: BertConfig | None = None,
    steps: int = 1000,
    batch_size: int = 32,
    seq_len: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    device: str | torch.device = "auto",
    checkpoint_every: int = 100,
    tokenizer: WordPieceTokenizer | None = None,
    warmup: float = 0.1,
    weight_decay: float = 0.01,
    stop_after: int | None = None,
    progress: bool = True,
    mismatch: str = "retrain",
) -> PretrainResult:
    """Pre-train a ``BertForMaskedLM`` from scratch with masked LM on ``texts`` (the book corpus passages).

    Sequences are passage pairs ``[CLS] a [SEP] b [SEP]`` of at most ``seq_len`` word pieces
    (:func:`pair_examples`); each step takes ``batch_size`` of them in a seeded epoch-wise order and
    masks them as BERT does (:func:`mask_tokens`). The LM head is applied to the masked positions
    only (the 30,522-way output dominates the cost otherwise). AdamW (β = 0.9/0.999, ε = 1e-6, weight
    decay 0.01 except biases and LayerNorm), linear warm-up over ``warmup`` of the steps, then linear
    decay to 0, gradient norm clipped at 1.

    Every ``checkpoint_every`` steps the model, optimizer and schedule go atomically to
    ``output_dir/checkpoint.pt``; calling again with the same arguments resumes from it. All
    randomness of a step comes from ``(seed, step)``, so on CPU a resumed run ends with exactly
    the weights of an uninterrupted one. At the end the model (``save_pretrained``) and the tokenizer
    files are written into ``output_dir``, then ``pretraining.json`` (parameters and losses) as the
    completion marker; a complete folder with the same parameters is returned without training.

    Args:
        config: the BERT shape (default :func:`small_bert_config`); its ``vocab_size`` must be the tokenizer's.
        lr: peak learning rate (1e-3 suits a small BERT and a short schedule; BERT-base used 1e-4).
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``; bf16 autocast on CUDA.
        tokenizer: default: the real bert-base-uncased vocabulary (:meth:`WordPieceTokenizer.from_vocab`).
        stop_after: stop (as an interruption would) after this step, checkpointing it; ``None``: run to ``steps``.
        progress: show a tqdm bar.
        mismatch: what a checkpoint or finished model of *other* parameters in ``output_dir`` means:
            ``"retrain"`` (a warning naming the differences, then a fresh start; a re-run of a
            chapter with new parameters just works) or ``"error"`` (a ``ValueError`` naming them).
    """
    if isinstance(texts, str):
        raise TypeError("parameter 'texts' must be a list of passages, not one string")
    for name, value in (("steps", steps), ("batch_size", batch_size), ("checkpoint_every", checkpoint_every)):
        if value < 1:
            raise ValueError(f"parameter {name!r} must be at least 1, got {value}")
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"parameter 'warmup' is a fraction of the steps in [0, 1), got {warmup}")
    output_dir = Path(output_dir)
    tokenizer = tokenizer or WordPieceTokenizer.from_vocab()
    config = config or small_bert_config(vocab_size=tokenizer.vocab_size)
    if config.vocab_size != tokenizer.vocab_size:
        raise ValueError(f"config.vocab_size ({config.vocab_size}) differs from the tokenizer's {tokenizer.vocab_size}")
    if seq_len > config.max_position_embeddings:
        raise ValueError(f"parameter 'seq_len' ({seq_len}) exceeds config.max_position_embeddings")
    device = resolve_device(device)
    params = {
        "steps": steps,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "lr": lr,
        "seed": seed,
        "warmup": warmup,
        "weight_decay": weight_decay,
        "texts": len(texts),
        "texts_sha256": texts_fingerprint(texts),
        "vocab_sha256": texts_fingerprint(
            [piece for piece, _ in sorted(tokenizer.hf.get_vocab().items(), key=lambda i: i[1])]
        ),
        "config": json.loads(config.to_json_string(use_diff=True)),
    }
    params["config"].pop("transformers_version", None)
    params = json.loads(json.dumps(params))  # as pretraining.json will read back (string keys)

    if mismatch not in ("retrain", "error"):
        raise ValueError(f"parameter 'mismatch' must be 'retrain' or 'error', got {mismatch!r}")
    marker = output_dir / _MARKER
    checkpoint = output_dir / _CHECKPOINT
    for found in (marker, checkpoint):
        if not found.is_file():
            continue
        saved = json.loads(found.read_text(encoding="utf-8")) if found == marker else _read_checkpoint(found)
        if saved.get("params") == params:
            break
        message = f"{found} was written with other parameters: {_diff(saved, params)}"
        if mismatch == "error":
            raise ValueError(message + " (use another output_dir, or mismatch='retrain')")
        warnings.warn(message + "; pre-training again from scratch", stacklevel=2)
        marker.unlink(missing_ok=True)
        checkpoint.unlink(missing_ok=True)
        break
    if marker.is_file():
        saved = json.loads(marker.read_text(encoding="utf-8"))
        model = load_bert(output_dir, lm_head=True)
        return PretrainResult(output_dir, saved["losses"], 0.0, 0, steps, 0.0, 0.0, params, str(device), True, model)

    torch.manual_seed(seed)
    model = BertForMaskedLM(config).to(device)
    optimizer = _optimizer(model, lr, weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_linear(max(1, int(warmup * steps)), steps))
    losses: list[float] = []
    start = 0
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        losses, start = list(state["losses"]), int(state["step"])

    sequences, first_lengths = pair_examples(tokenizer.pieces(texts), seq_len, seed)
    order = BatchOrder(len(sequences), batch_size, seed)
    end = steps if stop_after is None else min(steps, max(stop_after, start))
    amp = device.type == "cuda" and torch.cuda.is_bf16_supported()
    model.train()
    tokens = 0
    began = time.perf_counter()
    bar = tqdm(total=steps, initial=start, desc="MLM pre-training", unit="step", disable=not progress)
    for step in range(start, end):
        ids, types, attention = _batch(sequences, first_lengths, order.batch(step))
        seed_of_step = step_seed(seed, step)
        masked, labels = mask_tokens(ids, attention, torch.Generator().manual_seed(seed_of_step), config.vocab_size)
        torch.manual_seed(seed_of_step)  # dropout
        masked, labels, types, attention = (t.to(device) for t in (masked, labels, types, attention))
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            hidden = model.bert(input_ids=masked, attention_mask=attention, token_type_ids=types).last_hidden_state
            chosen = labels != -100
            logits = model.cls(hidden[chosen])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[chosen])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        tokens += int(attention.sum())
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        done = step + 1
        if done % checkpoint_every == 0 or done == end:
            _save_checkpoint(checkpoint, model, optimizer, schedule, losses, done, params)
    bar.close()
    seconds = time.perf_counter() - began
    ran = end - start
    result = PretrainResult(
        output_dir,
        losses,
        seconds,
        ran,
        start,
        tokens / seconds if ran else 0.0,
        ran / seconds if ran else 0.0,
        params,
        str(device),
        complete=end == steps,
        model=model,
    )
    if end < steps:
        return result

    model.eval()
    with staged_folder(output_dir) as staging:
        model.cpu().save_pretrained(staging)
        tokenizer.save_files(staging)
    record = {f.name: getattr(result, f.name) for f in fields(result) if f.name not in ("path", "model")}
    write_json(marker, record)
    checkpoint.unlink(missing_ok=True)
    return result


@torch.no_grad()
def mlm_loss(
    model: BertForMaskedLM,
    texts: Sequence[str],
    tokenizer: WordPieceTokenizer | None = None,
    seq_len: int = 128,
    batch_size: int = 32,
    seed: int = 0,
) -> float:
    """Mean masked-LM cross-entropy (nats per masked piece) of ``model`` on held-out ``texts``.

    The sequences and masks are those of :func:`pretrain_mlm` with ``seed`` (so fixed for a
    comparison of checkpoints); ``exp`` of it is the masked-LM perplexity. Eval mode, no dropout.
    """
    tokenizer = tokenizer or WordPieceTokenizer.from_vocab()
    device = next(model.parameters()).device
    sequences, first_lengths = pair_examples(tokenizer.pieces(texts), seq_len, seed)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(sequences), batch_size):
        ids, types, attention = _batch(sequences, first_lengths, range(start, min(start + batch_size, len(sequences))))
        generator = torch.Generator().manual_seed(step_seed(seed, start))
        masked, labels = mask_tokens(ids, attention, generator, model.config.vocab_size)
        masked, labels, types, attention = (t.to(device) for t in (masked, labels, types, attention))
        hidden = model.bert(input_ids=masked, attention_mask=attention, token_type_ids=types).last_hidden_state
        chosen = labels != -100
        logits = model.cls(hidden[chosen]).float()
        total += float(torch.nn.functional.cross_entropy(logits, labels[chosen], reduction="sum"))
        count += int(chosen.sum())
    model.train(was_training)
    return total / count


def _read_checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def _diff(saved: dict, params: dict) -> str:
    old = saved.get("params") or {}
    names = sorted(k for k in set(old) | set(params) if old.get(k) != params.get(k))
    return ", ".join(f"{k}: {old.get(k)!r} → {params.get(k)!r}" for k in names)


def _save_checkpoint(
    path: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    losses: list[float],
    step: int,
    params: dict,
) -> None:
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "losses": losses,
        "params": params,
    }
    with atomic_write(path, mode="wb") as handle:
        torch.save(state, handle)


__all__ = [
    "BERT_SIZES",
    "BERT_VOCAB_NAME",
    "PAPER_BERT",
    "PretrainResult",
    "WordPieceTokenizer",
    "bert_vocab_file",
    "load_bert",
    "load_tokenizer",
    "mask_tokens",
    "mlm_loss",
    "pair_examples",
    "pretrain_mlm",
    "read_vocab",
    "small_bert_config",
]
