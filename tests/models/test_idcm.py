"""IDCM (``lib.models.idcm``): the "ck" student, the cascade against BERT-cat by hand, ``k``, the distillation loss."""

from __future__ import annotations

import math

import pytest
import torch

from lib.models.idcm import (
    AGGREGATION_LR,
    IDCM,
    CKStudent,
    IDCMConfig,
    IDCMSweep,
    lambda_loss_distillation,
    teacher_gains,
)
from lib.models.tk import OTHER_LR
from tests.models.helpers import long_batch, pad, tiny_bert_cat

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Windows of 4 pieces with 1 of context on each side: 6 pieces, small enough for the tiny BERT.
SMALL = IDCMConfig(chunk_size=4, overlap=1, select_k=2)


def tiny_idcm(config: IDCMConfig = SMALL) -> IDCM:
    model = IDCM(tiny_bert_cat(), config)
    torch.manual_seed(2)
    with torch.no_grad():  # weights that tell windows apart, and unequal aggregation weights
        model.student.dense.weight.normal_()
        model.aggregation.copy_(torch.tensor([1.0, 0.5, 0.25]))
    return model.eval()


def window_by_hand(doc: torch.Tensor, length: int, number: int) -> torch.Tensor:
    """Window ``number`` of a document (chunk 4, overlap 1): pieces ``4j − 1 .. 4j + 4``, 0 outside the document."""
    return torch.tensor([[int(doc[i]) if 0 <= i < length else 0 for i in range(4 * number - 1, 4 * number + 5)]])


def by_hand(model: IDCM, batch, lengths: list[int]) -> list[tuple[list[float], list[float]]]:
    """Per document: the student's and BERT-cat's score of every window, each window scored alone."""
    q_ids, q_mask, d_ids, _ = batch
    out = []
    for row, length in enumerate(lengths):
        windows = [window_by_hand(d_ids[row], length, j) for j in range(max(1, math.ceil(length / 4)))]
        query = (q_ids[row, None], q_mask[row, None])
        out.append(
            ([float(model.student(*query, w, w != 0)) for w in windows],
             [float(model.bert_cat(*query, w, w != 0)) for w in windows])
        )  # fmt: skip
    return out


def aggregate_by_hand(scores: list[float], weights: list[float]) -> float:
    return sum(w * s for w, s in zip(weights, sorted(scores, reverse=True)[:3], strict=False))


LENGTHS = [30, 7, 13]


def test_every_window_is_the_full_cascade_by_hand() -> None:
    model = tiny_idcm()
    batch = long_batch([3, 5, 2], LENGTHS)
    with torch.no_grad():
        hand = by_hand(model, batch, LENGTHS)
        model.select_k = None
        full = model.cascade(*batch)
        model.select_k = 8  # as many as the longest document's windows
        all_k = model.cascade(*batch)
    expected = torch.tensor([aggregate_by_hand(bert, [1.0, 0.5, 0.25]) for _, bert in hand])
    assert torch.allclose(full.scores, expected, atol=1e-5) and torch.allclose(all_k.scores, expected, atol=1e-5)
    assert full.student is None and torch.equal(full.selected, full.valid)
    assert full.valid.sum(dim=1).tolist() == [8, 2, 4]
    for row, (student, bert) in enumerate(hand):
        assert torch.allclose(all_k.student[row, : len(student)], torch.tensor(student), atol=1e-5)
        assert torch.allclose(full.bert[row, : len(bert)], torch.tensor(bert), atol=1e-5)


def test_bert_cat_scores_exactly_the_students_top_k() -> None:
    model = tiny_idcm()
    batch = long_batch([3, 5, 2], LENGTHS)
    rows = []
    model.bert_cat.register_forward_hook(lambda module, inputs, output: rows.append(inputs[0].shape[0]))
    with torch.no_grad():
        hand = by_hand(model, batch, LENGTHS)
        rows.clear()
        model.select_k = 1
        one = model.cascade(*batch)
        assert rows == [3]  # one BERT-cat call, one window per document
        model.select_k = 3
        three = model.cascade(*batch)
    for out, k in [(one, 1), (three, 3)]:
        assert out.selected.sum(dim=1).tolist() == [min(k, n) for n in [8, 2, 4]]
        for row, (student, bert) in enumerate(hand):
            chosen = sorted(range(len(student)), key=lambda j: -student[j])[:k]
            assert sorted(out.selected[row].nonzero().flatten().tolist()) == sorted(chosen)
            assert math.isclose(float(out.scores[row]), aggregate_by_hand([bert[j] for j in chosen], [1.0, 0.5, 0.25]),
                                abs_tol=1e-5)  # fmt: skip
        assert torch.isinf(out.bert[~out.selected]).all() and torch.isfinite(out.bert[out.selected]).all()


