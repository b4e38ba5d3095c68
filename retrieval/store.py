"""Index folders in the cache directory, keyed by corpus content, index kind and parameters.

``{cache}/indexes/{corpus}-{kind}-{key}/`` holds ``manifest.json``, the passages (``passages.sqlite``; indexes
built before it have ``passages.jsonl``) and the index files, where ``key`` hashes the corpus file's SHA-256, the
kind, the parameters that change the index (the encoder for dense) and the format version. A changed corpus
therefore gets a new folder and is indexed afresh. The SHA-256 is taken while the build streams the corpus (no
second pass) and remembered by file identity (``corpus_identity``), so opening an index later does not reread it.

A build reads the corpus as a stream of shards into ``{corpus}-{kind}-{path key}.partial`` (keyed by the corpus
file's path, as its content hash is known only at the end) and renames it when complete, so a half-built index
never looks finished. An interrupted build resumes there unless ``--force`` or the file's size or mtime changed;
each kept shard's passages are checked against a digest (a dense build's encoded shards against a checksum too).

The manifest is written (atomically) once the index files are complete; only then are the encoded shards
(``SCRATCH``) and ``build.json`` removed and the folder renamed (``publish.put_in_place``). A build killed in those
last steps leaves a ``.partial`` folder holding the whole index: the next build of the same corpus file keeps it
without encoding again, once its manifest, passage count, corpus SHA-256 and index files (``check``) agree with
this corpus and these parameters; anything else is discarded with one line saying why.
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
from disambig.retrieval.corpus_identity import (
    FileIdentity,
    StreamDigest,
    file_sha256,
    passages_digest,
    remember,
    remembered,
)
from disambig.retrieval.corpus_stream import shards
from disambig.retrieval.passage_store import PASSAGES_DB, PassageWriter, SqlitePassages
from disambig.retrieval.publish import put_in_place

MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
BUILD_RECORD = "build.json"
PARTIAL = ".partial"
SCRATCH = "shards"
"""A work folder's files kept only to resume its build (a dense build's encoded shards), removed once the manifest
is written."""
FORMAT_VERSION = 1
SHARD_SIZE = 10_240
"""Passages read, encoded and kept per shard (40 encoder chunks of 256; ~15 MB of MiniLM vectors)."""
BYTES_PER_PASSAGE = 700
"""A first guess of a JSONL passage's size, for progress before any shard is read (DPR's 100-word passages)."""

logger = logging.getLogger(__name__)


@dataclass
class CorpusShards:
    """The corpus as numbered shards ``(number, passages)`` for a writer; each shard read is also added to the
    passage store (once: a resumed build skips the shards it holds, after checking their digest), and the file's
    bytes are hashed as they are read (``stream_``).

    Attributes:
        corpus: the corpus name or path.
        size: passages per shard.
        known_total: passages in the corpus when known (Parquet metadata, an earlier build), else None.
        store: the passage store being built.
        file_bytes: the corpus file's size, to estimate ``total`` from the bytes read when it is not known.
        kind: the index being built, for the rebuild command in errors.
    """

    corpus: str
    size: int
    known_total: int | None
    store: PassageWriter
    file_bytes: int = 0
    kind: str = "all"

    def __post_init__(self) -> None:
        self.stream_ = StreamDigest()
        self.read_ = 0

    @property
    def total(self) -> int:
        """Passages in the corpus (for progress): known, or estimated from the share of the file read so far."""
        if self.known_total:
            return self.known_total
        if not self.stream_.bytes_read:
            return max(1, self.file_bytes // BYTES_PER_PASSAGE)
        return max(self.read_, round(self.read_ * self.file_bytes / self.stream_.bytes_read))

    def __iter__(self) -> Iterator[tuple[int, list[dict[str, str]]]]:
        try:
            yield from self._read()
        except ConfigurationError as exc:  # the corpus is refused (a bad row, a duplicate id): say what stays
            raise type(exc)(f"{exc}; the build so far stays in {str(self.store.path.parent)!r} for the next build "
                            "of this file to resume (or delete it)") from None

    def _read(self) -> Iterator[tuple[int, list[dict[str, str]]]]:
        for number, passages in enumerate(shards(self.corpus, self.size, self.stream_.update)):
            digest = passages_digest(passages)
            kept = self.store.digest(number)
            if kept is not None and kept != digest:
                raise IndexCorruptError(f"corpus {self.corpus!r} changed since the interrupted build in "
                                        f"{str(self.store.path.parent)!r} (shard {number} differs); start over with "
                                        f"`{rebuild_hint(self.corpus, self.kind)}`")
            self.store.add(number, self.read_, passages, digest)
            self.read_ += len(passages)
            yield number, passages


Writer = Callable[[Path, CorpusShards, Progress | None], dict[str, Any]]
"""``write(folder, shards, progress)`` fills ``folder`` with index files and returns manifest extras."""
Check = Callable[[Path, dict[str, Any]], str | None]
"""``check(folder, manifest)``: why the index files in ``folder`` do not match ``manifest``, or None if they do."""


class IndexCorruptError(DisambigError):
    """An index folder is damaged or incomplete; the message names the rebuild command."""


class IndexMissingError(DisambigError):
    """No index has been built for this corpus and kind; the message names the build command."""


def corpus_hash(corpus: str, cache_dir: str | Path | None = None) -> str:
    """SHA-256 of the corpus file (``corpus.jsonl`` of a BEIR folder): remembered in ``cache_dir`` for as long as
    the file's identity is unchanged, else read (and then remembered)."""
    file = corpus_file(corpus)
    if cache_dir is not None and (known := remembered(cache_dir, file)):
        return str(known["sha256"])
    identity = FileIdentity.of(file)  # before reading: a file changed meanwhile no longer matches what is recorded
    content = file_sha256(file)
    if cache_dir is not None:
        remember(cache_dir, identity, content)
    return content


