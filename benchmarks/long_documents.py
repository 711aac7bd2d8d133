"""Documents per millisecond of chapter 9's long-document models on any device: ``python -m benchmarks.long_documents``.

Chapter 9 (lecture 8, slides 13 and 34–40) times its models on two CPU cores; this times the same architectures
where the book's checkpoints are not (a lent GPU): BERT-cat FirstP and MaxP, IDCM at several ``k`` and with every
window, on all-MiniLM-L6-v2's real weights (FirstP and MaxP as the ``book`` profile's chapter 9 builds them, its
``first_pieces``, ``window`` and ``stride`` recorded in the JSON's ``settings``), and TKL on a seeded random
embedding matrix of GloVe 6B's width (speed does not depend on trained weights). The documents are real DL19
passages joined eight at a time (:func:`benchmarks.gpu_check.extra_inputs`, up to 1,024 tokens), scored in
length-bucketed batches under the book's autocast (bf16 on a GPU) by
:func:`lib.evaluation.efficiency.measure_throughput`. Example::

    TKBOOK_MINILM_COPY=.device/minilm python -m benchmarks.long_documents --device cuda \\
        --out benchmarks/results/long/nvidia-h100-$(date +%F).json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from benchmarks.gpu_check import build_extra, extra_inputs, real_pairs
from lib.core.atomic import write_json
from lib.core.device import amp_enabled, resolve_device
from lib.core.profiles import get_profile
from lib.evaluation.efficiency import device_name, measure_throughput
from lib.evaluation.speed_benchmark import environment
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import Vocabulary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_documents", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--documents", type=int, default=256, help="documents timed (real DL19 passages joined)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--ks", nargs="+", type=int, default=[1, 2, 4], help="IDCM's windows per document")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    pairs = real_pairs(args.documents, per_query=64)
    tokenizers = {"word": Vocabulary.build([text for pair in pairs for text in pair]),
                  "wordpiece": WordPieceTokenizer.from_vocab(minilm_folder() / "vocab.txt")}  # fmt: skip
    dtype = torch.bfloat16 if amp_enabled(device) else None
    rows = []
    settings = [("firstp", None), ("maxp", None), *[("idcm", k) for k in args.ks], ("idcm", None), ("tkl", None)]
    for name, k in settings:
        tokenizer = tokenizers["word" if name == "tkl" else "wordpiece"]
        model = build_extra(name, len(tokenizer)).to(device).eval()
        if name == "idcm":
            model.select_k = k
        inputs = tuple(tensor.to(device) for tensor in extra_inputs(name, tokenizer, pairs))
        with torch.inference_mode():
            timed = measure_throughput(model, inputs, args.batch_size, args.repetitions, dtype=dtype)
        label = name if name != "idcm" else f"idcm (k = {k or 'all'})"
        rows.append({"model": label, "documents_per_ms": timed.docs_per_ms, "documents": timed.documents,
                     "batch_size": args.batch_size, "dtype": timed.dtype})  # fmt: skip
        print(f"{label:<18} {timed.docs_per_ms:10.3f} documents/ms", flush=True)
    long = get_profile("book").long  # the FirstP and MaxP build_extra built: chapter 9's
    maxp = {"first_pieces": long.first_pieces, "window": long.window, "stride": long.stride}
    write_json(args.out, {"environment": environment(), "device": device_name(device), "settings": maxp, "rows": rows})
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