def test_changing_k_changes_the_selection_not_the_parameters() -> None:
    model = tiny_idcm()
    batch = long_batch([3, 5, 2], LENGTHS)
    before = {name: value.clone() for name, value in model.state_dict().items()}
    with torch.no_grad():
        selections = []
        for k in (1, 2, 4):
            model.select_k = k
            selections.append(model.cascade(*batch).selected)
    assert not torch.equal(selections[0], selections[1]) and not torch.equal(selections[1], selections[2])
    assert all(torch.equal(before[name], value) for name, value in model.state_dict().items())
    assert set(before) == set(model.state_dict())
    for wrong in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="select_k"):
            model.select_k = wrong


def test_one_sweep_gives_the_cascade_at_every_k() -> None:
    model = tiny_idcm()
    batch = long_batch([3, 5, 2], LENGTHS)
    ks = [1, 2, 4, None]
    rows = []
    model.bert_cat.register_forward_hook(lambda module, inputs, output: rows.append(inputs[0].shape[0]))
    with torch.no_grad():
        swept = IDCMSweep(model, ks)(*batch)
        assert rows == [8 + 2 + 4]  # one BERT-cat call over every window
        for column, k in enumerate(ks):
            model.select_k = k
            assert torch.allclose(swept[:, column], model.cascade(*batch).scores, atol=1e-5)
    assert swept.shape == (3, 4)
    rows.clear()
    with torch.no_grad():
        few = IDCMSweep(model, [1, 3])(*batch)
    assert rows == [3 + 2 + 3]  # without "every window", BERT-cat reads the student's top 3 only
    for column, k in enumerate([1, 3]):
        model.select_k = k
        assert torch.allclose(few[:, column], model.cascade(*batch).scores, atol=1e-5)
    with pytest.raises(ValueError, match="select_k"):
        IDCMSweep(model, [0])


def test_scores_ignore_padding_and_the_rest_of_the_batch() -> None:
    model = tiny_idcm()
    lengths = ([3, 5, 2], LENGTHS)
    with torch.no_grad():
        plain = model(*long_batch(*lengths))
        padded = model(*long_batch(*lengths, extra=9))
        q_ids, q_mask, d_ids, d_mask = long_batch(*lengths)
        alone = torch.cat([model(q_ids[i, None], q_mask[i, None], d_ids[i, None], d_mask[i, None]) for i in range(3)])
    assert torch.allclose(plain, padded, atol=1e-5) and torch.allclose(plain, alone, atol=1e-5)


def test_the_authors_defaults_on_a_long_document() -> None:
    model = IDCM(tiny_bert_cat(max_position=128)).eval()
    assert (model.config.chunk_size, model.config.overlap, model.select_k, model.config.aggregate_top) == (50, 7, 4, 3)
    batch = long_batch([6, 4], [430, 120])
    with torch.no_grad():
        out = model.cascade(*batch)
    assert out.valid.sum(dim=1).tolist() == [9, 3] and out.selected.sum(dim=1).tolist() == [4, 3]
    windows = model.windows(batch[2], batch[3])
    assert windows.ids.shape[1] == 64 and windows.mask[0, :7].sum() == 0 and windows.mask[1].all()
    with pytest.raises(ValueError, match="must fit"):
        IDCM(tiny_bert_cat(max_position=64))


def ck_by_hand(student: CKStudent, query: list[int], doc: list[int]) -> float:
    """The authors' "ck" formula for one pair, written out with plain tensor operations."""

    def vectors(ids: list[int]) -> torch.Tensor:
        embedded = student.embedding.weight[torch.tensor(ids)].T.unsqueeze(0)
        convolved = torch.relu(student.conv(torch.nn.functional.pad(embedded, (0, 2))))[0].T
        return convolved / convolved.norm(dim=-1, keepdim=True)

    cosine = vectors(query) @ vectors(doc).T
    mus = torch.tensor([1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9])
    kernels = torch.exp(-((cosine[..., None] - mus) ** 2) / (2 * 0.1**2)).sum(dim=1)
    features = torch.log((kernels * student.kernel_scale).clamp(min=1e-4)).sum(dim=0)
    return float(student.dense(features))


