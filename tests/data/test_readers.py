"""The strict readers: malformed input names ``<path>:<line>``; the documented tolerances hold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lib.data import (
    DataFormatError,
    iter_teacher_scores,
    read_collection,
    read_qrels,
    read_queries,
    read_run,
    read_teacher_scores,
    read_triples,
)

READERS: dict[str, Callable] = {
    "collection": read_collection,
    "queries": read_queries,
    "qrels": read_qrels,
    "run": read_run,
    "triples": read_triples,
    "teacher_scores": read_teacher_scores,
}

# (reader, file content, line of the first problem, a fragment of the message)
MALFORMED = [
    # collection: pid<TAB>text
    ("collection", "1\tfirst\n2\n", 2, "expected 2 tab-separated columns"),
    ("collection", "1\tfirst\n2\tsecond\tthird\n", 2, "got 3"),
    ("collection", "1\tfirst\n2\tsecond\n1\tagain\n", 3, "duplicate passage id '1'"),
    ("collection", "1\tfirst\n\n\n2 no tab\n", 4, "got 1"),
    ("collection", "1\tfirst\n\tno id\n", 2, "empty passage id"),
    ("collection", "1\tfirst\n2\t \n", 2, "empty passage text for id '2'"),
    ("collection", b"1\tfirst\n2\tcaf\xe9\n", 2, "not UTF-8 text (byte 0xe9 at column 6)"),
    # queries: qid<TAB>text
    ("queries", "1037798\n", 1, "expected 2 tab-separated columns"),
    ("queries", "1\tq one\n2\tq\ttwo\n", 2, "got 3"),
    ("queries", "5\twhat\n6\twhy\n5\twho\n", 3, "duplicate query id '5'"),
    ("queries", "5\twhat\n6\t\n", 2, "empty query text for id '6'"),
    ("queries", b"\xff\xfe5\twhat\n", 1, "not UTF-8 text"),
    # qrels: qid iter pid grade
    ("qrels", "1 0 a 1\n1 0 b\n", 2, "expected 4 columns"),
    ("qrels", "1 0 a 1\n1 0 b 1 extra\n", 2, "got 5"),
    ("qrels", "1 0 a 1\n1 0 b 1.5\n", 2, "grade '1.5' is not an integer"),
    ("qrels", "1 0 a high\n", 1, "grade 'high' is not an integer"),
    ("qrels", "1 0 a 1\n2 0 a 1\n1 0 a 0\n", 3, "duplicate judgment for query '1', passage 'a'"),
    # run: qid Q0 pid rank score tag
    ("run", "1 Q0 a 1 2.5 tag\n1 Q0 b 2 1.5\n", 2, "expected 6 columns"),
    ("run", "1 Q0 a 1 2.5 tag\n1 Q0 b 2 1.5 tag extra\n", 2, "got 7"),
    ("run", "1 Q0 a 1 2.5 tag\n1 Q0 b 2 high tag\n", 2, "score 'high' is not a number"),
    ("run", "1 Q0 a 1 2.5 tag\n1 Q0 b 2 nan tag\n", 2, "score 'nan' is not finite"),
    ("run", "1 Q0 a 1 -inf tag\n", 1, "score '-inf' is not finite"),
    ("qrels", b"1 0 a 1\n1 0 \xc3 1\n", 2, "not UTF-8 text"),
    ("run", "1 Q0 a 1 2.5 tag\n1 Q0 b 2.0 1.5 tag\n", 2, "rank '2.0' is not an integer"),
    ("run", "1 Q0 a 1 2.5 tag\n2 Q0 a 1 2.5 tag\n1 Q0 a 2 1.5 tag\n", 3, "duplicate entry for query '1', passage 'a'"),
    # triples: query<TAB>positive<TAB>negative
    ("triples", "q\tpos\tneg\nq\tpos\n", 2, "expected 3 tab-separated columns"),
    ("triples", "q\tpos\tneg\tmore\n", 1, "got 4"),
    ("triples", "q\tpos\tneg\nq\t \tneg\n", 2, "empty column"),
    # teacher scores: pos_score<TAB>neg_score<TAB>qid<TAB>pos_pid<TAB>neg_pid
    ("teacher_scores", "1.5\t0.5\t1\t2\t3\n1.5\t0.5\t1\t2\n", 2, "expected 5 tab-separated columns"),
    ("teacher_scores", "1.5\t0.5\t1\t2\t3\t4\n", 1, "got 6"),
    ("teacher_scores", "1.5 0.5 1 2 3\n", 1, "got 1"),
    ("teacher_scores", "1.5\t0.5\t1\t2\t3\nhigh\t0.5\t1\t2\t4\n", 2, "pos_score 'high' is not a number"),
    ("teacher_scores", "1.5\t\t1\t2\t3\n", 1, "neg_score '' is not a number"),
    ("teacher_scores", "1.5\t0.5\t1\t2\t3\n\n1.5\tnan\t1\t2\t4\n", 3, "neg_score 'nan' is not finite"),
    ("teacher_scores", "inf\t0.5\t1\t2\t3\n", 1, "pos_score 'inf' is not finite"),
    ("teacher_scores", "1.5\t0.5\t1\t \t3\n", 1, "empty id"),
    ("teacher_scores", b"1.5\t0.5\t1\t2\t\xe93\n", 1, "not UTF-8 text"),
]


@pytest.mark.parametrize(("reader", "content", "line", "fragment"), MALFORMED)
def test_malformed_input_names_file_and_line(
    reader: str, content: str | bytes, line: int, fragment: str, tmp_path: Path
) -> None:
    path = tmp_path / f"{reader}.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(DataFormatError) as caught:
        READERS[reader](path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("content", ["", "\n\n", "\ufeff", " \n\t\n\r\n"], ids=["empty", "blank", "bom", "whitespace"])
def test_empty_file_is_an_error(reader: str, content: str, tmp_path: Path) -> None:
    path = tmp_path / f"{reader}.txt"
    path.write_bytes(content.encode("utf-8"))
    with pytest.raises(DataFormatError) as caught:
        READERS[reader](path)
    assert str(caught.value) == f"{path}: empty file (no data lines)"
    assert caught.value.line is None


@pytest.mark.parametrize(
    ("reader", "lines", "expected"),
    [
        ("collection", ["7\tIt’s a passage", "8\tanother"], {"7": "It’s a passage", "8": "another"}),
        (
            "queries",
            ["1037798\twho is robert gray", "104861\twhat is x"],
            {"1037798": "who is robert gray", "104861": "what is x"},
        ),
        ("qrels", ["1 0 a 3", "1 0 b 0", "2 Q0 a 1"], {"1": {"a": 3, "b": 0}, "2": {"a": 1}}),
        (
            "run",
            ["1 Q0 a 1 2.5 t", "1 Q0 b 2 -1e-3 t", "2 Q0 a 1 7 t"],
            {"1": {"a": 2.5, "b": -0.001}, "2": {"a": 7.0}},
        ),
        ("triples", ["q one\tpos one\tneg one", "1\t2\t3"], [("q one", "pos one", "neg one"), ("1", "2", "3")]),
        (
            "teacher_scores",
            ["9.5\t-1.25\t1185869\t0\t1234", "2\t3\t1\t2\t3"],
            ([("1185869", "0", "1234"), ("1", "2", "3")], [10.75, -1.0]),
        ),
    ],
)
@pytest.mark.parametrize("variant", ["plain", "bom", "crlf", "blank-lines", "all"])
def test_documented_tolerances(reader: str, lines: list[str], expected: object, variant: str, tmp_path: Path) -> None:
    """A UTF-8 BOM is skipped, CRLF line ends are accepted, blank lines are skipped."""
    end = "\r\n" if variant in ("crlf", "all") else "\n"
    separator = end * 3 if variant in ("blank-lines", "all") else end
    body = separator.join(lines) + end
    if variant in ("blank-lines", "all"):
        body = end + body + end + "   " + end
    if variant in ("bom", "all"):
        body = "\ufeff" + body
    path = tmp_path / f"{reader}.txt"
    path.write_bytes(body.encode("utf-8"))
    assert READERS[reader](path) == expected


@pytest.mark.parametrize(
    ("reader", "content", "line"),
    [
        ("collection", "\ufeff1\ta\r\n\r\n2\r\n", 3),
        ("qrels", "\ufeff\r\n1 0 a 1\r\n1 0 b x\r\n", 3),
        ("run", "\n\n1 Q0 a 1 1 t\r\n\n1 Q0 b one 1 t\r\n", 5),
    ],
)
def test_line_numbers_count_blank_lines_after_bom_and_crlf(
    reader: str, content: str, line: int, tmp_path: Path
) -> None:
    path = tmp_path / f"{reader}.txt"
    path.write_bytes(content.encode("utf-8"))
    with pytest.raises(DataFormatError) as caught:
        READERS[reader](path)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_bom_is_not_part_of_the_first_id(tmp_path: Path) -> None:
    path = tmp_path / "queries.tsv"
    path.write_bytes("\ufeff42\tanswer\n".encode())
    assert list(read_queries(path)) == ["42"]


def test_teacher_scores_give_triples_and_margins(tmp_path: Path) -> None:
    """Hofstätter et al.'s format: margins are pos − neg in file order, duplicates kept, exponents read."""
    path = tmp_path / "bert_cat_ensemble_msmarcopassage_train_scores_ids.tsv"
    path.write_text(
        "11.81\t-4.5\t400296\t1540783\t3518497\n"
        "1e1\t2.5E0\t400296\t1540783\t3518497\n"
        "-3.0\t-3.0\t662731\t193249\t2975302\n",
        encoding="utf-8",
    )
    triples, margins = read_teacher_scores(path)
    assert triples == [("400296", "1540783", "3518497")] * 2 + [("662731", "193249", "2975302")]
    assert margins == pytest.approx([16.31, 7.5, 0.0])
    assert all(isinstance(margin, float) for margin in margins)
    rows = list(iter_teacher_scores(path))
    assert rows[0] == ("400296", "1540783", "3518497", 11.81, -4.5) and rows[1][3:] == (10.0, 2.5) and len(rows) == 3
