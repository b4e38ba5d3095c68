"""A corpus file's content hash without rereading it: hashed while a build streams it, and remembered by file
identity so that opening its index later costs a ``stat``, not a pass over 21M passages.

``{cache}/corpus-hashes.json`` maps a resolved corpus path to its SHA-256, passage count and the identity it had
when hashed (size, mtime, ctime, inode). Any change of identity (a rewrite, a copy over it, even ``touch``) makes
the file be hashed again, so a changed corpus still gets a new index; an unchanged one is never reread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MEMO = "corpus-hashes.json"


@dataclass(frozen=True)
class FileIdentity:
    """What ``stat`` says of a corpus file: its resolved path, size in bytes, mtime and ctime (ns) and inode."""

    path: str
    bytes: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, file: Path) -> FileIdentity:
        status = file.stat()
        return cls(str(file.resolve()), status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)

    def resume_key(self) -> dict[str, Any]:
        """The fields an interrupted build must find unchanged to resume (ctime and inode are left out: a ``chmod``
        or a move of the data folder does not restart a day-long build; its shards are checked by digest)."""
        return {"path": self.path, "bytes": self.bytes, "mtime_ns": self.mtime_ns}


class StreamDigest:
    """SHA-256 and byte count of a file as a stream reads it; pass ``update`` as the reader's ``tap``."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.bytes_read = 0

    def update(self, data: bytes) -> None:
        self._sha.update(data)
        self.bytes_read += len(data)

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def file_sha256(file: Path, block: int = 1 << 20) -> str:
    """SHA-256 of ``file``'s bytes, read in blocks."""
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for chunk in iter(lambda: handle.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()


def passages_digest(passages: list[dict[str, str]]) -> str:
    """SHA-256 of a shard's passages (id, title, text), to check a kept shard against the corpus read now."""
    digest = hashlib.sha256()
    for p in passages:
        digest.update("\x1f".join((p["id"], p["title"], p["text"], "\x1e")).encode("utf-8"))
    return digest.hexdigest()


def remembered(cache_dir: str | Path, file: Path) -> dict[str, Any] | None:
    """``{"sha256", "passages"}`` recorded for ``file`` if its identity has not changed since, else None."""
    entry = _read(Path(cache_dir) / MEMO).get(str(file.resolve()))
    if not isinstance(entry, dict) or entry.get("identity") != asdict(FileIdentity.of(file)):
        return None
    return {"sha256": entry.get("sha256"), "passages": entry.get("passages")}


def remember(cache_dir: str | Path, identity: FileIdentity, sha256: str, passages: int | None = None) -> None:
    """Record ``file``'s hash under its identity (atomically; a lost race only means hashing once more). The memo
    only saves work: a cache folder it cannot be written to (read-only, full) leaves it unrecorded."""
    memo_file = Path(cache_dir) / MEMO
    memo = _read(memo_file)
    memo[identity.path] = {"identity": asdict(identity), "sha256": sha256, "passages": passages}
    tmp = memo_file.with_name(f"{MEMO}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(memo, indent=1), encoding="utf-8")
        tmp.replace(memo_file)
    except OSError as exc:
        logger.debug("corpus hash not remembered in %s: %s", memo_file, exc)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _read(memo_file: Path) -> dict[str, Any]:
    try:
        memo = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}
