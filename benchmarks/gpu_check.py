"""Every registered model on a GPU against the same model on the CPU: ``python -m benchmarks.gpu_check``.

For each model of :data:`lib.models.registry.MODELS` this scores the same real (query, passage) pairs —
the first candidates of BM25's DL19 run, tokenised as the model's family is fed — three times: on the
CPU in float32 (the reference, as the book runs), on ``--device`` in float32 and on ``--device`` under
bf16 autocast (how the book trains and scores on a GPU, :func:`lib.core.device.autocast`). It then runs
one Margin-MSE training step on ``--device`` under the book's autocast (distillation paper, eq. 1,
:func:`lib.training.distillation.margin_mse`) and checks that every trainable parameter got a finite
gradient and that the step changed the scores. Zero-shot models are only scored. A model that raises
gets a failed row with the error; the others are still checked. The models outside the registry
(:data:`EXTRA_MODELS`: chapter 8's duo model on (query, passage, passage) triples, chapter 9's FirstP, MaxP, IDCM
and TKL on documents of eight real passages joined) are scored the same three ways, without a training step.

Weights: the MiniLM-family models start from the real all-MiniLM-L6-v2 (on the GPU machine its float16
copy, :mod:`lib.representations.minilm_copy`); the word and piece families get a seeded random
embedding matrix of the book profile's width (GloVe is not sent to the GPU machine), which exercises the
same computations. A row passes when float32 on the device matches the CPU (largest score difference
within :data:`FP32_TOLERANCE` of the score scale, same order: Spearman ≥ :data:`MIN_SPEARMAN_FP32`),
bf16 keeps the order (Spearman ≥ :data:`MIN_SPEARMAN_BF16`) and the step is sound. The JSON records
every number, so a failure says which model, which precision and by how much. Exit status 1 if a
row fails. Example::

    TKBOOK_MINILM_COPY=.device/minilm python -m benchmarks.gpu_check --device cuda \\
        --out benchmarks/results/correctness/nvidia-h200-$(date +%F).json
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import nn

from lib.core.atomic import write_json
from lib.core.device import autocast, resolve_device
from lib.core.profiles import get_profile
from lib.data import book_texts, load_queries, load_run
from lib.evaluation.efficiency import device_name, encode_pairs
from lib.evaluation.speed_benchmark import environment
from lib.models.bert_cat import BertCat
from lib.models.duo_bert import DuoBert
from lib.models.idcm import IDCM
from lib.models.long_bert import FirstP, MaxP
from lib.models.registry import MODELS, ModelSpec
from lib.models.tk import width_for
from lib.models.tkl import TKL, TKLConfig
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import Vocabulary
from lib.training.distillation import margin_mse

#: Largest |device fp32 − CPU fp32| score difference allowed, as a fraction of the CPU scores' spread
#: (cuDNN may run convolutions in TF32, about three decimal digits).
FP32_TOLERANCE = 0.01
#: Rank agreement required between the device's float32 scores and the CPU's.
MIN_SPEARMAN_FP32 = 0.999
#: Rank agreement required between the device's bf16-autocast scores and its float32 scores.
MIN_SPEARMAN_BF16 = 0.95
Tensors = tuple[torch.Tensor, ...]


def real_pairs(count: int, per_query: int = 16) -> list[tuple[str, str]]:
    """``count`` real (query, passage) pairs: BM25's top ``per_query`` DL19 candidates of the first queries."""
    run, queries, texts = load_run("dl19", "bm25"), load_queries("dl19"), book_texts()
    pairs = [(queries[qid], texts[pid]) for qid in run for pid in list(run[qid])[:per_query]]
    return pairs[:count]


def build(spec: ModelSpec, vocab_size: int, seed: int) -> nn.Module:
    """Model ``spec`` on the CPU: MiniLM's folder for the ``wordpiece`` family, else a seeded random embedding
    matrix of the book profile's width (``piece_vector_dim`` for pieces, GloVe 6B's 50 for words)."""
    torch.manual_seed(seed)
    if spec.family == "wordpiece":
        return spec.build(minilm_folder(), num_layers=None)
    training = get_profile("book").training
    width = training.piece_vector_dim if spec.family == "pieces" else 50
    return spec.build(torch.randn(vocab_size, width, generator=torch.Generator().manual_seed(seed)))


