"""The TIME collection (``lib.data.time_collection``): the judgments' document numbering, strict readers, real files.

The numbering is checked the way the shared data's ``SOURCES.md`` measured it: with the judgments read as positions,
most judged documents are in a plain BM25 top 10 of their query; read as ``*TEXT`` numbers, they are not.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest

from lib.core import paths
from lib.data.readers import DataFormatError
from lib.data.time_collection import FOLDER, load_time, position_of, read_documents, read_judgments, read_queries


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="ascii")
    return path


def test_positions_skip_the_two_missing_documents() -> None:
    assert [position_of(entry) for entry in (1, 370, 375, 376, 423)] == [1, 370, 375, 378, 425]
    with pytest.raises(ValueError, match="entry"):
        position_of(0)


def test_the_readers_join_the_lines_and_name_file_and_line_of_a_problem(tmp_path: Path) -> None:
    documents, headers = read_documents(
        write(tmp_path, "TIME.ALL", "*TEXT 017 01/04/63 PAGE 020\n\nTHE ALLIES\n\nAFTER NASSAU .\n\n"
                                    "*TEXT 018 01/04/63 PAGE 021\n\nBONN .\n")
    )  # fmt: skip
    assert documents == {"1": "THE ALLIES AFTER NASSAU .", "2": "BONN ."} and headers["2"] == ("018", "01/04/63", "021")
    queries = read_queries(write(tmp_path, "TIME.QUE", "*FIND      1\n\n KENNEDY\n\n*FIND 2\nDIEM .\n"))
    assert queries == {"1": "KENNEDY", "2": "DIEM ."}
    qrels = read_judgments(write(tmp_path, "TIME.REL", "1  2 1\n\n2 2\n"), set(documents), set(queries))
    assert qrels == {"1": {"2": 1, "1": 1}, "2": {"2": 1}}
    bad = {
        "TIME.ALL": ("*TEXT 017 01/04/63 PAGE 020\nA\n*TEXT 17 X PAGE 1\nB\n", "TIME.ALL:3: malformed *TEXT header"),
        "TIME.QUE": ("KENNEDY\n*FIND 1\nA\n", "TIME.QUE:1: text before the first *FIND header"),
        "EMPTY.QUE": ("*FIND 1\n\n*FIND 2\nB\n", "EMPTY.QUE:1: *FIND 1 has no text"),
        "TWICE.ALL": ("*TEXT 017 01/04/63 PAGE 020\nA\n*TEXT 017 01/04/63 PAGE 020\nB\n", "TWICE.ALL:3: duplicate"),
    }
    for name, (text, message) in bad.items():
        reader = read_documents if name.endswith("ALL") else read_queries
        with pytest.raises(DataFormatError, match=re.escape(message)):
            reader(write(tmp_path, name, text))
    for text, message in (
        ("1 2\n\n1 x\n", ":3: expected 'qid docno"),
        ("1 9\n", ":1: query 1 judges documents ['9']"),
        ("3 1\n", ":1: judgments of query 3"),
        ("1 2\n1 1\n", ":2: query 1 judged twice"),
    ):
        with pytest.raises(DataFormatError, match=re.escape(message)):
            read_judgments(write(tmp_path, "REL", text), set(documents), set(queries))


def test_a_missing_collection_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make data"):
        load_time(tmp_path)


def bm25_ranks(documents: dict[str, str], queries: dict[str, str], judged: dict[str, dict[str, int]]) -> list[int]:
    """The BM25 rank (1-based; k1 0.9, b 0.4) of every judged document among all documents, for its query."""
    tokens = {doc: re.findall(r"[a-z0-9]+", text.lower()) for doc, text in documents.items()}
    counts = {doc: Counter(words) for doc, words in tokens.items()}
    average = statistics.mean(len(words) for words in tokens.values())
    frequency = Counter(word for words in counts.values() for word in words)

    def score(query: list[str], doc: str) -> float:
        length = len(tokens[doc])
        total = 0.0
        for word in query:
            tf = counts[doc][word]
            idf = math.log(1 + (len(documents) - frequency[word] + 0.5) / (frequency[word] + 0.5))
            total += idf * tf * 1.9 / (tf + 0.9 * (0.6 + 0.4 * length / average)) if tf else 0.0
        return total

    ranks = []
    for qid, docs in judged.items():
        query = re.findall(r"[a-z0-9]+", queries[qid].lower())
        ranking = sorted(documents, key=lambda doc: -score(query, doc))
        ranks += [ranking.index(doc) + 1 for doc in docs if doc in documents]
    return ranks


@pytest.fixture(scope="module")
def time_collection(converted: Path):
    folder = paths.raw_dir() / FOLDER
    if not (folder / "TIME.ALL").is_file():
        pytest.fail(f"{folder}: the registry's TIME files were not fetched by `make data`")
    return load_time()


def test_the_real_collection_has_the_measured_counts_and_lengths(time_collection) -> None:
    lengths = [len(text.split()) for text in time_collection.documents.values()]
    assert (len(lengths), round(statistics.mean(lengths)), statistics.median(lengths), max(lengths)) == (
        423, 624, 484, 5408)  # fmt: skip
    assert sum(length > 512 for length in lengths) == 198
    assert len(time_collection.queries) == 83 and sum(map(len, time_collection.qrels.values())) == 324
    assert not {"376", "377"} & set(time_collection.documents) and {"375", "378", "425"} <= set(
        time_collection.documents
    )


def test_the_judgments_are_positions_not_text_numbers(time_collection) -> None:
    ranks = bm25_ranks(time_collection.documents, time_collection.queries, time_collection.qrels)
    assert len(ranks) == 324
    assert sum(rank <= 10 for rank in ranks) / len(ranks) > 0.7 and statistics.median(ranks) <= 7
    by_text_number = {
        time_collection.headers[doc][0].lstrip("0"): text for doc, text in time_collection.documents.items()
    }
    misread = bm25_ranks(by_text_number, time_collection.queries, time_collection.qrels)
    assert len(misread) < 324 and sum(rank <= 10 for rank in misread) / len(misread) < 0.2
