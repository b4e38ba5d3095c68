"""One build at a time per index: a lock file holding the builder's PID.

The lock is ``fcntl.flock`` on ``{cache}/index-locks/{index folder's name}.lock`` (outside ``indexes/``, which holds
index folders only). The kernel releases it when its holder exits, however it exits, so a lock file left behind by
a dead process (its PID still written in it) is simply taken over. A second ``disambig index build`` of the same
index waits, saying once which PID it waits for, then finds the index built by the first and keeps it.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

LOCKS = "index-locks"

logger = logging.getLogger(__name__)


def lock_path(folder: Path) -> Path:
    """The lock file of the index at ``folder`` (``{cache}/indexes/NAME``): ``{cache}/index-locks/NAME.lock``."""
    return folder.parent.parent / LOCKS / f"{folder.name}.lock"


@contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` for the block, waiting for another process that holds it.

    The holder's PID is written in the file while it is held and cleared on release; a PID left in an unlocked
    file is that of a process that died while building, and is logged as taken over.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.warning("another index build (PID %s) holds %s; waiting for it to finish (Ctrl-C stops "
                           "waiting)", holder(path) or "?", path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        else:
            stale = holder(path)
            if stale and stale != str(os.getpid()):
                logger.info("taking over %s from PID %s, which is no longer building", path, stale)
        _write_pid(handle, str(os.getpid()))
        try:
            yield
        finally:
            _write_pid(handle, "")


def holder(path: Path) -> str:
    """The PID written in the lock file ``path`` ("" when none or unreadable)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _write_pid(handle: TextIO, pid: str) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(f"{pid}\n" if pid else "")
    handle.flush()
