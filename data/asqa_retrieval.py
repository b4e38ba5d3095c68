"""ASQA questions as a BEIR-style retrieval benchmark over a passage corpus (``disambig data asqa-retrieval``).

A question's relevant passages are the corpus passages whose text is one of its annotators' evidence passages
(``annotations[].knowledge[].content``), compared after whitespace normalisation; every passage carrying that text
is relevant (grade 1), since the slice holds a few texts under two ids. The folder holds ``queries.jsonl``,
``qrels/SPLIT.tsv`` and ``manifest.json``, and names its corpus in the manifest instead of copying it: the corpus
is third-party data, and searching it by name reuses the indexes already built for it (``default_corpus``).

Each split (by question hash, ``disambig.data.splits``) takes its first ``limit`` questions in file order that
have at least one evidence passage in the corpus. Questions without one are skipped and counted, and so are
evidence texts the corpus lacks, so the manifest says what the judgments leave out.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from disambig.data.benchmark_folder import check_replaceable
from disambig.data.corpus import FOLDER_MANIFEST, load_corpus
from disambig.data.jsonl import MalformedRowError, read_jsonl, require
from disambig.data.loaders import question_file, row_format
from disambig.data.root import CORPORA, QUESTION_SETS, resolve
from disambig.data.splits import BOUNDS, split_of
from disambig.errors import ConfigurationError
from disambig.paths import expanded

FORMAT = "asqa-retrieval"
FORMAT_VERSION = 1
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"


@dataclass(frozen=True)
class SplitCounts:
    """What building one split read, took and left out; ``evidence_*`` count distinct texts per question."""

    questions_read: int
    taken: int
    skipped_no_evidence: int
    skipped_evidence_not_in_corpus: int
    evidence_matched: int
    evidence_not_in_corpus: int
    mean_relevant: float


@dataclass(frozen=True)
class JudgedSplit:
    """The questions one split keeps, as ``(id, question)``, their judgments and the counts."""

    queries: list[tuple[str, str]]
    qrels: dict[str, list[str]]
    counts: SplitCounts


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces, ends trimmed: how evidence is compared with passage text."""
    return " ".join(str(text).split())


def passage_ids_by_text(passages: Iterable[dict[str, str]]) -> dict[str, list[str]]:
    """``{normalised text: [passage ids]}`` in corpus order."""
    index: dict[str, list[str]] = {}
    for passage in passages:
        index.setdefault(normalise(passage["text"]), []).append(passage["id"])
    return index


def evidence_texts(row: dict[str, Any], where: str) -> list[str]:
    """The distinct normalised evidence texts of one ASQA row, in order (empty when annotators gave none)."""
    try:
        contents = [k["content"] for a in row.get("annotations") or [] for k in a.get("knowledge") or []]
    except (KeyError, TypeError, AttributeError) as exc:
        raise MalformedRowError(f"{where}: unexpected annotations/knowledge structure "
                                f"({type(exc).__name__}: {exc}); expected [{{knowledge: [{{content}}]}}]") from None
    return list(dict.fromkeys(text for text in map(normalise, contents) if text))


def read_asqa_rows(dataset: str) -> tuple[Path, list[tuple[str, dict[str, Any]]]]:
    """The file ``dataset`` names and its rows with their ``file:line``; every row must be in ASQA format.

    Raises:
        ConfigurationError: a row in another format (AmbigNQ, count questions) or without ``id``/``question``.
    """
    path = question_file(resolve(dataset, QUESTION_SETS, "dataset", "an ASQA-format JSONL file"))
    rows = []
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        found = row_format(row, where)
        if found != "asqa":
            raise ConfigurationError(f"{where}: row in {found} format; asqa-retrieval needs ASQA rows (qa_pairs and "
                                     "annotations[].knowledge[].content), e.g. --dataset asqa")
        require(row, ("id", "question"), where)
        rows.append((where, row))
    if not rows:
        raise ConfigurationError(f"{path}: no rows; pass an ASQA-format JSONL file")
    return path, rows


def judge_split(rows: list[tuple[str, dict[str, Any]]], split: str, index: dict[str, list[str]],
                limit: int) -> JudgedSplit:
    """The first ``limit`` questions of ``split`` (in ``rows`` order) with evidence in the corpus ``index``."""
    queries: list[tuple[str, str]] = []
    qrels: dict[str, list[str]] = {}
    read = no_evidence = unmatched = matched_texts = missing_texts = 0
    for where, row in rows:
        if len(queries) == limit:
            break
        if split_of(row["question"]) != split:
            continue
        read += 1
        texts = evidence_texts(row, where)
        ids = list(dict.fromkeys(pid for text in texts for pid in index.get(text, [])))
        found = sum(text in index for text in texts)
        matched_texts, missing_texts = matched_texts + found, missing_texts + len(texts) - found
        if not texts:
            no_evidence += 1
        elif not ids:
            unmatched += 1
        else:
            qid = str(row["id"])
            if qid in qrels:
                raise MalformedRowError(f"{where}: question id {qid!r} appears twice; ids must be unique")
            queries.append((qid, str(row["question"])))
            qrels[qid] = ids
    mean = round(sum(map(len, qrels.values())) / len(qrels), 3) if qrels else 0.0
    return JudgedSplit(queries, qrels, SplitCounts(read, len(queries), no_evidence, unmatched, matched_texts,
                                                   missing_texts, mean))


