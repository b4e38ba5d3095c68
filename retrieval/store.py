"""Index folders in the cache directory, keyed by corpus content, index kind and parameters.

``{cache}/indexes/{corpus}-{kind}-{key}/`` holds ``manifest.json``, ``passages.jsonl`` and the index files,
where ``key`` hashes the corpus file's SHA-256, the kind, the parameters that change the index (the encoder
for dense) and the format version. A changed corpus therefore gets a new folder and is indexed afresh. A
build writes into a temporary sibling and renames it when complete, so a half-built index never looks
finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError, DisambigError
from disambig.retrieval.base import Progress

MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
FORMAT_VERSION = 1

Writer = Callable[[Path, list[dict[str, str]], Progress | None], dict[str, Any]]
"""``write(folder, passages, progress)`` fills ``folder`` with index files and returns manifest extras."""


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
        for block in iter(lambda: handle.read(1 << 20), b""):
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
                progress: Progress | None = None) -> Path:
    """Load the corpus, ``write`` the index into a temporary sibling, add passages + manifest, then rename."""
    from disambig import __version__
    from disambig.data.corpus import load_corpus

    passages = load_corpus(corpus)
    if not passages:
        raise ConfigurationError(f"corpus {corpus!r} has no passages; nothing to index")
    tmp = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        start = time.perf_counter()
        extras = write(tmp, passages, progress)
        write_passages(tmp / PASSAGES, passages)
        manifest = {"format": FORMAT_VERSION, "kind": kind, "corpus": corpus, "corpus_sha256": corpus_hash(corpus),
                    "params": params, "passages": len(passages), "build_seconds": round(time.perf_counter() - start, 2),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "disambig": __version__, **extras}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def write_passages(path: Path, passages: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for p in passages:
            handle.write(json.dumps({"id": p["id"], "title": p["title"], "text": p["text"]}, ensure_ascii=False) + "\n")


def read_index(folder: Path, corpus: str, kind: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The manifest and passages of a finished index.

    Raises:
        IndexMissingError: nothing was built at ``folder``.
        IndexCorruptError: the manifest or passages are unreadable, incomplete or of another format version.
    """
    if not folder.is_dir():
        raise IndexMissingError(f"no {kind} index of corpus {corpus!r} in {str(folder.parent)!r}; build it with "
                                f"`{build_hint(corpus, kind)}`")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        with (folder / PASSAGES).open(encoding="utf-8") as handle:
            passages = [json.loads(line) for line in handle]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is missing files or corrupt ({type(exc).__name__}); "
                                f"rebuild it with `{rebuild_hint(corpus, kind)}`") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} has format {_get(manifest, 'format')!r}, this "
                                f"version reads {FORMAT_VERSION}; rebuild it with `{rebuild_hint(corpus, kind)}`")
    if manifest.get("kind") != kind or len(passages) != manifest.get("passages"):
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is incomplete; rebuild it with "
                                f"`{rebuild_hint(corpus, kind)}`")
    return manifest, passages


def package_version(package: str) -> str:
    """The installed version of ``package`` (for manifests), or ``unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _get(manifest: Any, key: str) -> Any:
    return manifest.get(key) if isinstance(manifest, dict) else None