def corpus_file(corpus: str) -> Path:
    """The passages file of ``corpus``.

    Raises:
        ConfigurationError: there is none.
    """
    from disambig.retrieval.corpus_stream import passages_file

    file, _ = passages_file(corpus)
    if not file.is_file():
        raise ConfigurationError(f"corpus {corpus!r} has no passages file {str(file)!r}")
    return file


def index_dir(cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any],
              content: str | None = None) -> Path:
    """Where the index of ``corpus`` with ``kind`` and ``params`` lives (it may not exist yet); ``content`` is the
    corpus's SHA-256 when already known."""
    content = content or corpus_hash(corpus, cache_dir)
    key = hashlib.sha256(json.dumps([content, kind, params, FORMAT_VERSION], sort_keys=True).encode()).hexdigest()
    return Path(cache_dir) / "indexes" / f"{_label(corpus)}-{kind}-{key[:12]}"


def known_index_dir(cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any]) -> Path | None:
    """``index_dir`` when it can be known without a build's pass: the corpus hash is remembered, or an index of a
    corpus of this name exists (then the file is hashed to find out whether it is this one); else None."""
    built = (Path(cache_dir) / "indexes").glob(f"{_label(corpus)}-{kind}-*")
    if remembered(cache_dir, corpus_file(corpus)) or any(p.is_dir() and not p.name.endswith(PARTIAL) for p in built):
        return index_dir(cache_dir, corpus, kind, params)
    return None


def work_dir(cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any]) -> Path:
    """Where a build of ``corpus`` streams to before its content hash is known: keyed by the file's path."""
    path = str(corpus_file(corpus).resolve())
    key = hashlib.sha256(json.dumps([path, kind, params, FORMAT_VERSION], sort_keys=True).encode()).hexdigest()
    return Path(cache_dir) / "indexes" / f"{_label(corpus)}-{kind}-{key[:12]}{PARTIAL}"


def _label(corpus: str) -> str:
    return re.sub(r"[^\w.-]+", "_", Path(corpus.rstrip("/\\")).stem) or "corpus"


