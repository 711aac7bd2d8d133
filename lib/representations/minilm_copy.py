"""A float16 copy of all-MiniLM-L6-v2 for the GPU machine: ``python -m lib.representations.minilm_copy DEST``.

The pinned package's ``model.safetensors`` (91 MB of float32) is larger than what travels to the GPU
machine lent for development (the book's design: "carry a float16 copy of MiniLM"). This module writes
``DEST/`` with the package's ``config.json`` and ``vocab.txt`` as they are, the weights rounded to
float16 (about 46 MB; a model loads them back as float32, since the copied ``config.json`` names that
dtype) and ``copy.json``: the package pin, the sha256 of the verified source files and of every file
written. On the GPU machine ``TKBOOK_MINILM_COPY=DEST`` makes
:func:`lib.representations.pretrained.minilm_folder` return ``DEST`` after checking those digests.

float16 rounds each weight to about three significant digits; ``python -m benchmarks.gpu_check``
reports the scores on both sides, so what the rounding changes is measured, never assumed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

from lib.core.atomic import write_json
from lib.data.registry import sha256_of
from lib.representations.pretrained import COPIED_FILES, COPY_MANIFEST, MINILM_FILES, WEIGHTS, minilm_folder, pin


def write_copy(destination: str | os.PathLike, source: Path | None = None) -> Path:
    """Write the float16 copy of the verified MiniLM folder ``source`` (default: the package) into ``destination``.

    Returns ``destination``. The manifest is written last, so an interrupted copy never verifies.
    """
    source = minilm_folder() if source is None else Path(source)
    target = Path(destination)
    target.mkdir(parents=True, exist_ok=True)
    (target / COPY_MANIFEST).unlink(missing_ok=True)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    write_json(target / "config.json", {**config, "torch_dtype": "float32", "dtype": "float32"})
    shutil.copyfile(source / "vocab.txt", target / "vocab.txt")
    tensors = {name: tensor.half().contiguous() for name, tensor in load_file(source / "model.safetensors").items()}
    partial = target / "model.safetensors.partial"
    save_file(tensors, partial)
    partial.replace(target / "model.safetensors")
    write_json(
        target / COPY_MANIFEST,
        {
            "source": pin(MINILM_FILES[0]),
            "source_sha256": {Path(name).name: WEIGHTS[name].digest for name in MINILM_FILES},
            "weights_dtype": "float16",
            "sha256": {name: sha256_of(target / name) for name in COPIED_FILES},
        },
    )
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lib.representations.minilm_copy", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "destination", type=Path, help="the folder to write (git-excluded, named in a device call's carry)"
    )
    args = parser.parse_args(argv)
    folder = write_copy(args.destination)
    size = sum(file.stat().st_size for file in folder.iterdir()) / 2**20
    print(f"written: {folder} ({size:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
