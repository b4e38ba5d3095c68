"""A corpus read as a stream of shards: JSONL, Parquet, or a BEIR folder, never all passages at once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from disambig.errors import ConfigurationError

Format = Literal["jsonl", "parquet", "beir"]
BLOCK = 1 << 18
"""Bytes read at a time when hashing and counting (small: the memory budget of a build is a few shards)."""
PARQUET_BATCH = 1024


@dataclass(frozen=True)
class CorpusSource:
    """What an index was built from: the passages file, its format, size in bytes, SHA-256 and passage count."""

    path: str
    format: Format
    bytes: int
    sha256: str
    passages: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def passages_file(corpus: str) -> tuple[Path, Format]:
    """The file holding the passages of ``corpus`` (a name, a JSONL or Parquet file, a BEIR folder) and its format."""
    from disambig.data.corpus import corpus_path

    path = corpus_path(corpus)
    if path.is_dir():
        file = path / "corpus.jsonl"
        if not file.is_file():
            raise ConfigurationError(f"corpus folder {str(path)!r} has no corpus.jsonl; pass a BEIR folder, a JSONL "
                                     "file or a Parquet file of {id, title, text}")
        return file, "beir"
    return path, "parquet" if path.suffix.lower() in (".parquet", ".pq") else "jsonl"


def describe(corpus: str) -> CorpusSource:
    """Hash ``corpus``'s file and count its passages in one pass (non-blank lines; Parquet: rows in its metadata)."""
    file, fmt = passages_file(corpus)
    digest, count = hashlib.sha256(), 0
    with file.open("rb") as handle:
        if fmt == "parquet":
            for block in iter(lambda: handle.read(BLOCK), b""):
                digest.update(block)
            count = _parquet(file).metadata.num_rows
        else:
            for line in handle:
                digest.update(line)
                count += bool(line.strip())
    return CorpusSource(str(file.resolve()), fmt, file.stat().st_size, digest.hexdigest(), count)


def passages(corpus: str) -> Iterator[dict[str, str]]:
    """The passages of ``corpus`` as ``{id, title, text}``, one at a time (BEIR ``_id`` becomes ``id``).

    Raises:
        MalformedRowError: a row is not JSON, lacks ``id`` or ``text``, or its ``text`` is not a string.
    """
    file, fmt = passages_file(corpus)
    rows = _parquet_rows(file) if fmt == "parquet" else _jsonl_rows(file)
    for where, row in rows:
        yield passage(row, where)


def shards(corpus: str, size: int) -> Iterator[list[dict[str, str]]]:
    """Consecutive lists of at most ``size`` passages of ``corpus``."""
    if size < 1:
        raise ConfigurationError(f"shard size={size} must be at least 1 passage")
    shard: list[dict[str, str]] = []
    for row in passages(corpus):
        shard.append(row)
        if len(shard) == size:
            yield shard
            shard = []
    if shard:
        yield shard


def passage(row: dict[str, Any], where: str) -> dict[str, str]:
    """One corpus row as ``{id, title, text}``; ``where`` (``file:line``) names it in errors."""
    from disambig.data.jsonl import MalformedRowError, require

    if "_id" in row:
        row = {**row, "id": row["_id"]}
    require(row, ("id", "text"), where)
    if not isinstance(row["text"], str):
        raise MalformedRowError(f"{where}: 'text' must be a string, got {type(row['text']).__name__}")
    return {"id": str(row["id"]), "title": str(row.get("title") or ""), "text": row["text"]}


def _jsonl_rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    from disambig.data.jsonl import read_jsonl

    for number, row in read_jsonl(file):
        yield f"{file}:{number}", row


def _parquet_rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    number = 0
    for batch in _parquet(file).iter_batches(batch_size=PARQUET_BATCH):
        for row in batch.to_pylist():
            number += 1
            yield f"{file}: row {number}", row


def _parquet(file: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        from disambig.errors import MissingDependencyError

        raise MissingDependencyError("reading a Parquet corpus needs pyarrow; pip install pyarrow") from None
    try:
        return pq.ParquetFile(file)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{file}: not a readable Parquet file ({exc}); pass JSONL or Parquet") from None
