"""Masked-LM pre-training of the book's small BERT (Devlin et al. 2019, §3.1 "Masked LM") on the book corpus.

No pre-trained BERT can be downloaded at book scale, so the BERT-style models (BERT-cat, TILDE) start
from a small BERT (:func:`lib.representations.bert.small_bert_config`) that :func:`pretrain_mlm`
pre-trains on the book's passages with the real bert-base-uncased vocabulary; the ``paper`` profile
swaps it for ``bert-base-uncased``. The objective plugs into the book's one training loop
(:func:`lib.training.loop.run_loop`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertForMaskedLM

from lib.core import distributed
from lib.core.device import autocast, resolve_device
from lib.representations.bert import (
    CLS_ID,
    FIRST_REGULAR_ID,
    MASK_ID,
    PAD_ID,
    SEP_ID,
    WordPieceTokenizer,
    load_bert,
    small_bert_config,
    staged_folder,
)
from lib.training.loop import (
    CHECKPOINT_NAME,
    BatchOrder,
    LoopSettings,
    as_json,
    finish_run,
    processes_sharing,
    read_marker,
    run_loop,
    step_seed,
    texts_fingerprint,
)

#: The completion marker of a finished pre-training (parameters and losses, written last).
MARKER_NAME = "pretraining.json"
_NOT_RECORDED = ("path", "model", "params")


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


@dataclass(frozen=True)
class PretrainConfig:
    """How :func:`pretrain_mlm` pre-trains.

    Attributes:
        steps: optimizer steps of ``batch_size`` sequences of at most ``seq_len`` word pieces.
        lr: peak learning rate (1e-3 suits a small BERT and a short schedule; BERT-base used 1e-4), reached
            after ``warmup`` (a fraction of the steps); ``weight_decay``: AdamW's.
        seed: fixes the pairs, their order, the masks and dropout.
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``; bf16 autocast on CUDA.
        checkpoint_every: steps between checkpoints.
        stop_after: stop (as an interruption would) after this step, checkpointing it; ``None``: run to ``steps``.
        progress: show a tqdm bar.
        mismatch: what a checkpoint or finished model of *other* parameters in the output folder means:
            ``"retrain"`` (a warning naming the differences, then a fresh start; a re-run of a
            chapter with new parameters just works) or ``"error"`` (a ``ValueError`` naming them).
    """

    steps: int = 1000
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 1e-3
    seed: int = 0
    device: str | torch.device = "auto"
    checkpoint_every: int = 100
    warmup: float = 0.1
    weight_decay: float = 0.01
    stop_after: int | None = None
    progress: bool = True
    mismatch: str = "retrain"


def pretrain_mlm(
    texts: Sequence[str],
    output_dir: str | os.PathLike,
    training: PretrainConfig = PretrainConfig(),
    config: BertConfig | None = None,
    tokenizer: WordPieceTokenizer | None = None,
) -> PretrainResult:
    """Pre-train a ``BertForMaskedLM`` from scratch with masked LM on ``texts`` (the book corpus passages).

    Sequences are passage pairs ``[CLS] a [SEP] b [SEP]`` of at most ``training.seq_len`` word pieces
    (:func:`pair_examples`); each step takes ``training.batch_size`` of them in a seeded epoch-wise order and
    masks them as BERT does (:func:`mask_tokens`). The LM head is applied to the masked positions
    only (the 30,522-way output dominates the cost otherwise). AdamW (β = 0.9/0.999, ε = 1e-6, weight
    decay 0.01 except biases and LayerNorm), linear warm-up over ``training.warmup`` of the steps, then linear
    decay to 0, gradient norm clipped at 1.

    The run goes through :func:`lib.training.loop.run_loop`: every ``training.checkpoint_every`` steps the
    model, optimizer and schedule go atomically to ``output_dir/checkpoint.pt``; calling again with
    the same arguments resumes from it. All randomness of a step comes from ``(training.seed, step)``, so on
    CPU a resumed run ends with exactly the weights of an uninterrupted one. At the end the model
    (``save_pretrained``) and the tokenizer files are written into ``output_dir``, then
    ``pretraining.json`` (parameters and losses) as the completion marker; a complete folder with the
    same parameters is returned without training.

    Under torchrun with several processes (:mod:`lib.core.distributed`) each process masks and
    scores its share of every step's ``batch_size`` sequences (a multiple of the number of processes),
    with its own masks and dropout (seeded by seed, step and rank); the gradient is the mean of the
    processes' gradients of their shards' mean losses (per masked piece), which is not exactly the
    gradient of the whole batch's mean when the shards hold different numbers of masked pieces. Rank
    0 alone writes the checkpoint, the model and the marker.

    Args:
        training: the schedule (:class:`PretrainConfig`).
        config: the BERT shape (default :func:`small_bert_config`); its ``vocab_size`` must be the tokenizer's.
        tokenizer: default: the real bert-base-uncased vocabulary (:meth:`WordPieceTokenizer.from_vocab`).
    """
    tokenizer = tokenizer or WordPieceTokenizer.from_vocab()
    config = config or small_bert_config(vocab_size=tokenizer.vocab_size)
    settings = _check_inputs(texts, training, config, tokenizer)
    output_dir, device = Path(output_dir), resolve_device(training.device)
    params = _params(texts, tokenizer, config, training)
    marker = output_dir / MARKER_NAME
    record = read_marker(marker, params, training.mismatch)
    if record is not None:
        model = load_bert(output_dir, lm_head=True)
        return PretrainResult(
            output_dir, record["losses"], 0.0, 0, training.steps, 0.0, 0.0, params, str(device), True, model
        )

    torch.manual_seed(training.seed)
    model = BertForMaskedLM(config).to(device)
    optimizer = _optimizer(model, training.lr, training.weight_decay)
    warmup_steps = max(1, int(training.warmup * training.steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_linear(warmup_steps, training.steps))
    sequences, first_lengths = pair_examples(tokenizer.pieces(texts), training.seq_len, training.seed)
    loss_of_step = _MaskedLmStep(model, sequences, first_lengths, training, device)
    state = run_loop(model, optimizer, loss_of_step, output_dir / CHECKPOINT_NAME, params, settings, schedule)
    ran, seconds = state.steps_run, state.seconds
    result = PretrainResult(
        output_dir,
        state.losses,
        seconds,
        ran,
        state.resumed_from,
        loss_of_step.tokens / seconds if ran else 0.0,
        ran / seconds if ran else 0.0,
        params,
        str(device),
        complete=state.finished,
        model=model,
    )
    if not state.finished:
        return result
    model.eval()
    model.cpu()
    recorded = {f.name: getattr(result, f.name) for f in fields(result) if f.name not in _NOT_RECORDED}
    finish_run(state, marker, params, recorded, lambda: _save(model, tokenizer, output_dir))
    return result


def _check_inputs(
    texts: Sequence[str], training: PretrainConfig, config: BertConfig, tokenizer: WordPieceTokenizer
) -> LoopSettings:
    """Refuse what cannot be pre-trained; the loop's settings (which check the step counts)."""
    if isinstance(texts, str):
        raise TypeError("parameter 'texts' must be a list of passages, not one string")
    if not 0.0 <= training.warmup < 1.0:
        raise ValueError(f"parameter 'warmup' is a fraction of the steps in [0, 1), got {training.warmup}")
    settings = LoopSettings(
        training.steps,
        training.checkpoint_every,
        training.stop_after,
        grad_clip=1.0,
        mismatch=training.mismatch,
        desc="MLM pre-training",
        progress=training.progress,
    )
    if config.vocab_size != tokenizer.vocab_size:
        raise ValueError(f"config.vocab_size ({config.vocab_size}) differs from the tokenizer's {tokenizer.vocab_size}")
    if training.seq_len > config.max_position_embeddings:
        raise ValueError(f"parameter 'seq_len' ({training.seq_len}) exceeds config.max_position_embeddings")
    processes_sharing(training.batch_size)
    return settings


