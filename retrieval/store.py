"""Index folders in the cache directory, keyed by corpus content, index kind and parameters.

``{cache}/indexes/{corpus}-{kind}-{key}/`` holds ``manifest.json``, the passages (``passages.sqlite``; indexes
built before it have ``passages.jsonl``) and the index files, where ``key`` hashes the corpus file's SHA-256, the
kind, the parameters that change the index (the encoder for dense) and the format version. A changed corpus
therefore gets a new folder and is indexed afresh. A build reads the corpus as a stream of shards into the sibling
``{folder}.partial`` and renames it when complete, so a half-built index never looks finished; an interrupted
build resumes there (a dense build keeps its encoded shards, verified by checksum), unless ``--force``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError, DisambigError
from disambig.retrieval.base import Progress
from disambig.retrieval.corpus_stream import shards
from disambig.retrieval.passage_store import PASSAGES_DB, PassageWriter, SqlitePassages

MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
BUILD_RECORD = "build.json"
PARTIAL = ".partial"
FORMAT_VERSION = 1
SHARD_SIZE = 10_240
"""Passages read, encoded and kept per shard (40 encoder chunks of 256; ~15 MB of MiniLM vectors)."""

logger = logging.getLogger(__name__)


@dataclass
class CorpusShards:
    """The corpus as numbered shards ``(number, passages)`` for a writer; each shard read is also added to the
    passage store (once: a resumed build skips the shards it holds).

    Attributes:
        corpus: the corpus name or path.
        size: passages per shard.
        total: passages in the corpus (for progress).
        store: the passage store being built.
    """

    corpus: str
    size: int
    total: int
    store: PassageWriter

    def __iter__(self) -> Iterator[tuple[int, list[dict[str, str]]]]:
        first = 0
        for number, passages in enumerate(shards(self.corpus, self.size)):
            self.store.add(number, first, passages)
            first += len(passages)
            yield number, passages


Writer = Callable[[Path, CorpusShards, Progress | None], dict[str, Any]]
"""``write(folder, shards, progress)`` fills ``folder`` with index files and returns manifest extras."""


class IndexCorruptError(DisambigError):
    """An index folder is damaged or incomplete; the message names the rebuild command."""


class IndexMissingError(DisambigError):
    """No index has been built for this corpus and kind; the message names the build command."""


def corpus_hash(corpus: str) -> str:
    """SHA-256 of the corpus file (``corpus.jsonl`` of a BEIR folder)."""
    from disambig.data.corpus import corpus_path

    path = corpus_path(corpus)
    file = path / "corpus.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise ConfigurationError(f"corpus {corpus!r} has no passages file {str(file)!r}")
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 18), b""):
            digest.update(block)
    return digest.hexdigest()


def index_dir(cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any]) -> Path:
    """Where the index of ``corpus`` with ``kind`` and ``params`` lives (it may not exist yet)."""
    content = corpus_hash(corpus)
    key = hashlib.sha256(json.dumps([content, kind, params, FORMAT_VERSION], sort_keys=True).encode()).hexdigest()
    label = re.sub(r"[^\w.-]+", "_", Path(corpus.rstrip("/\\")).stem) or "corpus"
    return Path(cache_dir) / "indexes" / f"{label}-{kind}-{key[:12]}"


def build_hint(corpus: str, kind: str, force: bool = False) -> str:
    """The command that (re)builds one index."""
    return f"disambig index build --corpus {corpus} --kind {kind}" + (" --force" if force else "")


def rebuild_hint(corpus: str, kind: str) -> str:
    return build_hint(corpus, kind, force=True)


def build_index(folder: Path, corpus: str, kind: str, params: dict[str, Any], write: Writer,
                progress: Progress | None = None, fresh: bool = False, shard_size: int = SHARD_SIZE) -> Path:
    """Stream the corpus in shards to ``write`` and the passage store in ``{folder}.partial``, add the manifest,
    then rename it to ``folder``. An interrupted build is resumed from its ``.partial`` unless ``fresh``.

    Raises:
        ConfigurationError: the corpus has no passages, or a passage id occurs twice.
    """
    from disambig import __version__
    from disambig.retrieval.corpus_stream import describe

    source = describe(corpus)
    if not source.passages:
        raise ConfigurationError(f"corpus {corpus!r} has no passages; nothing to index")
    work = folder.with_name(folder.name + PARTIAL)
    record = {"corpus_sha256": source.sha256, "kind": kind, "params": params, "shard_size": shard_size}
    _prepare(work, record, fresh)
    start = time.perf_counter()
    store = PassageWriter(work / PASSAGES_DB, corpus)
    try:
        extras = write(work, CorpusShards(corpus, shard_size, source.passages, store), progress)
    finally:
        stored = store.close()
    manifest = {"format": FORMAT_VERSION, "kind": kind, "corpus": corpus, "corpus_sha256": source.sha256,
                "params": params, "passages": stored, "build_seconds": round(time.perf_counter() - start, 2),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "disambig": __version__, "source": source.to_dict(),
                "shard_size": shard_size, **extras}
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    (work / BUILD_RECORD).unlink()
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return folder


def _prepare(work: Path, record: dict[str, Any], fresh: bool) -> None:
    """Start ``work`` afresh, or keep it to resume when it holds a build of the same corpus, kind and parameters."""
    try:
        same = json.loads((work / BUILD_RECORD).read_text(encoding="utf-8")) == record
    except (OSError, ValueError):
        same = False
    if same and not fresh:
        logger.info("resuming the interrupted build in %s", work)
        return
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / BUILD_RECORD).write_text(json.dumps(record), encoding="utf-8")


def read_index(folder: Path, corpus: str, kind: str) -> tuple[dict[str, Any], Any]:
    """The manifest and passages of a finished index: the on-disk ``SqlitePassages``, or for an index built before
    it, the list read from ``passages.jsonl``.

    Raises:
        IndexMissingError: nothing was built at ``folder``.
        IndexCorruptError: the manifest or passages are unreadable, incomplete or of another format version.
    """
    if not folder.is_dir():
        raise IndexMissingError(f"no {kind} index of corpus {corpus!r} in {str(folder.parent)!r}; build it with "
                                f"`{build_hint(corpus, kind)}`")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        passages = _open_passages(folder)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, sqlite3.DatabaseError) as exc:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is missing files or corrupt ({type(exc).__name__}); "
                                f"rebuild it with `{rebuild_hint(corpus, kind)}`") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} has format {_get(manifest, 'format')!r}, this "
                                f"version reads {FORMAT_VERSION}; rebuild it with `{rebuild_hint(corpus, kind)}`")
    if manifest.get("kind") != kind or len(passages) != manifest.get("passages"):
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is incomplete; rebuild it with "
                                f"`{rebuild_hint(corpus, kind)}`")
    return manifest, passages


def _open_passages(folder: Path) -> Any:
    if (folder / PASSAGES_DB).is_file():
        return SqlitePassages(folder / PASSAGES_DB)
    with (folder / PASSAGES).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def package_version(package: str) -> str:
    """The installed version of ``package`` (for manifests), or ``unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _get(manifest: Any, key: str) -> Any:
    return manifest.get(key) if isinstance(manifest, dict) else None
