"""The one training loop (``lib.training.loop``): exact resume, stale checkpoints, finished runs, markers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from lib.training.loop import (
    CHECKPOINT_NAME,
    BatchOrder,
    LoopSettings,
    differences,
    read_marker,
    run_loop,
    step_seed,
    write_marker,
)

INPUTS = torch.randn(40, 6, generator=torch.Generator().manual_seed(0))
TARGETS = INPUTS @ torch.arange(6.0) + 0.5


class Interrupted(Exception):
    """Stands in for the process being killed."""


def train(folder: Path, steps: int = 8, kill_at: int | None = None, **settings):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.2), nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    order = BatchOrder(len(INPUTS), 8, seed=3)

    def loss_of_step(step: int) -> torch.Tensor:
        if step == kill_at:
            raise Interrupted
        torch.manual_seed(step_seed(3, step))
        rows = order.batch(step)
        return ((model(INPUTS[rows]).squeeze(1) - TARGETS[rows]) ** 2).mean()

    loop = LoopSettings(steps, checkpoint_every=3, progress=False, **settings)
    state = run_loop(model, optimizer, loss_of_step, folder / CHECKPOINT_NAME, {"lr": 0.01, "steps": steps}, loop)
    return model, state


def test_an_interrupted_run_resumes_to_the_uninterrupted_weights(tmp_path: Path) -> None:
    whole, whole_state = train(tmp_path / "whole")
    assert whole_state.finished and whole_state.step == 8 and whole_state.losses[-1] < whole_state.losses[0]
    with pytest.raises(Interrupted):
        train(tmp_path / "cut", kill_at=7)  # steps 1–7 ran, the checkpoint holds step 6
    resumed, state = train(tmp_path / "cut")
    assert (state.resumed_from, state.steps_run) == (6, 2)
    assert state.losses == whole_state.losses
    for left, right in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(left, right)


def test_a_finished_run_is_reused_without_training(tmp_path: Path) -> None:
    trained, _ = train(tmp_path / "run")
    again, state = train(tmp_path / "run", kill_at=0)  # would raise if it trained a step
    assert state.finished and state.steps_run == 0
    assert all(
        torch.equal(a, b) for a, b in zip(trained.state_dict().values(), again.state_dict().values(), strict=True)
    )


def test_stop_after_pauses_and_a_stale_checkpoint_is_refused_or_replaced(tmp_path: Path) -> None:
    _, paused = train(tmp_path / "run", stop_after=4)
    assert not paused.finished and paused.step == 4
    with pytest.raises(
        ValueError, match=r"checkpoint\.pt was written by a training run with other arguments.*steps: 8 → 5"
    ):
        train(tmp_path / "run", steps=5)
    with pytest.warns(UserWarning, match="training again from scratch"):
        _, state = train(tmp_path / "run", steps=5, mismatch="retrain")
    assert state.resumed_from == 0 and state.step == 5


def test_a_non_finite_loss_is_an_error_naming_the_step(tmp_path: Path) -> None:
    model = nn.Linear(6, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(FloatingPointError, match="step 1"):
        run_loop(model, optimizer, lambda step: model(INPUTS).sum() * float("nan"), tmp_path / CHECKPOINT_NAME, {},
                 LoopSettings(3, 1, progress=False))  # fmt: skip


def test_markers_and_differences(tmp_path: Path) -> None:
    marker = tmp_path / "done.json"
    assert read_marker(marker, {"a": 1}) is None
    write_marker(marker, {"a": 1, "b": {"c": 2}}, {"losses": [0.5]})
    assert read_marker(marker, {"a": 1, "b": {"c": 2}})["losses"] == [0.5]
    with pytest.raises(ValueError, match="b.c: 2 → 3"):
        read_marker(marker, {"a": 1, "b": {"c": 3}})
    with pytest.warns(UserWarning):
        assert read_marker(marker, {"a": 2}, mismatch="retrain") is None
    assert not marker.exists()
    assert differences({"x": 1, "y": [1]}, {"x": 1, "y": [2], "z": 0}) == ["y: [1] → [2]", "z: None → 0"]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="'steps'"):
        LoopSettings(0, 1)
    with pytest.raises(ValueError, match="'checkpoint_every'"):
        LoopSettings(3, 0)


def test_a_checkpoint_of_an_earlier_loop_is_replaced_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    torch.save({"format": 1, "step": 3}, tmp_path / "run" / CHECKPOINT_NAME)
    with pytest.warns(UserWarning, match="earlier training loop"):
        _, state = train(tmp_path / "run")
    assert state.resumed_from == 0 and state.finished


def test_a_truncated_checkpoint_is_set_aside_with_a_warning_and_training_starts_again(tmp_path: Path) -> None:
    whole, whole_state = train(tmp_path / "whole")
    with pytest.raises(Interrupted):
        train(tmp_path / "cut", kill_at=7)
    checkpoint = tmp_path / "cut" / CHECKPOINT_NAME
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2])  # a killed copy, a full disk
    with pytest.warns(UserWarning, match=rf"{CHECKPOINT_NAME}: a training checkpoint is truncated or corrupt"):
        resumed, state = train(tmp_path / "cut")
    assert (state.resumed_from, state.steps_run) == (0, 8) and state.finished
    assert (tmp_path / "cut" / f"{CHECKPOINT_NAME}.broken").read_bytes() == data[: len(data) // 2]
    for left, right in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(left, right)  # trained again from scratch: the uninterrupted weights
    assert state.losses == whole_state.losses


def test_a_corrupt_marker_is_set_aside_and_the_run_counts_as_unfinished(tmp_path: Path) -> None:
    marker = tmp_path / "done.json"
    write_marker(marker, {"lr": 1}, {"best": 3})
    marker.write_text(marker.read_text(encoding="utf-8")[:9], encoding="utf-8")
    with pytest.warns(UserWarning, match=r"done\.json: a finished run's marker is truncated or corrupt"):
        assert read_marker(marker, {"lr": 1}) is None
    assert not marker.exists() and (tmp_path / "done.json.broken").is_file()