class _MaskedLmStep:
    """The masked-LM loss of a step on this process's share of its batch; ``tokens``: the real tokens seen."""

    def __init__(
        self,
        model: BertForMaskedLM,
        sequences: list[list[int]],
        first_lengths: list[int],
        training: PretrainConfig,
        device: torch.device,
    ) -> None:
        self.model, self.sequences, self.first_lengths = model, sequences, first_lengths
        self.seed, self.device = training.seed, device
        self.order = BatchOrder(len(sequences), training.batch_size, training.seed)
        self.tokens = 0

    def __call__(self, step: int) -> torch.Tensor:
        ids, types, attention = _batch(self.sequences, self.first_lengths, distributed.shard(self.order.batch(step)))
        seed_of_step = step_seed(self.seed, step, distributed.rank())
        vocab_size = self.model.config.vocab_size
        masked, labels = mask_tokens(ids, attention, torch.Generator().manual_seed(seed_of_step), vocab_size)
        torch.manual_seed(seed_of_step)  # dropout
        masked, labels, types, attention = (t.to(self.device) for t in (masked, labels, types, attention))
        with autocast(self.device):
            hidden = self.model.bert(input_ids=masked, attention_mask=attention, token_type_ids=types).last_hidden_state
            chosen = labels != -100
            logits = self.model.cls(hidden[chosen])
        self.tokens += int(attention.sum())
        return torch.nn.functional.cross_entropy(logits.float(), labels[chosen])


def _save(model: BertForMaskedLM, tokenizer: WordPieceTokenizer, output_dir: Path) -> None:
    with staged_folder(output_dir) as staging:
        model.save_pretrained(staging)
        tokenizer.save_files(staging)


def _params(texts: Sequence[str], tokenizer: WordPieceTokenizer, config: BertConfig, training: PretrainConfig) -> dict:
    """The run's fingerprint: what a resumption or a reused model must match."""
    vocabulary = [piece for piece, _ in sorted(tokenizer.hf.get_vocab().items(), key=lambda item: item[1])]
    shape = json.loads(config.to_json_string(use_diff=True))
    shape.pop("transformers_version", None)
    return as_json(
        {
            "steps": training.steps,
            "batch_size": training.batch_size,
            "seq_len": training.seq_len,
            "lr": training.lr,
            "seed": training.seed,
            "warmup": training.warmup,
            "weight_decay": training.weight_decay,
            "texts": len(texts),
            "texts_sha256": texts_fingerprint(texts),
            "vocab_sha256": texts_fingerprint(vocabulary),
            "config": shape,
        }
    )


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
