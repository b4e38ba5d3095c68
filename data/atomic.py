"""Write a file so that a reader, or a process killed while writing, only ever meets the old file or the whole new
one: the bytes go to a temporary file in the same folder, are synced to disk, and replace the target in one rename.

Every state, artifact, manifest, params, report and results file the project rewrites goes through these functions
(files that only grow, such as result logs and batch journals, append whole lines with ``disambig.data.jsonl``). A
kill leaves at most a stray ``.NAME.XXXXXXXX.tmp`` beside the target, which no reader looks for; the next write of
that target deletes it once it is ``STALE_AFTER_S`` old (a writer holds a lock on its temporary file until the rename,
so one still at work is never taken for a dead one).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

STALE_AFTER_S = 600.0
"""A temporary file of ours untouched this long and locked by no writer was left by a killed one."""


def write_bytes(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (a temporary file in the same folder, synced, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            fcntl.flock(out, fcntl.LOCK_EX)  # held until closed, after the rename: this file is being written
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes the file private; the files it replaces are ordinary ones
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Replace ``path`` with UTF-8 ``text`` atomically (newlines written as given)."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, value: Any, *, indent: int | None = 2, **dumps_kwargs: Any) -> Path:
    """Replace ``path`` with ``value`` as JSON (UTF-8, non-ASCII kept, a final newline) atomically."""
    dumps_kwargs.setdefault("ensure_ascii", False)
    return write_text(path, json.dumps(value, indent=indent, **dumps_kwargs) + "\n")


def copy_file(source: Path, path: Path) -> Path:
    """Copy ``source`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # as in write_bytes
            shutil.copyfile(source, tmp)
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove_stale(path: Path, older_than: float = STALE_AFTER_S) -> list[Path]:
    """Delete the temporary files a killed writer left beside ``path``: named as this module names them
    (``.NAME.`` + mkstemp's 8 characters + ``.tmp``), untouched for ``older_than`` seconds and locked by no writer.
    Returns those deleted."""
    ours = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")
    stale = [Path(entry.path) for entry in os.scandir(path.parent)
             if ours.fullmatch(entry.name) and _abandoned(Path(entry.path), older_than)]
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return stale


def _abandoned(tmp: Path, older_than: float) -> bool:
    try:
        handle = os.open(tmp, os.O_RDONLY)
    except OSError:  # gone meanwhile, or not ours to read
        return False
    try:
        if time.time() - os.fstat(handle).st_mtime < older_than:
            return False
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:  # a writer still holds it
        return False
    finally:
        os.close(handle)
