"""Convert the fetched registry files into the standard MS MARCO / TREC formats.

Outputs (under :func:`lib.core.paths.converted_dir` of the ``book`` profile, ``<data>/converted``), the
same formats as the official MS MARCO files so that everything downstream reads only these:

- ``collection.tsv``      ``pid<TAB>text``, the MS MARCO **v1** passages of DL19 + DL20 (29,963);
- ``collection.v2.tsv``   ``pid<TAB>text``, the MS MARCO **v2** passages of DL21 (10,553);
- ``queries.<set>.tsv``   ``qid<TAB>text`` for ``dl19``, ``dl20``, ``dl21`` (judged queries only)
  and ``dev-small`` (all 6,980);
- ``qrels.<set>.txt``     TREC qrels ``qid 0 pid grade``, every judgment (also those without text);
- ``runs/<set>__<retriever>.trec``  the shipped first-stage candidates as TREC runs (depth 100), and
  ``runs/dl19__bm25-tilde-top1000.trec``, the TILDE paper's own BM25 top-1000 (ids only);
- ``manifest.json``       the sha256 of every output, for checks and for the build's change detection.

Text normalisation (once, before merging): ``ftfy.fix_text`` repairs MS MARCO's mojibake
(``â\\x80\\x99`` for ``’``; by ftfy's default, curly quotes then become straight ones), then every
run of whitespace (tabs and newlines included) becomes one space. For a v1 passage the NOS-IRv3
copy, whose encoding was repaired by hand, is preferred; the rank_llm_data copies fill in the rest,
taken in a fixed retriever order so the output is deterministic. Every file is written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from pathlib import Path

import ftfy

from lib.core import paths
from lib.core.atomic import atomic_write, write_json
from lib.data.registry import REGISTRY, fetch, sha256_of

RANK_LLM = "castorini/rank_llm_data/retrieve_results"
ANSERINI = "castorini/anserini-tools"
NOS_COLLECTION = "JLNuijens/NOS-IRv3/data/collection.tsv"
TILDE_RUN = "ielab/TILDE/data/runs/run.trec2019-bm25.res"

#: rank_llm_data retriever folder -> the book's system name (fixed order = text-merge priority).
RETRIEVERS: dict[str, str] = {
    "BM25": "bm25",
    "BM25_RM3": "bm25-rm3",
    "SPLADE_P_P_ENSEMBLE_DISTIL": "splade-pp-ed",
    "D_BERT_KD_TASB": "tas-b",
    "OPEN_AI_ADA2": "openai-ada2",
    "REP_LLAMA": "repllama",
}

#: query set -> (topics file, qrels file, corpus version)
QUERY_SETS: dict[str, tuple[str, str, str]] = {
    "dl19": (f"{ANSERINI}/topics/topics.dl19-passage.txt", f"{ANSERINI}/qrels/qrels.dl19-passage.txt", "v1"),
    "dl20": (f"{ANSERINI}/topics/topics.dl20.txt", f"{ANSERINI}/qrels/qrels.dl20-passage.txt", "v1"),
    "dl21": (f"{ANSERINI}/topics/topics.dl21.txt", f"{ANSERINI}/qrels/qrels.dl21-passage.txt", "v2"),
    "dev-small": (
        f"{ANSERINI}/topics/topics.msmarco-passage.dev-subset.txt",
        f"{ANSERINI}/qrels/qrels.msmarco-passage.dev-subset.txt",
        "v1",
    ),
}

#: The first-stage depth of the converted runs. The REP_LLAMA file holds 200 hits per query: its
#: runs are cut to 100 like the others, its deeper passages still enter the collection.
RUN_DEPTH = 100


def normalise_text(text: str) -> str:
    """Repair mojibake with ftfy and collapse whitespace (tabs/newlines would break the TSV format)."""
    return " ".join(ftfy.fix_text(text).split())


def _candidate_files(raw: Path) -> Iterable[tuple[str, str, Path]]:
    """(query set, system, path) for every shipped rank_llm_data file, in the fixed retriever order."""
    for folder, system in RETRIEVERS.items():
        for query_set in ("dl19", "dl20", "dl21"):
            name = f"{RANK_LLM}/{folder}/retrieve_results_{query_set}_top100.json"
            if name in REGISTRY:
                yield query_set, system, raw / name


def _load_hits(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None


def _write_tsv(path: Path, rows: Iterable[tuple[str, str]]) -> None:
    with atomic_write(path) as handle:
        for key, text in rows:
            handle.write(f"{key}\t{text}\n")


def _pid_key(pid: str) -> tuple[int, str]:
    """Numeric order for v1 ids, lexical for v2 ids (``msmarco_passage_08_…``)."""
    return (int(pid), "") if pid.isdigit() else (-1, pid)


def _read_topics(path: Path) -> dict[str, str]:
    topics: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise ValueError(f"{path}:{number}: expected 'qid<TAB>text'")
            topics[fields[0]] = normalise_text(fields[1])
    return topics


def _read_raw_qrels(path: Path) -> list[tuple[str, str, str, int]]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if len(fields) != 4:
                raise ValueError(f"{path}:{number}: expected 'qid iter pid grade'")
            rows.append((fields[0], fields[1], fields[2], int(fields[3])))
    return rows


def convert(raw: str | os.PathLike | None = None, out: str | os.PathLike | None = None) -> dict[str, str]:
    """Convert the fetched files in ``raw`` into the standard formats in ``out``.

    Returns the manifest ``{relative output path: sha256}``, also written to ``manifest.json``.
    """
    raw = Path(raw or paths.raw_dir())
    out = Path(out or paths.converted_dir("book"))
    (out / "runs").mkdir(parents=True, exist_ok=True)
    outputs: list[Path] = []

    texts: dict[str, dict[str, str]] = {"v1": {}, "v2": {}}
    with open(raw / NOS_COLLECTION, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t", 1)
            if len(fields) != 2:
                raise ValueError(f"{raw / NOS_COLLECTION}:{number}: expected 'pid<TAB>text'")
            texts["v1"][fields[0]] = normalise_text(fields[1])

    for query_set, system, path in _candidate_files(raw):
        corpus = QUERY_SETS[query_set][2]
        entries = _load_hits(path)
        lines = []
        for entry in entries:
            hits = sorted(entry["hits"], key=lambda hit: int(hit["rank"]))
            for hit in hits:
                if str(hit["docid"]) not in texts[corpus]:
                    texts[corpus][str(hit["docid"])] = normalise_text(hit["content"])
            for hit in hits[:RUN_DEPTH]:
                pid = str(hit["docid"])
                lines.append(f"{hit['qid']} Q0 {pid} {hit['rank']} {hit['score']!r} {system}\n")
        target = out / "runs" / f"{query_set}__{system}.trec"
        with atomic_write(target) as handle:
            handle.writelines(lines)
        outputs.append(target)

    tilde_target = out / "runs" / "dl19__bm25-tilde-top1000.trec"
    with open(raw / TILDE_RUN, encoding="utf-8") as source, atomic_write(tilde_target) as handle:
        handle.writelines(line if line.endswith("\n") else line + "\n" for line in source if line.strip())
    outputs.append(tilde_target)

    for corpus, name in (("v1", "collection.tsv"), ("v2", "collection.v2.tsv")):
        _write_tsv(out / name, sorted(texts[corpus].items(), key=lambda item: _pid_key(item[0])))
        outputs.append(out / name)

    for query_set, (topics_name, qrels_name, _corpus) in QUERY_SETS.items():
        qrels = _read_raw_qrels(raw / qrels_name)
        judged = {qid for qid, _, _, _ in qrels}
        topics = _read_topics(raw / topics_name)
        missing = judged - topics.keys()
        if missing:
            raise ValueError(f"{raw / topics_name}: no text for judged queries {sorted(missing)[:5]}")
        _write_tsv(out / f"queries.{query_set}.tsv", sorted(((q, topics[q]) for q in judged), key=lambda r: int(r[0])))
        with atomic_write(out / f"qrels.{query_set}.txt") as handle:
            for qid, _iteration, pid, grade in sorted(qrels, key=lambda r: (int(r[0]), _pid_key(r[2]))):
                handle.write(f"{qid} 0 {pid} {grade}\n")
        outputs += [out / f"queries.{query_set}.tsv", out / f"qrels.{query_set}.txt"]

    manifest = {str(path.relative_to(out)): sha256_of(path) for path in sorted(outputs)}
    write_json(out / "manifest.json", manifest)
    return manifest


def prepare(raw: str | os.PathLike | None = None, out: str | os.PathLike | None = None) -> Path:
    """Fetch every registry file (mirror or download, hash-checked) and convert; returns ``out``.

    Conversion is skipped when ``manifest.json`` exists and every file it lists still has its hash.
    """
    raw = Path(raw or paths.raw_dir())
    out = Path(out or paths.converted_dir("book"))
    for name in sorted(REGISTRY):
        fetch(name, raw)
    manifest_path = out / "manifest.json"
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if all((out / name).is_file() and sha256_of(out / name) == digest for name, digest in manifest.items()):
            return out
    convert(raw, out)
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m lib.data.convert``: fetch, check and convert the book's data."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--raw", default=None, help="folder for the fetched files (default: data/raw)")
    parser.add_argument("--out", default=None, help="folder for the converted files (default: data/converted)")
    args = parser.parse_args(argv)
    out = prepare(args.raw, args.out)
    print(f"data ready in {out}")


if __name__ == "__main__":
    main()
