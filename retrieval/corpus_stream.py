"""A corpus read as a stream of shards: JSONL, Parquet, or a BEIR folder, never all passages at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from disambig.errors import ConfigurationError

Format = Literal["jsonl", "parquet", "beir"]
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


def passages(corpus: str, tap: Callable[[bytes], Any] | None = None) -> Iterator[dict[str, str]]:
    """The passages of ``corpus`` as ``{id, title, text}``, one at a time (BEIR ``_id`` becomes ``id``). ``tap``
    sees a JSONL file's bytes as they are read (to hash it in the same pass); a Parquet file's rows are decoded by
    pyarrow, so it sees nothing.

    Raises:
        MalformedRowError: a row is not JSON, lacks ``id`` or ``text``, or its ``text`` is not a string.
    """
    file, fmt = passages_file(corpus)
    rows = _parquet_rows(file) if fmt == "parquet" else _jsonl_rows(file, tap)
    for where, row in rows:
        yield passage(row, where)


def parquet_rows(file: Path) -> int:
    """Rows of a Parquet file, from its metadata."""
    return int(_parquet(file).metadata.num_rows)


def shards(corpus: str, size: int, tap: Callable[[bytes], Any] | None = None) -> Iterator[list[dict[str, str]]]:
    """Consecutive lists of at most ``size`` passages of ``corpus`` (``tap`` as in ``passages``)."""
    if size < 1:
        raise ConfigurationError(f"shard size={size} must be at least 1 passage")
    shard: list[dict[str, str]] = []
    for row in passages(corpus, tap):
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


def _jsonl_rows(file: Path, tap: Callable[[bytes], Any] | None) -> Iterator[tuple[str, dict[str, Any]]]:
    from disambig.data.jsonl import read_jsonl

    for number, row in read_jsonl(file, tap):
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