def parse_splits(values: Iterable[str]) -> list[str]:
    """Split names from repeated and/or comma-separated values, in order, without repeats.

    Raises:
        ValueError: an unknown name, or none given.
    """
    names = list(dict.fromkeys(part.strip() for value in values for part in value.split(",") if part.strip()))
    unknown = [name for name in names if name not in BOUNDS]
    if unknown or not names:
        problem = f"unknown split {unknown[0]!r}" if unknown else "no split given"
        raise ValueError(f"{problem}; choose among {', '.join(BOUNDS)} (repeat --splits or separate by commas)")
    return names


def build_asqa_retrieval(dataset: str, corpus: str, out: Path, splits: Iterable[str] = ("train", "dev"),
                         limit: int = 50, command: str = "") -> dict[str, Any]:
    """Write the BEIR-style folder ``out`` for ``dataset``'s questions over ``corpus``; return its manifest.

    Args:
        dataset: ``asqa`` (under the data root) or an ASQA-format JSONL file.
        corpus: the corpus name (``wiki-slice``) or JSONL file the folder names and its queries are judged on.
        out: the folder; a folder this function wrote before is replaced whole, any other must be new or empty.
        splits: ``train``, ``dev``, ``test`` (by question hash); one ``qrels/SPLIT.tsv`` each.
        limit: questions per split.
        command: the command line, recorded in the manifest.

    Raises:
        ConfigurationError: rows not in ASQA format, a split without any question whose evidence is in the
            corpus, or an ``out`` holding other files. Nothing is written then.
    """
    names, out = parse_splits(splits), expanded(out)
    if limit < 1:
        raise ValueError(f"limit={limit} must be at least 1 (questions per split)")
    check_replaceable(out, FORMAT, "disambig data asqa-retrieval")
    path, rows = read_asqa_rows(dataset)
    passages = load_corpus(corpus)
    index = passage_ids_by_text(passages)
    judged = {name: judge_split(rows, name, index, limit) for name in names}
    repeated = repeated_ids(judged)
    if repeated:
        raise ConfigurationError(f"question id {repeated!r} of {path} is taken in two splits (two questions share "
                                 "it); give every row its own id")
    empty = [name for name, split in judged.items() if not split.queries]
    if empty:
        counts = judged[empty[0]].counts
        raise ConfigurationError(
            f"split {empty[0]!r} of {path} has no question with an evidence passage in corpus {corpus!r} (read "
            f"{counts.questions_read}: {counts.skipped_no_evidence} without evidence, "
            f"{counts.skipped_evidence_not_in_corpus} whose evidence the corpus lacks); check that the corpus holds "
            "the dataset's evidence passages, or drop that split from --splits")
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "dataset": dataset, "dataset_file": str(path.resolve()),
        "corpus": corpus_reference(corpus), "corpus_passages": len(passages), "splits": names, "limit": limit,
        "relevance": "a passage whose whitespace-normalised text equals one of the question's "
                     "annotations[].knowledge[].content; grade 1",
        "per_split": {name: asdict(split.counts) for name, split in judged.items()},
        "command": command,
    }
    write_folder(out, judged, manifest)
    return manifest


def repeated_ids(judged: dict[str, JudgedSplit]) -> str | None:
    """A query id taken by more than one split, else None (queries.jsonl holds each id once)."""
    seen: set[str] = set()
    for split in judged.values():
        for qid, _ in split.queries:
            if qid in seen:
                return qid
            seen.add(qid)
    return None


def corpus_reference(corpus: str) -> str:
    """How the manifest names the corpus: a named corpus by name, a file by its absolute path."""
    return corpus if corpus in CORPORA else str(expanded(corpus).resolve())


def write_folder(out: Path, judged: dict[str, JudgedSplit], manifest: dict[str, Any]) -> None:
    """Write the folder in a temporary sibling, then swap it in: a failed write leaves ``out`` as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        (tmp / "qrels").mkdir()
        queries = [query for split in judged.values() for query in split.queries]
        (tmp / "queries.jsonl").write_text("".join(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n"
                                                   for qid, text in queries), encoding="utf-8")
        for name, split in judged.items():
            lines = [f"{qid}\t{pid}\t1\n" for qid, ids in split.qrels.items() for pid in ids]
            (tmp / "qrels" / f"{name}.tsv").write_text(QRELS_HEADER + "".join(lines), encoding="utf-8")
        (tmp / FOLDER_MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def swap_in(new: Path, out: Path) -> None:
    """Put folder ``new`` at ``out``, removing what was there (``check_replaceable`` allowed it)."""
    if not out.exists():
        new.rename(out)
        return
    old = new.with_name(new.name + ".old")
    out.rename(old)
    new.rename(out)
    shutil.rmtree(old)