def test_the_student_is_the_authors_ck_formula() -> None:
    torch.manual_seed(3)
    student = CKStudent(torch.randn(50, 8))
    with torch.no_grad():
        student.kernel_scale.uniform_(0.5, 2.0)
        student.dense.weight.normal_()
        query, doc = [3, 7, 9], [4, 9, 3, 7, 12, 30, 2]
        expected = ck_by_hand(student, query, doc)
        q_ids, q_mask = pad([query, [5]], 6)
        d_ids, d_mask = pad([doc, [1, 2]], 11)
        scores = student(q_ids, q_mask, d_ids, d_mask)
    assert math.isclose(float(scores[0]), expected, rel_tol=1e-4, abs_tol=1e-5)
    assert student.conv.out_channels == 8 and not student.embedding.weight.requires_grad


def test_the_students_embeddings_are_a_copy_of_berts() -> None:
    model = tiny_idcm()
    bert_matrix = model.bert_cat.bert.embeddings.word_embeddings.weight
    assert torch.equal(model.student.embedding.weight, bert_matrix)
    assert model.student.embedding.weight.data_ptr() != bert_matrix.data_ptr()
    with torch.no_grad():
        bert_matrix.add_(1.0)
    assert not torch.equal(model.student.embedding.weight, bert_matrix)
    model.refresh_student_embeddings()
    assert torch.equal(model.student.embedding.weight, bert_matrix)


def test_optimizer_groups_cover_the_trainable_parameters_once() -> None:
    model = tiny_idcm()
    groups = model.optimizer_groups()
    assert [(g["name"], g["lr"]) for g in groups] == [
        ("bert", model.bert_cat.bert_lr), ("head", model.bert_cat.head_lr),
        ("aggregation", AGGREGATION_LR), ("student", OTHER_LR),
    ]  # fmt: skip
    grouped = [id(p) for g in groups for p in g["params"]]
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert len(grouped) == len(set(grouped)) and set(grouped) == trainable
    assert id(model.student.embedding.weight) not in trainable
    unfrozen = IDCM(tiny_bert_cat(), IDCMConfig(chunk_size=4, overlap=1, freeze_student_embeddings=False))
    student_group = unfrozen.optimizer_groups(student_lr=1e-4)[-1]
    assert student_group["lr"] == 1e-4 and any(p is unfrozen.student.embedding.weight for p in student_group["params"])


def authors_lambda_loss(student: torch.Tensor, teacher: torch.Tensor, mask: torch.Tensor, top_n: int) -> torch.Tensor:
    """The authors' gains (``sigir21_idcm.py``) and LambdaLoss, ``ndcgLoss2_scheme`` (``lambdarank.py``)."""
    sorter = teacher.masked_fill(~mask, -9000.0)
    indices = sorter.sort(descending=True, dim=-1).indices
    gains = torch.zeros_like(teacher)
    for i in range(top_n):
        gains.scatter_(1, indices[:, i : i + 1], float(top_n - i))
    gains[~mask] = -9000.0
    y_pred, y_true = student.masked_fill(~mask, -9000.0).clone(), gains.clone()
    padded = y_true == -9000.0
    y_pred[padded], y_true[padded] = float("-inf"), float("-inf")
    y_pred_sorted, indices_pred = y_pred.sort(descending=True, dim=-1)
    y_true_sorted, _ = y_true.sort(descending=True, dim=-1)
    true_sorted_by_preds = torch.gather(y_true, dim=1, index=indices_pred)
    true_diffs = true_sorted_by_preds[:, :, None] - true_sorted_by_preds[:, None, :]
    pairs = torch.isfinite(true_diffs) & (true_diffs > 0)
    true_sorted_by_preds, y_true_sorted = true_sorted_by_preds.clamp(min=0.0), y_true_sorted.clamp(min=0.0)
    n = y_pred.shape[1]
    discounts = torch.log2(1.0 + torch.arange(1, n + 1).float())[None, :]
    max_dcgs = ((torch.pow(2, y_true_sorted) - 1) / discounts).sum(dim=-1).clamp(min=1e-6)
    big_g = (torch.pow(2, true_sorted_by_preds) - 1) / max_dcgs[:, None]
    positions = torch.arange(1, n + 1)
    delta = (positions[:, None] - positions[None, :]).abs()
    deltas = (torch.pow(discounts[0, delta - 1].abs(), -1.0) - torch.pow(discounts[0, delta].abs(), -1.0)).abs()
    deltas.diagonal().zero_()
    weights = deltas[None] * (big_g[:, :, None] - big_g[:, None, :]).abs()
    diffs = (y_pred_sorted[:, :, None] - y_pred_sorted[:, None, :]).clamp(min=-1e4, max=1e4)
    diffs[torch.isnan(diffs)] = 0.0
    probabilities = (torch.sigmoid(diffs).clamp(min=1e-6) ** weights).clamp(min=1e-6)
    return -torch.log2(probabilities)[pairs].sum()


