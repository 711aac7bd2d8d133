"""Distributed training (``lib.core.distributed`` and ``lib.training.loop``): 2 processes = 1 process.

Two CPU processes (gloo on 127.0.0.1, started with ``torch.multiprocessing``, as torchrun would start
them) train a tiny TK with the pairwise trainer: the same global batch gives the weights, losses
and validation history of one process, within float rounding (the two halves' gradients are summed
in another order). A distributed run stopped half-way resumes in both processes from rank 0's
checkpoint to exactly the weights of an uninterrupted distributed run, and the process of rank 1
never moves a file into place (rank 0 writes everything). One process still resumes an interrupted
run to exactly the uninterrupted weights. The two processes also share a bi-encoder's pass over a set
of texts (``lib.reranking.dense``): each encodes about half, and both return one process's vectors;
and the passes of TILDE and TILDEv2 over the passages of their indexes (``lib.reranking.tilde_index``,
``lib.reranking.tilde_v2_index``): each encodes about half, and rank 0 writes the very files of one process.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

from lib.core import distributed
from lib.core.types import JudgedSet
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.models.tk import TK, TKConfig
from lib.representations.bert import WordPieceTokenizer
from lib.reranking import dense, tilde_index, tilde_v2_index
from lib.training import pairwise
from lib.training.loop import CHECKPOINT_NAME, BatchOrder, LoopSettings, run_loop, step_seed
from tests.tilde_helpers import tiny_tilde, tiny_tilde_v2

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: 1 process and 2 processes sum the two halves' gradients in another order: float32 rounding.
TOLERANCE = 1e-6
#: The attention's key bias has a gradient of exactly 0 (softmax ignores a shift shared by all keys), so
#: its computed gradient is rounding noise alone, which Adam scales up to steps of the order of its
#: learning rate: there the two runs agree to 1e-4 only (measured: 4e-5 after 6 steps).
KEY_BIAS = "contextualiser.layers.0.attention.qkv.bias"
KEY_BIAS_TOLERANCE = 1e-4
VOCAB = 60

# --- a tiny synthetic task ------------------------------------------------------------------------


class WordTokenizer:
    """``w17`` → id 18 (0 is padding): the interface of the book's tokenizers."""

    def encode(self, texts: Sequence[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [[1 + int(word[1:]) for word in text.split()][:max_length] for text in texts]
        ids = torch.zeros(len(rows), max(1, max(map(len, rows))), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
        return ids, ids != 0


def synthetic_data() -> tuple[list[tuple[str, str, str]], dict, dict, JudgedSet]:
    """Queries of 3 words; the relevant passage holds the first of them among random words."""
    generator = torch.Generator().manual_seed(5)

    def words(count: int) -> list[str]:
        return [f"w{int(i)}" for i in torch.randint(0, VOCAB - 1, (count,), generator=generator)]

    queries, texts, qrels, run, pairs = {}, {}, {}, {}, []
    for q in range(12):
        qid = str(100 + q)
        queries[qid] = " ".join(words(3))
        candidates = {}
        for d in range(6):
            pid = f"{qid}-{d}"
            body = words(8)
            texts[pid] = " ".join(queries[qid].split()[:1] + body if d == 0 else body)
            candidates[pid] = float(-d)
        qrels[qid] = {f"{qid}-0": 2}
        run[qid] = candidates
        pairs += [(qid, f"{qid}-0", f"{qid}-{d}") for d in range(1, 6)]
    validation_ids = [str(100 + q) for q in range(8, 12)]
    validation = JudgedSet(
        "validation",
        {q: queries[q] for q in validation_ids},
        {q: qrels[q] for q in validation_ids},
        {q: run[q] for q in validation_ids},
    )
    return [p for p in pairs if p[0] not in validation_ids], queries, texts, validation


def tiny_tk() -> TK:
    torch.manual_seed(0)
    return TK(torch.randn(VOCAB, 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8))


CONFIG = pairwise.TrainingConfig(
    batch_size=8,
    max_steps=6,
    validate_every=3,
    patience=None,
    max_query_length=5,
    max_doc_length=12,
    seed=3,
    device="cpu",
    rerank_depth=6,
    eval_batch_size=16,
    progress=False,
)


def train_pairwise(folder: Path) -> dict[str, Any]:
    """Train the tiny TK on the synthetic pairs; what the comparison needs."""
    pairs, queries, texts, validation = synthetic_data()
    model = tiny_tk()
    result = pairwise.train(model, WordTokenizer(), pairs, queries, texts, validation, CONFIG, folder)
    saved = torch.load(folder / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    return {"last": saved["model"], "best": model.state_dict(), "losses": saved["losses"], "history": result.history}


# --- a loop with dropout, for the distributed resume -------------------------------------------------

INPUTS = torch.randn(32, 6, generator=torch.Generator().manual_seed(0))
TARGETS = INPUTS @ torch.arange(6.0) + 0.5


def train_regression(folder: Path, stop_after: int | None = None) -> tuple[nn.Module, Any]:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    order = BatchOrder(len(INPUTS), 8, seed=3)

    def loss_of_step(step: int) -> torch.Tensor:
        rows = distributed.shard(order.batch(step))
        return ((model(INPUTS[rows]).squeeze(1) - TARGETS[rows]) ** 2).mean()

    settings = LoopSettings(6, checkpoint_every=3, stop_after=stop_after, seed=11, progress=False)
    return model, run_loop(model, optimizer, loss_of_step, folder / CHECKPOINT_NAME, {"task": "regression"}, settings)


# --- a bi-encoder's pass over texts, for the shared encoding -------------------------------------------


class TinyBiEncoder(nn.Module):
    """The interface :func:`lib.reranking.dense.encode` uses: ``encode(ids, mask)`` and ``bert.config``; counts rows."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.embedding = nn.Embedding(VOCAB, 4)
        self.bert = SimpleNamespace(config=SimpleNamespace(hidden_size=4))
        self.rows = 0

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self.rows += len(ids)
        summed = (self.embedding(ids) * mask.unsqueeze(-1)).sum(dim=1)
        return summed / mask.sum(dim=1, keepdim=True).clamp_min(1)


#: 23 texts of 1–7 words: 6 batches of 4, an odd number for 2 processes.
TEXTS = {f"t{i}": " ".join(f"w{(3 * i + j) % (VOCAB - 1)}" for j in range(1 + i % 7)) for i in range(23)}


def encode_texts(folder: Path) -> tuple[dense.Encodings, int]:
    encoder = TinyBiEncoder()
    encodings = dense.cached_encodings(folder / "vectors.npy", encoder, WordTokenizer(), TEXTS, sorted(TEXTS), 8, 4)
    return encodings, encoder.rows


# --- TILDE's and TILDEv2's passes over the passages of an index ----------------------------------------

#: 9 passages of 1–9 words: 5 batches of 2, an odd number for 2 processes.
INDEX_TEXTS = {
    f"p{i}": " ".join(["the", "cat", "sat", "on", "a", "mat", "with", "its", "dog"][: 1 + (4 * i) % 9])
    for i in range(9)
}


def _counting(model: nn.Module, method: str) -> list[int]:
    """Count the passages that go through ``model.method`` (its first argument: a list of piece lists)."""
    count, original = [0], getattr(model, method)

    def counted(pieces: Sequence[Sequence[int]], *args: Any, **kwargs: Any) -> Any:
        count[0] += len(pieces)
        return original(pieces, *args, **kwargs)

    setattr(model, method, counted)
    return count


def build_indexes(folder: Path) -> dict[str, Any]:
    """Both indexes of :data:`INDEX_TEXTS` in batches of 2: the passages this process encoded, the files, the pids."""
    tokenizer = WordPieceTokenizer.from_vocab()
    tilde, tilde_v2 = tiny_tilde(), tiny_tilde_v2()
    rows = {"tilde": _counting(tilde, "piece_log_probs"), "tilde-v2": _counting(tilde_v2, "piece_weights")}
    pids = sorted(INDEX_TEXTS)
    indexes = {
        "tilde": tilde_index.build_index(
            tilde, tokenizer, INDEX_TEXTS, pids, folder / "tilde", TargetVocabulary.cleaned(tokenizer), 2, False
        ),
        "tilde-v2": tilde_v2_index.build_index(tilde_v2, tokenizer, INDEX_TEXTS, pids, folder / "tilde-v2", 2, False),
    }
    return {
        "rows": {name: count[0] for name, count in rows.items()},
        "pids": {name: index.pids for name, index in indexes.items()},
        "files": {
            str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
        },
    }


# --- the two processes -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _slow_fetch(target: Path) -> bool:
    """A download as local rank 0 does it (slowly); every process returns whether the file was there."""
    if distributed.local_rank() == 0:
        time.sleep(0.5)
        target.write_text("fetched")
    return target.is_file()


def _worker(rank: int, world: int, port: int, folder: Path) -> None:
    """One process of the distributed run: torchrun's variables, then the pairwise run and the resume."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(world),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)
    moved: list[str] = []
    if rank > 0:  # rank 0 writes every file: a rename into place on another rank is an error

        def forbidden(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            moved.append(str(target))
            raise PermissionError(f"rank {rank} tried to write {target}")

        os.replace = forbidden
    assert distributed.init_from_env(backend="gloo")
    try:
        assert (distributed.rank(), distributed.world_size()) == (rank, world)
        outcome: dict[str, Any] = {"pairwise": train_pairwise(folder / "pairwise")}
        whole, whole_state = train_regression(folder / "whole")
        train_regression(folder / "cut", stop_after=3)
        resumed, state = train_regression(folder / "cut")
        outcome["regression"] = {
            "whole": whole.state_dict(),
            "whole_losses": whole_state.losses,
            "resumed": resumed.state_dict(),
            "resumed_losses": state.losses,
            "resumed_from": state.resumed_from,
        }
        encodings, rows = encode_texts(folder)
        outcome["encode"] = {"ids": encodings.ids, "vectors": encodings.vectors, "rows": rows}
        outcome["indexes"] = build_indexes(folder / "indexes")
        outcome["local_first"] = distributed.local_first(lambda: _slow_fetch(folder / "fetched.txt"))
        outcome["moved"] = moved
    finally:
        distributed.shutdown()
    with open(folder / f"outcome.{rank}.pt", "wb") as handle:  # plain write: no rename
        torch.save(outcome, handle)


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("distributed")
    mp.spawn(_worker, args=(2, _free_port(), folder), nprocs=2, join=True)
    return [torch.load(folder / f"outcome.{rank}.pt", weights_only=False) for rank in range(2)]


# --- the tests -------------------------------------------------------------------------------------


def test_shard_splits_a_batch_into_equal_contiguous_parts() -> None:
    batch = list(range(8))
    assert [distributed.shard(batch, r, 2) for r in range(2)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert distributed.shard(batch) == batch  # one process: the whole batch
    with pytest.raises(ValueError, match="cannot be split evenly over 3 processes"):
        distributed.shard(batch, 0, 3)
    with pytest.raises(ValueError, match="not one of 2 parts"):
        distributed.shard(batch, 2, 2)


def test_without_torchrun_nothing_is_distributed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not distributed.init_from_env()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not distributed.init_from_env()
    assert (distributed.rank(), distributed.world_size(), distributed.is_main()) == (0, 1, True)
    assert distributed.broadcast_object({"a": 1}) == {"a": 1}
    assert distributed.gather_objects(3) == [3]
    assert list(distributed.map_round_robin([1, 2, 3], lambda item: 10 * item)) == [10, 20, 30]
    assert distributed.local_first(lambda: 7) == 7
    assert distributed.mean_over_ranks(torch.tensor(2.5)) == 2.5
    module = nn.Linear(2, 1)
    assert distributed.wrap(module) is module
    distributed.barrier()
    distributed.finish({"steps": 3, "best": 0.5})
    assert capsys.readouterr().out == '{"steps": 3, "best": 0.5}\n', "the one process prints its record as a JSON line"


def test_a_rank_seed_keeps_rank_0_and_separates_the_others() -> None:
    assert distributed.rank_seed(42, 0) == 42
    assert len({distributed.rank_seed(42, r) for r in range(4)}) == 4
    assert step_seed(42, 5, rank=0) == step_seed(42, 5) != step_seed(42, 5, rank=1)


def test_two_processes_train_the_weights_of_one(tmp_path: Path, two_processes: list[dict[str, Any]]) -> None:
    one = train_pairwise(tmp_path / "one")
    for outcome in two_processes:
        two = outcome["pairwise"]
        assert two["losses"] == pytest.approx(one["losses"], rel=TOLERANCE, abs=TOLERANCE)
        for weights in ("last", "best"):
            assert two[weights].keys() == one[weights].keys()
            for name, tensor in one[weights].items():
                other = two[weights][name]
                if name == KEY_BIAS:  # queries, keys, values: only the keys' part is noise
                    tensor, other = tensor.view(3, -1), other.view(3, -1)
                    torch.testing.assert_close(other[1], tensor[1], rtol=0, atol=KEY_BIAS_TOLERANCE)
                    tensor, other = tensor[[0, 2]], other[[0, 2]]
                torch.testing.assert_close(other, tensor, rtol=TOLERANCE, atol=TOLERANCE, msg=name)
        assert two["history"][["step", "best"]].equals(one["history"][["step", "best"]])
        for measure in ("MRR@10", "nDCG@10"):
            assert two["history"][measure].tolist() == pytest.approx(one["history"][measure].tolist())
        assert two["history"]["train_loss"].tolist() == pytest.approx(one["history"]["train_loss"].tolist(), TOLERANCE)
    assert one["losses"][-1] < one["losses"][0]


def test_every_process_resumes_a_distributed_run_from_rank_0s_checkpoint(two_processes: list[dict[str, Any]]) -> None:
    for rank, outcome in enumerate(two_processes):
        run = outcome["regression"]
        assert run["resumed_from"] == 3
        assert run["resumed_losses"] == run["whole_losses"]  # the same mean over the processes, step by step
        for name, tensor in run["whole"].items():
            assert torch.equal(run["resumed"][name], tensor), (rank, name)
    for name, tensor in two_processes[0]["regression"]["whole"].items():
        assert torch.equal(two_processes[1]["regression"]["whole"][name], tensor)  # DDP keeps the ranks equal


def test_only_rank_0_writes_files(two_processes: list[dict[str, Any]]) -> None:
    assert two_processes[1]["moved"] == []


def test_two_processes_share_an_encoding_pass_and_return_one_process_vectors(
    tmp_path: Path, two_processes: list[dict[str, Any]]
) -> None:
    one, rows = encode_texts(tmp_path)
    assert rows == len(TEXTS)
    shares = [outcome["encode"]["rows"] for outcome in two_processes]
    assert sum(shares) == len(TEXTS) and max(shares) <= 12, shares  # 6 batches of 4 (the last of 3): 3 each
    for outcome in two_processes:
        assert outcome["encode"]["ids"] == one.ids
        torch.testing.assert_close(outcome["encode"]["vectors"], one.vectors, rtol=TOLERANCE, atol=TOLERANCE)
    assert (one.vectors.norm(dim=1) > 0.99).all()


def test_two_processes_share_the_pass_of_tildes_indexes_and_rank_0_writes_one_process_files(
    tmp_path: Path, two_processes: list[dict[str, Any]]
) -> None:
    one = build_indexes(tmp_path)
    assert one["rows"] == {"tilde": len(INDEX_TEXTS), "tilde-v2": len(INDEX_TEXTS)}
    assert {name.split("/")[0] for name in one["files"]} == {"tilde", "tilde-v2"} and len(one["files"]) == 8
    for name in ("tilde", "tilde-v2"):
        shares = [outcome["indexes"]["rows"][name] for outcome in two_processes]
        assert shares == [5, 4], (name, shares)  # 5 batches of 2 (the last of 1): batches 0, 2, 4 and 1, 3
    for outcome in two_processes:
        assert outcome["indexes"]["files"] == one["files"]  # byte for byte, the header and its pid order included
        assert outcome["indexes"]["pids"] == one["pids"]  # every process loads the index rank 0 wrote


def test_one_process_resumes_an_interrupted_run_to_the_same_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = train_pairwise(tmp_path / "whole")

    class Killed(Exception):
        """Stands in for the process being killed."""

    batch_loss, calls = pairwise._batch_loss, []

    def dying(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(1)
        if len(calls) == 5:  # step 5, after the checkpoint of step 3
            raise Killed
        return batch_loss(*args, **kwargs)

    monkeypatch.setattr(pairwise, "_batch_loss", dying)
    with pytest.raises(Killed):
        train_pairwise(tmp_path / "cut")
    monkeypatch.setattr(pairwise, "_batch_loss", batch_loss)
    assert torch.load(tmp_path / "cut" / CHECKPOINT_NAME, weights_only=True)["step"] == 3
    resumed = train_pairwise(tmp_path / "cut")
    assert resumed["losses"] == whole["losses"]
    for weights in ("last", "best"):
        for name, tensor in whole[weights].items():
            assert torch.equal(resumed[weights][name], tensor), name


def test_local_rank_0_fetches_first_and_the_other_processes_find_its_file(two_processes: list[dict[str, Any]]) -> None:
    assert [outcome["local_first"] for outcome in two_processes] == [True, True]
