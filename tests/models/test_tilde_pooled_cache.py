"""A frozen TILDE encoder's pooled-vector cache (``lib.models.tilde_pooled_cache``) and ``Tilde.pooled``'s use of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lib.models.tilde import Tilde
from lib.models.tilde_pooled_cache import PooledCache, row_key
from tests.tilde_helpers import POSITIONS, tiny_tilde

VOCAB = 3000


def same_model(model: Tilde, pooling: str = "first") -> Tilde:
    """Another TILDE on ``model``'s BERT (as a new process would load it)."""
    return Tilde(model.bert, max_passage_length=POSITIONS - 2, max_query_length=16, pooling=pooling)


PIECES = [[1500, 1501, 1502], [1600], [1700, 1701, 1702, 1703, 1704], [1500, 1501, 1502]]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_put_then_get_in_a_new_process_reads_the_same_vectors(tmp_path: Path) -> None:
    rows = [[101, 5, 6, 102], [101, 7, 102]]
    vectors = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    PooledCache(tmp_path).put("fp", rows, vectors)
    found, missing = PooledCache(tmp_path).get("fp", [[101, 7, 102], [101, 8, 102], [101, 5, 6, 102]])
    assert missing == [1]
    torch.testing.assert_close(found[0], vectors[1])
    torch.testing.assert_close(found[2], vectors[0])
    assert PooledCache(tmp_path).get("other", rows)[1] == [0, 1]  # another encoder reads nothing


def test_a_row_kept_twice_is_written_once(tmp_path: Path) -> None:
    cache = PooledCache(tmp_path)
    cache.put("fp", [[1, 2]], torch.ones(1, 3))
    cache.put("fp", [[1, 2]], torch.zeros(1, 3))  # already kept: no new shard, the first vector stays
    assert len(list((tmp_path / "fp").glob("*.npz"))) == 1
    torch.testing.assert_close(PooledCache(tmp_path).get("fp", [[1, 2]])[0][0], torch.ones(3))
    assert row_key([1, 2]) != row_key([2, 1])


def test_a_broken_shard_is_set_aside_with_a_warning_and_its_rows_count_as_missing(tmp_path: Path) -> None:
    cache = PooledCache(tmp_path)
    cache.put("fp", [[1, 2]], torch.ones(1, 3))
    cache.put("fp", [[3, 4]], torch.zeros(1, 3))
    first, second = sorted((tmp_path / "fp").glob("*.npz"))
    data = first.read_bytes()
    first.write_bytes(data[: len(data) // 2])  # a truncated copy
    with pytest.warns(UserWarning, match=rf"{first.name}: a pooled-vector shard .* truncated or corrupt"):
        found, missing = PooledCache(tmp_path).get("fp", [[1, 2], [3, 4]])
    kept_row = 0 if missing == [1] else 1
    assert len(found) == 1 and len(missing) == 1 and kept_row not in missing
    assert first.with_name(first.name + ".broken").read_bytes() == data[: len(data) // 2]
    np.savez(tmp_path / "fp" / "odd.npz", keys=np.array([b"x" * 20], dtype="S20"), vectors=np.zeros((2, 3)))
    with pytest.warns(UserWarning, match=r"odd\.npz: .*do not match"):
        PooledCache(tmp_path).get("fp", [[1]])
    assert second.is_file()


def test_cached_pooling_equals_computed_and_encodes_each_input_once(tmp_path: Path) -> None:
    model = tiny_tilde(VOCAB).eval()
    expected = model.pooled(PIECES, "passage")
    calls = []
    model.pool = lambda ids, mask: calls.append(len(ids)) or Tilde.pool(model, ids, mask)  # count the encoder's rows
    model.use_pooled_cache(PooledCache(tmp_path))
    torch.testing.assert_close(model.pooled(PIECES, "passage"), expected, rtol=1e-5, atol=1e-5)
    assert sum(calls) == len(PIECES)  # computed: the repeated text is computed twice, kept once
    calls.clear()
    again = same_model(model).use_pooled_cache(PooledCache(tmp_path))  # a new process
    again.pool = lambda ids, mask: calls.append(len(ids)) or Tilde.pool(again, ids, mask)
    torch.testing.assert_close(again.pooled(PIECES, "passage"), expected, rtol=1e-5, atol=1e-5)
    assert calls == []
    again.pooled(PIECES[:1], "query")  # another direction is another input row
    assert calls == [1]


def test_the_fingerprint_follows_the_encoder_weights_not_the_head(tmp_path: Path) -> None:
    model = tiny_tilde(VOCAB)
    before = model.encoder_fingerprint()
    with torch.no_grad():
        model.bert.cls.predictions.bias.add_(1.0)
    assert model.encoder_fingerprint() == before
    with torch.no_grad():
        model.bert.bert.encoder.layer[0].output.dense.bias.add_(1.0)  # an in-place change, as an optimiser's
    changed = model.encoder_fingerprint()
    assert changed != before
    assert same_model(model, "mean").encoder_fingerprint() != changed  # the pooling is part of it


def test_a_changed_encoder_does_not_read_the_old_vectors(tmp_path: Path) -> None:
    model = tiny_tilde(VOCAB).eval().use_pooled_cache(PooledCache(tmp_path))
    old = model.pooled(PIECES[:1], "passage")
    with torch.no_grad():
        model.bert.bert.encoder.layer[0].output.dense.weight.mul_(2.0)
    new = model.pooled(PIECES[:1], "passage")
    assert not torch.allclose(old, new)
    torch.testing.assert_close(new, same_model(model).eval().pooled(PIECES[:1], "passage"))