def window_scores(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    student, teacher = torch.randn(4, 7, generator=generator), torch.randn(4, 7, generator=generator)
    mask = torch.arange(7)[None, :] < torch.tensor([[7], [2], [5], [1]])
    return student, teacher, mask


@pytest.mark.parametrize("top_n", [1, 3])
def test_the_loss_is_the_authors_lambda_loss(top_n: int) -> None:
    for seed in range(3):
        student, teacher, mask = window_scores(seed)
        expected = authors_lambda_loss(student, teacher, mask, top_n)
        assert torch.allclose(lambda_loss_distillation(student, teacher, mask, top_n), expected, rtol=1e-5, atol=1e-6)
    assert teacher_gains(
        torch.tensor([[0.1, 0.9, 0.5, 0.7]]), torch.tensor([[True, True, False, True]]), 2
    ).tolist() == [[0.0, 2.0, 0.0, 1.0]]


def test_the_loss_vanishes_as_the_student_agrees_and_trains_the_student_only() -> None:
    _, teacher, mask = window_scores(5)
    ranks = teacher.argsort(dim=1).argsort(dim=1).float()  # the teacher's order, one apart
    losses = [float(lambda_loss_distillation(scale * ranks, teacher, mask)) for scale in (-1.0, 1.0, 10.0, 100.0)]
    assert losses[0] > losses[1] > losses[2] > losses[3] >= 0.0 and losses[3] < 1e-6
    student = torch.randn(4, 7, requires_grad=True)
    teacher = teacher.clone().requires_grad_(True)
    padded = student.detach().clone()
    padded[~mask] = 1e3  # what lies outside the mask is ignored
    assert torch.allclose(
        lambda_loss_distillation(padded, teacher, mask), lambda_loss_distillation(student, teacher, mask)
    )
    lambda_loss_distillation(student, teacher, mask).backward()
    assert teacher.grad is None and student.grad is not None and student.grad[mask].abs().sum() > 0
    assert (student.grad[~mask] == 0).all()


def test_distillation_trains_the_student_from_bert_cat_alone() -> None:
    model = tiny_idcm().train()
    batch = long_batch([3, 5, 2], LENGTHS)
    student, teacher, mask = model.distillation_scores(*batch)
    assert model.training and model.bert_cat.training  # the teacher ran without dropout, the mode came back
    with torch.no_grad():
        model.select_k = None
        full = model.eval().cascade(*batch)
    assert torch.allclose(teacher, full.bert) and not teacher.requires_grad and torch.equal(mask, full.valid)
    lambda_loss_distillation(student, teacher, mask).backward()
    assert all(p.grad is None for p in model.bert_cat.parameters()) and model.aggregation.grad is None
    assert model.student.conv.weight.grad.abs().sum() > 0 and model.student.dense.weight.grad.abs().sum() > 0


def test_every_window_trains_bert_cat_and_the_aggregation() -> None:
    model = tiny_idcm().train()
    model.select_k = None
    scores = model(*long_batch([3, 5], [30, 7]))
    (scores[0] - scores[1]).backward()
    assert model.aggregation.grad is not None and model.bert_cat.score.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.student.parameters())