def scores(model: nn.Module, inputs: Tensors, device: torch.device, amp: bool) -> np.ndarray:
    """The model's scores of ``inputs`` on ``device`` in eval mode (bf16 autocast if ``amp``), as float64."""
    model.eval()
    with torch.no_grad(), autocast(device, amp):
        output = model(*(tensor.to(device) for tensor in inputs))
    return output.float().cpu().numpy().astype(np.float64)


def training_step(model: nn.Module, inputs: Tensors, device: torch.device) -> dict[str, Any]:
    """One Margin-MSE step on ``device`` under the book's autocast: loss, gradients, whether the scores moved.

    The pairs' first half are the positives, the second half the negatives, and every teacher margin
    is 1 — a step with a known target, not a trained model.
    """
    half = inputs[0].shape[0] // 2
    positives = tuple(tensor[:half].to(device) for tensor in inputs)
    negatives = tuple(tensor[half : 2 * half].to(device) for tensor in inputs)
    before = scores(model, inputs, device, amp="auto")
    model.train()
    optimizer = torch.optim.AdamW(model.optimizer_groups())
    with autocast(device, "auto"):
        loss = margin_mse(model(*positives), model(*negatives), torch.ones(half, device=device))
    loss.backward()
    trainable = [(name, param) for name, param in model.named_parameters() if param.requires_grad]
    missing = [name for name, param in trainable if param.grad is None]
    infinite = [name for name, param in trainable if param.grad is not None and not torch.isfinite(param.grad).all()]
    optimizer.step()
    after = scores(model, inputs, device, amp="auto")
    return {
        "loss": float(loss.detach()),
        "trainable_tensors": len(trainable),
        "without_gradient": missing,
        "non_finite_gradient": infinite,
        "scores_moved": float(np.abs(after - before).max()),
    }


def agreement(model: nn.Module, inputs: Tensors, device: torch.device) -> dict[str, Any]:
    """``model`` (on the CPU) scored on the CPU in float32 and, as a copy, on ``device`` in float32 and bf16: the
    differences and rank agreements, and whether they pass the thresholds (``fp32_ok``, ``bf16_ok``, ``ok``)."""
    reference = scores(model, inputs, torch.device("cpu"), amp=False)
    on_device = copy.deepcopy(model).to(device)
    fp32 = scores(on_device, inputs, device, amp=False)
    bf16 = scores(on_device, inputs, device, amp=True)
    spread = float(reference.std()) or 1.0
    row: dict[str, Any] = {
        "pairs": len(reference),
        "cpu_score_std": float(reference.std()),
        "fp32_max_difference": float(np.abs(fp32 - reference).max()),
        "fp32_spearman": float(spearmanr(fp32, reference).statistic),
        "bf16_max_difference": float(np.abs(bf16 - fp32).max()),
        "bf16_spearman": float(spearmanr(bf16, fp32).statistic),
    }
    row["fp32_ok"] = row["fp32_max_difference"] <= FP32_TOLERANCE * spread and row["fp32_spearman"] >= MIN_SPEARMAN_FP32
    row["bf16_ok"] = row["bf16_spearman"] >= MIN_SPEARMAN_BF16
    row["ok"] = row["fp32_ok"] and row["bf16_ok"]
    return row


def check_model(name: str, inputs: Tensors, vocab_size: int, device: torch.device, seed: int = 0) -> dict[str, Any]:
    """One row: ``name`` scored on the CPU and on ``device`` (fp32 and bf16), then trained one step on ``device``."""
    spec = MODELS[name]
    model = build(spec, vocab_size, seed)
    row: dict[str, Any] = {"model": name, "label": spec.label, **agreement(model, inputs, device)}
    if not spec.zero_shot:
        step = training_step(copy.deepcopy(model).to(device), inputs, device)
        step["ok"] = (
            np.isfinite(step["loss"])
            and not step["without_gradient"]
            and not step["non_finite_gradient"]
            and step["scores_moved"] > 0
        )
        row["training_step"] = step
        row["ok"] = row["ok"] and step["ok"]
    return row


#: The models outside the registry (they read documents, or two passages): chapter 8's duo model, chapter 9's
#: long-document models.
EXTRA_MODELS = ("duo-bert", "firstp", "maxp", "idcm", "tkl")


