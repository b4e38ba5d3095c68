"""Encoded shards of a dense build in progress: ``shards/NNNNN.npy`` plus ``NNNNN.json`` (rows, SHA-256 of the
array file and of the shard's passage ids), written atomically, so an interrupted build keeps and verifies them.
The build removes them once its manifest is written (``store.SCRATCH``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from disambig.retrieval.store import SCRATCH, IndexCorruptError

SHARDS_DIR = SCRATCH


def shard_path(folder: Path, number: int) -> Path:
    return folder / SHARDS_DIR / f"{number:05d}.npy"


def ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_shard(folder: Path, number: int, vectors: Any, ids: list[str]) -> Path:
    """Write shard ``number``'s vectors and its record; the record is written last, so its presence means done."""
    import numpy as np

    path = shard_path(folder, number)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".npy.tmp")
    with tmp.open("wb") as handle:
        np.save(handle, np.asarray(vectors, dtype=np.float32))
    tmp.replace(path)
    record = {"rows": len(ids), "sha256": file_digest(path), "ids_sha256": ids_digest(ids)}
    path.with_suffix(".json.tmp").write_text(json.dumps(record), encoding="utf-8")
    path.with_suffix(".json.tmp").replace(path.with_suffix(".json"))
    return path


def load_shard(folder: Path, number: int, ids: list[str], rebuild: str) -> Any | None:
    """Shard ``number``'s vectors (memory-mapped) if it was finished for exactly these ``ids``; None if not done.

    Raises:
        IndexCorruptError: the shard's file does not match its record (one line naming the file and ``rebuild``).
    """
    import numpy as np

    path = shard_path(folder, number)
    if not path.is_file():  # never written, or deleted to be encoded again
        path.with_suffix(".json").unlink(missing_ok=True)
        return None
    try:
        record = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = {}
    if record.get("ids_sha256") != ids_digest(ids) or record.get("rows") != len(ids):
        raise _corrupt(path, "was encoded from other passages", rebuild)
    if file_digest(path) != record.get("sha256"):
        raise _corrupt(path, "does not match its checksum", rebuild)
    return np.load(path, mmap_mode="r")


def _corrupt(path: Path, what: str, rebuild: str) -> IndexCorruptError:
    return IndexCorruptError(f"shard {str(path)!r} of an interrupted build {what}; delete it to re-encode that shard, "
                             f"or start over with `{rebuild}`")