def build_hint(corpus: str, kind: str, force: bool = False) -> str:
    """The command that (re)builds one index."""
    return f"disambig index build --corpus {corpus} --kind {kind}" + (" --force" if force else "")


def rebuild_hint(corpus: str, kind: str) -> str:
    return build_hint(corpus, kind, force=True)


def build_index(cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any], write: Writer,
                progress: Progress | None = None, fresh: bool = False, shard_size: int = SHARD_SIZE,
                replace: bool = False, check: Check | None = None) -> Path:
    """Stream the corpus in shards to ``write`` and the passage store in ``work_dir``, hashing it as it is read;
    add the manifest, then rename it to ``index_dir`` and remember the hash. An interrupted build is resumed from
    its work folder unless ``fresh`` or the corpus file's size or mtime changed; one that finished but was not put
    in place (killed in its last steps) is put in place as it is, once verified (``check`` its index files).
    Returns the index folder.

    Args:
        replace: replace an index already at ``index_dir`` (implied by ``fresh``); otherwise one put there
            meanwhile by a build of the same content from another path is kept and this build discarded.

    Raises:
        ConfigurationError: the corpus has no passages, a passage id occurs twice, or the file changed meanwhile.
    """
    from disambig import __version__
    from disambig.data.atomic import remove_stale, write_json
    from disambig.retrieval.corpus_stream import CorpusSource, parquet_rows, passages, passages_file

    file, fmt = passages_file(corpus)
    identity = FileIdentity.of(corpus_file(corpus))
    if next(passages(corpus), None) is None:  # reads up to the first passage only
        raise ConfigurationError(f"corpus {corpus!r} has no passages; nothing to index")
    work = work_dir(cache_dir, corpus, kind, params)
    if not fresh and (finished := _finished(work, cache_dir, corpus, kind, params, check)) is not None:
        logger.info("the build in %s had finished when it was stopped; putting it in place, encoding nothing", work)
        return _publish(work, index_dir(cache_dir, corpus, kind, params, finished["corpus_sha256"]), cache_dir,
                        identity, finished, replace)
    _prepare(work, {"corpus": identity.resume_key(), "kind": kind, "params": params, "shard_size": shard_size,
                    "format": FORMAT_VERSION}, fresh)
    start = time.perf_counter()
    known = parquet_rows(file) if fmt == "parquet" else (remembered(cache_dir, file) or {}).get("passages")
    store = PassageWriter(work / PASSAGES_DB, corpus)
    stream = CorpusShards(corpus, shard_size, known, store, identity.bytes, kind)
    try:
        extras = write(work, stream, progress)
    finally:
        stored = store.close()
    content = file_sha256(file) if fmt == "parquet" else stream.stream_.hexdigest()  # Parquet: pyarrow reads it
    if FileIdentity.of(file).resume_key() != identity.resume_key():
        raise ConfigurationError(f"corpus {corpus!r} changed while it was being indexed; run the build again")
    source = CorpusSource(identity.path, fmt, identity.bytes, content, stored)
    manifest = {"format": FORMAT_VERSION, "kind": kind, "corpus": corpus, "corpus_sha256": content,
                "params": params, "passages": stored, "build_seconds": round(time.perf_counter() - start, 2),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "disambig": __version__, "source": source.to_dict(),
                "shard_size": shard_size, **extras}
    remove_stale(work / MANIFEST, older_than=0)  # a killed build's: builds of one work folder hold its lock in turn
    write_json(work / MANIFEST, manifest)  # from here on the folder is a finished build, kept if killed
    return _publish(work, index_dir(cache_dir, corpus, kind, params, content), cache_dir, identity, manifest,
                    replace or fresh)


