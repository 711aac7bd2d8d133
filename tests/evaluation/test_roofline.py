"""The roofline reading: the matmul peak, FLOPs counted per document (attention included on CPU), achieved rates."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lib.evaluation.efficiency import scoring_batches
from lib.evaluation.roofline import flops_per_document, matmul_peak_gflops, roofline_row, roofline_table
from tests.evaluation.test_speed_benchmark import file_row


class Bilinear(torch.nn.Module):
    """A scorer with known work: one [B, 8] × [8, 8] product (2·8·8 FLOPs per row) and one attention."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(20, 8)
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, query_ids, query_mask, doc_ids, doc_mask):
        query = self.embedding(query_ids).mean(1)
        doc = self.embedding(doc_ids)  # [B, Ld, 8]
        attended = F.scaled_dot_product_attention(doc[:, None], doc[:, None], doc[:, None])[:, 0]
        return ((query @ self.weight) * attended.mean(1)).sum(-1)


def test_flops_per_document_counts_products_and_cpu_attention() -> None:
    rows, doc_length = 6, 5
    query_ids = torch.randint(1, 20, (rows, 3))
    doc_ids = torch.randint(1, 20, (rows, doc_length))
    tensors = (query_ids, query_ids > 0, doc_ids, doc_ids > 0)
    flops = flops_per_document(Bilinear(), scoring_batches(tensors, batch_size=4))
    attention = 2 * 2 * doc_length * doc_length * 8  # Q·Kᵀ and weights·V, one multiply and one add each
    assert flops == pytest.approx(2 * 8 * 8 + attention)


def test_peak_and_roofline_row() -> None:
    peak = matmul_peak_gflops(torch.device("cpu"), sizes=(32, 64), repetitions=2)
    assert peak > 0
    row = roofline_row(flops_per_doc=2e9, docs_per_ms=0.5, peak_gflops=10.0)
    assert row == {"gflop_per_document": 2.0, "achieved_gflops": 1000.0, "peak_gflops": 10.0, "fraction_of_peak": 100.0}
    with pytest.raises(ValueError, match="peak_gflops"):
        roofline_row(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="sizes"):
        matmul_peak_gflops(torch.device("cpu"), sizes=(0,))


def roofline_rows() -> list[dict]:
    """TK-2 and BERT-Base with roofline fields (peak 100 GFLOP/s) and a KNRM row without them."""

    def timed(model: str, gflop: float, docs_per_ms: float) -> dict:
        achieved = gflop * docs_per_ms * 1e3
        return {**file_row(model, docs_per_ms), "gflop_per_document": gflop, "achieved_gflops": achieved,
                "peak_gflops": 100.0, "fraction_of_peak": achieved / 100.0}  # fmt: skip

    return [timed("tk2", 0.2, 0.1), timed("bert-base", 14.0, 0.004), file_row("knrm", 2.0)]


def test_the_roofline_table_keeps_the_rows_with_roofline_fields() -> None:
    table = roofline_table(roofline_rows())
    assert list(table.index) == ["TK-2", "BERT-Base"]  # rows without roofline fields are left out
    assert table.loc["TK-2", "% of peak"] == pytest.approx(20.0)
    assert table.loc["BERT-Base", "% of peak"] == pytest.approx(56.0)
    with pytest.raises(ValueError, match="roofline"):
        roofline_table([file_row("knrm", 2.0)])