def build_extra(name: str, vocab_size: int, seed: int = 0) -> nn.Module:
    """A model of :data:`EXTRA_MODELS` on the CPU: the MiniLM ones from all-MiniLM-L6-v2 (FirstP and MaxP as the
    ``book`` profile's chapter 9 builds them: its ``first_pieces``, ``window`` and ``stride``), TKL on a seeded random
    embedding matrix of GloVe 6B's width."""
    torch.manual_seed(seed)
    if name == "tkl":
        return TKL(torch.randn(vocab_size, 50, generator=torch.Generator().manual_seed(seed)),
                   config=TKLConfig(**width_for(50)))  # fmt: skip
    if name == "duo-bert":
        return DuoBert(minilm_folder())
    bert_cat = BertCat(minilm_folder())
    long = get_profile("book").long  # chapter 9's FirstP and MaxP, not the classes' defaults (MaxP's stride 75)
    if name == "firstp":
        return FirstP(bert_cat, max_length=long.first_pieces)
    if name == "maxp":
        return MaxP(bert_cat, size=long.window, stride=long.stride)
    return IDCM(bert_cat)


def extra_inputs(name: str, tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> Tensors:
    """What an extra model reads: for the duo model (query, passage, the next pair's passage); for the others
    (query, document), a document being eight consecutive passages of ``pairs`` joined (up to 1,024 tokens)."""
    queries = [query for query, _ in pairs]
    passages = [passage for _, passage in pairs]
    query_ids, query_mask = tokenizer.encode(queries, 30)
    if name == "duo-bert":
        doc_ids, doc_mask = tokenizer.encode(passages, 200)
        shifted = torch.roll(torch.arange(len(passages)), 1)
        return query_ids, query_mask, doc_ids, doc_mask, doc_ids[shifted], doc_mask[shifted]
    documents = [" ".join((passages * 2)[i : i + 8]) for i in range(len(passages))]
    return (query_ids, query_mask, *tokenizer.encode(documents, 1024))


def run_checks(names: Sequence[str], pairs: Sequence[tuple[str, str]], device: torch.device) -> dict[str, Any]:
    """Every model of ``names`` checked on ``pairs`` (:func:`check_model`); JSON-ready, with the environment."""
    tokenizers: Mapping[str, Any] = {
        "word": Vocabulary.build([text for pair in pairs for text in pair]),
        "wordpiece": WordPieceTokenizer.from_vocab(minilm_folder() / "vocab.txt"),
    }
    rows = []
    for name in names:
        family = "word" if name == "tkl" or (name in MODELS and MODELS[name].family == "word") else "wordpiece"
        tokenizer = tokenizers[family]
        try:
            if name in MODELS:
                rows.append(check_model(name, encode_pairs(tokenizer, pairs), len(tokenizer), device))
            else:
                model = build_extra(name, len(tokenizer))
                rows.append({"model": name, "label": name, **agreement(model, extra_inputs(name, tokenizer, pairs),
                                                                         device)})  # fmt: skip
        except Exception as error:  # noqa: BLE001 — one model's failure is its row, the others are still checked
            label = MODELS[name].label if name in MODELS else name
            rows.append({"model": name, "label": label, "ok": False, "error": f"{type(error).__name__}: {error}"})
        print(f"{name:<18} {'ok' if rows[-1]['ok'] else 'FAILED'}", flush=True)
    return {
        "environment": environment(),
        "device": device_name(device),
        "thresholds": {
            "fp32_tolerance": FP32_TOLERANCE,
            "min_spearman_fp32": MIN_SPEARMAN_FP32,
            "min_spearman_bf16": MIN_SPEARMAN_BF16,
        },
        "results": rows,
        "all_ok": all(row["ok"] for row in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="the device to check against the CPU (default: auto)")
    parser.add_argument("--models", nargs="+", default=[*MODELS, *EXTRA_MODELS], choices=[*MODELS, *EXTRA_MODELS])
    parser.add_argument("--pairs", type=int, default=32, help="real DL19 pairs to score (even, ≥ 4)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if args.pairs < 4 or args.pairs % 2:
        parser.error("--pairs must be an even number >= 4")
    result = run_checks(args.models, real_pairs(args.pairs), resolve_device(args.device))
    write_json(args.out, result)
    print(f"written: {args.out}; {'all ok' if result['all_ok'] else 'FAILURES'}")
    return 0 if result["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