def _publish(work: Path, folder: Path, cache_dir: str | Path, identity: FileIdentity, manifest: dict[str, Any],
             replace: bool) -> Path:
    """Drop the finished build's scratch files and record, put it in place as ``folder`` and remember the corpus
    hash."""
    shutil.rmtree(work / SCRATCH, ignore_errors=True)
    (work / BUILD_RECORD).unlink(missing_ok=True)
    put_in_place(work, folder, replace)
    remember(cache_dir, identity, manifest["corpus_sha256"], manifest["passages"])
    return folder


def _finished(work: Path, cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any],
              check: Check | None) -> dict[str, Any] | None:
    """The manifest of a finished build left in ``work`` if it is this corpus's index with these ``params``; None
    if there is none, or (after discarding ``work`` with one line saying why) if it is not."""
    try:
        manifest = json.loads((work / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        manifest = None
    reason = _mismatch(work, manifest, cache_dir, corpus, kind, params, check)
    if reason is None:
        return manifest
    logger.warning("discarding the finished build in %s: %s; building the index again", work, reason)
    shutil.rmtree(work, ignore_errors=True)
    return None


def _mismatch(work: Path, manifest: Any, cache_dir: str | Path, corpus: str, kind: str, params: dict[str, Any],
              check: Check | None) -> str | None:
    """Why ``manifest`` and the files beside it are not the finished ``kind`` index of ``corpus`` with ``params``
    (cheap checks first, the corpus hash last), or None."""
    if not isinstance(manifest, dict):
        return f"its {MANIFEST} is unreadable"
    if (manifest.get("format"), manifest.get("kind")) != (FORMAT_VERSION, kind):
        return f"its manifest is of format {manifest.get('format')!r} and kind {manifest.get('kind')!r}"
    if manifest.get("params") != params:
        return f"it was built with {manifest.get('params')!r}, not {params!r}"
    try:
        stored = len(SqlitePassages(work / PASSAGES_DB))
    except sqlite3.Error as exc:
        return f"its passage store cannot be read ({type(exc).__name__})"
    if stored != manifest.get("passages"):
        return f"its passage store holds {stored} passages, its manifest says {manifest.get('passages')!r}"
    reason = check(work, manifest) if check else None
    if reason is None and manifest.get("corpus_sha256") != corpus_hash(corpus, cache_dir):
        return "the corpus file's content changed since (another SHA-256)"
    return reason


def _prepare(work: Path, record: dict[str, Any], fresh: bool) -> None:
    """Start ``work`` afresh, or keep it to resume when it holds a build of the same corpus file (path, size,
    mtime), kind and parameters."""
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
        IndexCorruptError: the manifest or passages are unreadable (the line names the file), incomplete or of
            another format version; the line names the rebuild command.
    """
    if not folder.is_dir():
        raise IndexMissingError(f"no {kind} index of corpus {corpus!r} in {str(folder.parent)!r}; build it with "
                                f"`{build_hint(corpus, kind)}`")
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        path = _passages_path(folder)
        passages = _open_passages(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, sqlite3.DatabaseError) as exc:
        raise IndexCorruptError(f"{kind} index file {str(path)!r} is missing or corrupt ({type(exc).__name__}); "
                                f"rebuild it with `{rebuild_hint(corpus, kind)}`") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} has format {_get(manifest, 'format')!r}, this "
                                f"version reads {FORMAT_VERSION}; rebuild it with `{rebuild_hint(corpus, kind)}`")
    if manifest.get("kind") != kind or len(passages) != manifest.get("passages"):
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is incomplete; rebuild it with "
                                f"`{rebuild_hint(corpus, kind)}`")
    return manifest, passages


def _passages_path(folder: Path) -> Path:
    """The passage store of ``folder``: ``passages.sqlite``, or ``passages.jsonl`` in an index built before it."""
    legacy = folder / PASSAGES
    return legacy if legacy.is_file() and not (folder / PASSAGES_DB).is_file() else folder / PASSAGES_DB


def _open_passages(path: Path) -> Any:
    if path.name == PASSAGES_DB:
        return SqlitePassages(path)
    with path.open(encoding="utf-8") as handle:
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
