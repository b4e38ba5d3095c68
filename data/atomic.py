"""Write a file so that a reader, or a process killed while writing, only ever meets the old file or the whole new
one: the bytes go to a temporary file in the same folder, are synced to disk, and replace the target in one rename.

Every state, artifact, manifest, params, report and results file the project rewrites goes through these functions
(files that only grow, such as result logs and batch journals, append whole lines with ``disambig.data.jsonl``). A
kill leaves at most a stray ``.NAME.*.tmp`` beside the target, which no reader looks for.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def write_bytes(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (a temporary file in the same folder, synced, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
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
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
