"""The compact TK indexes (``lib.experiments.compact_tk``): training passages, principal ``P``, the PQ TK."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import BertForMaskedLM

from lib.core.types import JudgedSet
from lib.data import book_texts
from lib.experiments.compact_tk import (
    Requantised,
    compact_variant,
    fit_vectors,
    index_runs,
    passages_outside,
    principal_projection,
    smallest_within,
    training_passages,
)
from lib.experiments.score_cache import weights_digest
from lib.models.tk_bert import TKBert
from lib.models.tk_bert_sparse import TKBertSparse
from lib.representations.bert import WordPieceTokenizer, small_bert_config
from lib.representations.pretrained import minilm_folder
from lib.reranking.passage_index import load_index
from lib.reranking.product_quantisation import fit_quantiser, pq_name
from tests.models.helpers import pad

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class CharTokenizer:
    """The tokenizer contract (``encode(texts, max_length)`` → ids, mask) over characters, for a tiny BERT."""

    def encode(self, texts: list[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        return pad([[5 + ord(char) % 100 for char in text if char != " "][:max_length] for text in texts])


@pytest.fixture(scope="module")
def full_tk(tmp_path_factory: pytest.TempPathFactory) -> TKBert:
    folder: Path = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    BertForMaskedLM(small_bert_config(vocab_size=120, layers=2, hidden=32, heads=2, intermediate=64)).save_pretrained(
        folder
    )
    return TKBert(folder, 2).eval()


def protocol() -> SimpleNamespace:
    texts = {f"p{i}": f"passage number {i} about topic {i % 3} and more words {i * 7}" for i in range(12)}
    texts["held"] = "a passage no training triple holds"
    triples = [("q1", "p0", "p1"), ("q1", "p0", "p2"), ("q2", "p3", "p4"), ("q3", "p5", "p6"), ("q4", "p7", "p8")]
    return SimpleNamespace(triples=triples, texts=texts)


def unit_vectors(model: TKBert, tokenizer, texts: list[str]) -> torch.Tensor:
    with torch.no_grad():
        vectors, mask = model.encode_passages(*tokenizer.encode(texts, 64))
    kept = vectors[mask].double()
    return kept / kept.norm(dim=-1, keepdim=True)


def test_the_projection_passages_are_training_passages_drawn_once_and_the_same_every_time() -> None:
    chosen = training_passages(protocol(), count=5)
    assert len(chosen) == len(set(chosen)) == 5
    assert set(chosen) <= {f"p{i}" for i in range(9)} and "held" not in chosen
    assert chosen == training_passages(protocol(), count=5)
    assert sorted(training_passages(protocol(), count=100)) == [f"p{i}" for i in range(9)]
    with pytest.raises(ValueError, match="no training triples"):
        training_passages(SimpleNamespace(triples=[], texts={}))


def test_p_spans_the_leading_directions_of_the_unit_vectors_and_keeps_more_than_a_random_map(full_tk: TKBert) -> None:
    texts = list(protocol().texts.values())
    projection = principal_projection(full_tk, CharTokenizer(), texts, 4, batch_size=5, max_length=64, progress=False)
    assert projection.shape == (4, 32)
    torch.testing.assert_close(projection @ projection.T, torch.eye(4), atol=1e-5, rtol=0)
    vectors = unit_vectors(full_tk, CharTokenizer(), texts)
    leading = torch.linalg.svd(vectors, full_matrices=False).Vh[:4]
    overlap = torch.linalg.svdvals(projection.double() @ leading.T)  # cosines of the principal angles
    torch.testing.assert_close(overlap, torch.ones(4, dtype=torch.float64), atol=1e-4, rtol=0)
    random = torch.linalg.qr(torch.randn(32, 4, generator=torch.Generator().manual_seed(0)))[0].T.double()
    assert (vectors @ projection.double().T).norm() > (vectors @ random.T).norm()


def test_a_bad_width_or_an_already_compact_model_is_an_error_naming_it(full_tk: TKBert) -> None:
    with pytest.raises(ValueError, match="'dim' must be in 1..32"):
        principal_projection(full_tk, CharTokenizer(), ["some text"], 33)
    with pytest.raises(ValueError, match="'texts' is empty"):
        principal_projection(full_tk, CharTokenizer(), [], 4)
    with pytest.raises(ValueError, match="must be a full TK"):
        principal_projection(full_tk.compacted(torch.eye(32)[:4]), CharTokenizer(), ["some text"], 2)


def test_a_compact_tk_starts_from_the_trained_full_tk_with_its_principal_p_under_its_registry_name(
    full_tk: TKBert, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lib.experiments.compact_tk.COMPACT_WIDTHS", {"tk-bert6-d64": 8, "tk-bert6-d32": 4})
    variant = compact_variant("tk-bert6-d32", "tk-bert6", {"tk-bert6": full_tk}, protocol(), CharTokenizer(), False)
    assert variant.name is None and variant.run_name("tk-bert6-d32") == "tk-bert6-d32"
    model, what = variant.start
    assert model.projection.weight.shape == (4, 32)
    assert weights_digest(full_tk)[:16] in what and "4 principal directions" in what
    shared = {name: value for name, value in model.state_dict().items() if not name.startswith("projection")}
    assert all(torch.equal(value, full_tk.state_dict()[name]) for name, value in shared.items())
    assert compact_variant("tk-bert6-d64", "minilm", {}, protocol(), CharTokenizer()).start is None
    assert compact_variant("bert-cat", "tk-bert6", {}, protocol(), CharTokenizer()).start is None
    with pytest.raises(ValueError, match="has not trained before it"):
        compact_variant("tk-bert6-d64", "tk-bert6", {}, protocol(), CharTokenizer())
    with pytest.raises(ValueError, match="setting 'compact_start' must be one of"):
        compact_variant("tk-bert6-d64", "bert", {}, protocol(), CharTokenizer())


def test_the_sparse_tk_starts_from_the_trained_full_tk_with_a_new_gate_only_under_sparse_start(
    full_tk: TKBert,
) -> None:
    trained = {"tk-bert6": full_tk}
    variant = compact_variant("tk-bert6-sparse", "minilm", trained, protocol(), CharTokenizer(), False, "tk-bert6")
    assert variant.run_name("tk-bert6-sparse") == "tk-bert6-sparse"
    model, what = variant.start
    assert isinstance(model, TKBertSparse) and weights_digest(full_tk)[:16] in what and "gate" in what
    assert all(torch.equal(value, model.state_dict()[name]) for name, value in full_tk.state_dict().items())
    assert compact_variant("tk-bert6-sparse", "tk-bert6", trained, protocol(), CharTokenizer()).start is None
    plain_compact = compact_variant("tk-bert6-d64", "minilm", trained, protocol(), CharTokenizer(), False, "tk-bert6")
    assert plain_compact.start is None
    with pytest.raises(ValueError, match=r"\(sparse_start\), which this build has not trained"):
        compact_variant("tk-bert6-sparse", "minilm", {}, protocol(), CharTokenizer(), False, "tk-bert6")
    with pytest.raises(ValueError, match="setting 'sparse_start' must be one of"):
        compact_variant("tk-bert6-sparse", "minilm", {}, protocol(), CharTokenizer(), False, "bert")


def test_on_real_passages_minilms_principal_p_keeps_most_of_what_its_vectors_carry() -> None:
    """A real slice: MiniLM's first layer over 40 book passages; 64 of its 384 directions keep over half the energy
    of the unit vectors (a random 64-d map keeps about 64/384 of it)."""
    model = TKBert(minilm_folder(), 1).eval()
    tokenizer = WordPieceTokenizer.from_vocab(minilm_folder() / "vocab.txt")
    texts = [text for _, text in zip(range(40), book_texts().values(), strict=False)]
    projection = principal_projection(model, tokenizer, texts, 64, max_length=64, progress=False)
    vectors = unit_vectors(model, tokenizer, texts)
    kept = (vectors @ projection.double().T).norm() ** 2 / vectors.norm() ** 2
    assert kept > 0.5


def test_the_pq_quantiser_is_fitted_on_training_passages_and_its_runs_score_the_centroids(
    full_tk: TKBert, tmp_path: Path
) -> None:
    seen: list[str] = []
    tokenizer = CharTokenizer()
    encode = tokenizer.encode
    tokenizer.encode = lambda texts, max_length: seen.extend(texts) or encode(texts, max_length)
    vectors = fit_vectors(full_tk, tokenizer, protocol(), training_passages(protocol()), False)
    quantiser = fit_quantiser(vectors, 4)
    assert quantiser.subspaces == 4 and quantiser.dim == 32
    assert set(seen) == {protocol().texts[f"p{i}"] for i in range(9)}, "training passages only, never 'held'"
    texts = protocol().texts
    tests = {
        "t1": JudgedSet("t1", {"q1": "topic 1", "q2": "words"}, {}, {"q1": {"p0": 2.0, "held": 1.0}, "q2": {"p4": 1.0},
                                                                    "q9": {"p5": 1.0}}),
        "t2": JudgedSet("t2", {"q3": "number"}, {}, {"q3": {"p11": 1.0, "p0": 0.5}}),
    }  # fmt: skip
    other = fit_quantiser(vectors, 4, iterations=1, seed=7)
    by_index = index_runs(full_tk, tokenizer, tests, texts, tmp_path, ("float16", "int8", "pq"), quantiser,
                          {"pq-again": quantiser, "other": other}, batch_size=2, progress=False)  # fmt: skip
    runs = by_index["pq"]
    assert set(by_index) == {"float16", "int8", "pq", "pq-again", "other"}
    assert by_index["int8"].keys() == runs.keys() and by_index["int8"]["t2"]["q3"] != runs["t2"]["q3"]
    assert {name: {qid: sorted(run[qid]) for qid in run} for name, run in runs.items()} == {
        "t1": {"q1": ["held", "p0"], "q2": ["p4"]},
        "t2": {"q3": ["p0", "p11"]},
    }, "every candidate of the judged queries (q9 has no text: not judged)"
    for qid, scores in runs["t1"].items():  # the float16 index read through the same quantiser ranks as the pq index
        for pid, score in scores.items():
            assert by_index["pq-again"]["t1"][qid][pid] == pytest.approx(score, abs=1e-2)
    assert by_index["other"]["t2"]["q3"] != runs["t2"]["q3"], "another quantiser, other scores"
    index = load_index(tmp_path / "pq")
    assert index.pids == ["held", "p0", "p11", "p4"] and index.quantiser is not None
    with torch.no_grad():
        query = full_tk.encode_query(*tokenizer.encode(["number"], 30))
        vectors, mask = full_tk.encode_passages(*tokenizer.encode([texts["p11"], texts["p0"]], 200))
        centroids = vectors.clone()
        centroids[mask] = quantiser.decode(quantiser.encode(vectors[mask].numpy()))
        expected = full_tk.score_stored(*query, centroids, mask)
    torch.testing.assert_close(torch.tensor([runs["t2"]["q3"]["p11"], runs["t2"]["q3"]["p0"]]), expected)
    assert pq_name("tk-bert6") == "tk-bert6-pq"
    with pytest.raises(ValueError, match="list 'float16' among 'dtypes'"):
        index_runs(
            full_tk, tokenizer, tests, texts, tmp_path / "x", ("int8",), requantised={"o": other}, progress=False
        )
    with pytest.raises(ValueError, match="reads a float16 index, got 'int8'"):
        Requantised(load_index(tmp_path / "int8"), other)


def test_passages_outside_the_test_pools_and_the_smallest_number_of_codes_within_the_tolerance() -> None:
    outside = passages_outside(protocol(), {"p0", "p3", "p5"}, count=4)
    assert len(outside) == 4 and not {"p0", "p3", "p5"} & set(outside)
    assert set(outside) <= {f"p{i}" for i in range(9)}
    assert len(passages_outside(protocol(), {"p0", "p3", "p5"}, count=7)) == 6, "all where fewer"
    with pytest.raises(ValueError, match="no passage outside the test pools"):
        passages_outside(protocol(), {f"p{i}" for i in range(9)})
    assert smallest_within({32: 0.60, 48: 0.614, 64: 0.618, 96: 0.62}, 0.62, 0.005) == 64
    assert smallest_within({32: 0.63, 64: 0.61}, 0.62, 0.005) == 32, "above the reference is within"
    assert smallest_within({32: 0.50, 64: 0.55}, 0.62, 0.005) == 64, "none within: the best"
    with pytest.raises(ValueError, match="no number of subspaces"):
        smallest_within({}, 0.6, 0.005)
