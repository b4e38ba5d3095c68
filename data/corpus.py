"""Passage corpora: the Wikipedia slice, BEIR folders, or any JSONL of ``{id, title, text}``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from disambig.data.jsonl import MalformedRowError, read_jsonl, require
from disambig.data.root import CORPORA, resolve
from disambig.errors import ConfigurationError

FOLDER_MANIFEST = "manifest.json"
"""A built benchmark folder's record of how it was made; a BEIR folder without ``corpus.jsonl`` names there the
corpus its queries are judged on (``corpus``)."""


def corpus_path(name_or_path: str) -> Path:
    """The file or BEIR folder a corpus name (found under the data root) or path points to."""
    return resolve(name_or_path, CORPORA, "corpus", "a JSONL file or a BEIR folder")


def load_corpus(name_or_path: str) -> list[dict[str, str]]:
    """Passages as ``{id, title, text}`` dicts (BEIR ``_id`` becomes ``id``); duplicate ids are an error."""
    path = corpus_path(name_or_path)
    file = path / "corpus.jsonl" if path.is_dir() else path
    passages, seen = [], set()
    for number, row in read_jsonl(file):
        where = f"{file}:{number}"
        if "_id" in row:
            row = {**row, "id": row["_id"]}
        require(row, ("id", "text"), where)
        if not isinstance(row["text"], str):
            raise MalformedRowError(f"{where}: 'text' must be a string, got {type(row['text']).__name__}")
        pid = str(row["id"])
        if pid in seen:
            raise ConfigurationError(f"{where}: duplicate passage id {pid!r}")
        seen.add(pid)
        passages.append({"id": pid, "title": str(row.get("title") or ""), "text": str(row["text"])})
    return passages


def load_beir_queries(name_or_path: str) -> dict[str, str]:
    """``{query_id: text}`` from a BEIR folder's ``queries.jsonl``."""
    file = corpus_path(name_or_path) / "queries.jsonl"
    queries = {}
    for number, row in read_jsonl(file):
        require(row, ("_id", "text"), f"{file}:{number}")
        queries[str(row["_id"])] = str(row["text"])
    return queries


def load_beir_qrels(name_or_path: str, split: str = "test") -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}`` from ``qrels/SPLIT.tsv``."""
    file = corpus_path(name_or_path) / "qrels" / f"{split}.tsv"
    if not file.is_file():
        judged = qrels_splits(name_or_path)
        raise ConfigurationError(f"no qrels file {str(file)!r}; the folder judges "
                                 + (f"split(s) {', '.join(judged)}: pass one of them" if judged else "no split"))
    qrels: dict[str, dict[str, int]] = {}
    with file.open(encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if not row or (number == 1 and row[:1] == ["query-id"]):
                continue
            if len(row) != 3 or not row[2].strip().lstrip("-").isdigit():
                raise MalformedRowError(f"{file}:{number}: expected query-id, corpus-id and an integer score "
                                        f"separated by tabs, got {row!r}")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def qrels_splits(name_or_path: str) -> list[str]:
    """The splits a BEIR folder judges: the names of its ``qrels/*.tsv`` files, sorted."""
    return sorted(file.stem for file in (corpus_path(name_or_path) / "qrels").glob("*.tsv"))


def named_corpus(folder: Path) -> str | None:
    """The corpus a BEIR folder without ``corpus.jsonl`` names in its manifest (``disambig data asqa-retrieval``
    writes one), else None.

    Raises:
        ConfigurationError: the manifest is not valid JSON, or its ``corpus`` is not a non-empty string.
    """
    file = folder / FOLDER_MANIFEST
    if not file.is_file():
        return None
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{file}: not valid JSON ({exc.msg}); rebuild the folder") from None
    corpus = manifest.get("corpus") if isinstance(manifest, dict) else None
    if corpus is None:
        return None
    if not isinstance(corpus, str) or not corpus.strip():
        raise ConfigurationError(f"{file}: 'corpus' must name a corpus (wiki-slice or a JSONL path), got {corpus!r}")
    return corpus
