"""A build killed during chapter 2's training resumes (issue 53): the real smoke chapter, SIGKILLed, then run again.

The chapter runs as ``make chapter`` runs it (``python -m lib.book.build --only``), into its own artifacts and
build folders (``TKBOOK_ARTIFACTS``, ``TKBOOK_BUILD``), so the smoke book of ``make test`` is never touched. Once a
training checkpoint holds a step past the start and before the end, the build and every process under it (papermill's
kernel) are frozen (SIGSTOP: a smoke run lasts a fraction of a second, so the state on disk must stop moving before it
is read) and killed with SIGKILL; the second run must finish the chapter, resume that model from
its checkpoint (the loop prints where it resumed), never read a half-written file (no file set aside as broken,
no warning of one) and leave a complete executed notebook.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from lib.core import paths
from lib.core.broken_files import BROKEN_SUFFIX
from lib.core.profiles import get_profile
from lib.training.loop import CHECKPOINT_NAME

TRAINING = "02_training"
PATIENCE_SECONDS = 900


def _build(chapter: str, env: dict[str, str]) -> subprocess.Popen:
    command = [sys.executable, "-m", "lib.book.build", "--profile", "smoke", "--only", chapter]
    return subprocess.Popen(
        command,
        cwd=paths.REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _mid_training(checkpoints: Path, steps: int) -> tuple[Path, int] | None:
    """A checkpoint whose step is past 0 and before ``steps`` (a model in the middle of its training), if any."""
    for path in sorted(checkpoints.glob(f"*/{CHECKPOINT_NAME}")):
        try:
            saved = torch.load(path, map_location="cpu", weights_only=True)
        except Exception:  # being replaced this instant: look again
            continue
        if 0 < saved["step"] < steps and not saved["finished"]:
            return path, saved["step"]
    return None


def _family(process: subprocess.Popen) -> list[psutil.Process]:
    """The build and every process it started (the kernel runs in a session of its own)."""
    try:
        root = psutil.Process(process.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _send(family: list[psutil.Process], sig: signal.Signals) -> None:
    for member in family:
        try:
            member.send_signal(sig)
        except psutil.NoSuchProcess:
            pass


def _freeze_mid_training(process: subprocess.Popen, checkpoints: Path, steps: int) -> tuple[Path, int] | None:
    """Wait for a training run in mid-course, then SIGSTOP the build and its kernel and read the checkpoints again:
    a smoke run takes a fraction of a second, so only what is on disk once nothing runs any more counts. The frozen
    run's checkpoint and step, or ``None`` when the chapter ended or the time ran out (the processes still run)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while process.poll() is None and time.monotonic() < deadline:
        if _mid_training(checkpoints, steps) is not None:
            family = _family(process)
            _send(family, signal.SIGSTOP)
            frozen = _mid_training(checkpoints, steps)
            if frozen is not None:
                return frozen
            _send(family, signal.SIGCONT)
        time.sleep(0.02)
    return None


def _kill_everything(process: subprocess.Popen) -> None:
    """SIGKILL the build, its process group and every process it started."""
    family = _family(process)
    os.killpg(process.pid, signal.SIGKILL)
    _send(family, signal.SIGKILL)
    process.wait(timeout=60)
    psutil.wait_procs(family, timeout=30)


@pytest.mark.skipif(not (paths.converted_dir("smoke") / "manifest.json").is_file(), reason="run `make data` first")
def test_chapter_2_killed_during_training_resumes_and_completes(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "TKBOOK_ARTIFACTS": str(tmp_path / "artifacts"),
        "TKBOOK_BUILD": str(tmp_path / "_build"),
        "PYTHONWARNINGS": "default",
    }
    first_stage = _build("01_data_and_first_stage", env)
    output, _ = first_stage.communicate(timeout=PATIENCE_SECONDS)
    assert first_stage.returncode == 0, output

    settings = get_profile("smoke").training
    steps = min(settings.max_steps, settings.bert_cat_max_steps)
    checkpoints = tmp_path / "artifacts" / "smoke" / TRAINING / "checkpoints"
    chapter = _build(TRAINING, env)
    caught = _freeze_mid_training(chapter, checkpoints, steps)
    _kill_everything(chapter)
    assert caught is not None, "chapter 2 never held a checkpoint in the middle of a training run"
    checkpoint, step = caught
    executed = tmp_path / "_build" / "smoke" / "chapters" / f"{TRAINING}.ipynb"
    assert not executed.exists(), "a killed chapter left an executed notebook that looks complete"
    assert not executed.with_name(f".{TRAINING}.stamp.json").exists()

    again = _build(TRAINING, env)
    output, _ = again.communicate(timeout=PATIENCE_SECONDS)
    assert again.returncode == 0, output
    notebook = json.loads(executed.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["execution_count"] for cell in code), "a cell of the resumed chapter did not run"
    texts = "".join(
        "".join(out.get("text", ""))
        for cell in code
        for out in cell.get("outputs", [])
        if out["output_type"] == "stream"
    )
    assert not [out for cell in code for out in cell.get("outputs", []) if out["output_type"] == "error"]
    resumed = [line for line in texts.splitlines() if line.startswith(f"[train] {checkpoint}: resumed at step")]
    said = [line for line in texts.splitlines() if line.startswith("[train]") or "from scratch" in line]
    assert resumed, f"killed at step {step} of {checkpoint}; the second run said: {said}"
    assert int(resumed[0].split("resumed at step ")[1].split()[0]) >= step
    assert "truncated or corrupt" not in texts  # nothing half-written was found, nothing set aside
    assert not list((tmp_path / "artifacts").rglob(f"*{BROKEN_SUFFIX}"))
    assert torch.load(checkpoint, map_location="cpu", weights_only=True)["finished"]
