"""Putting a finished build in place as its index: one rename, under the index's own lock.

Builds of the same corpus content from different file paths stream into different work folders (keyed by path) but
end in the same index folder (keyed by content), and each holds only its own path's lock while it builds. So the
rename is done holding the index folder's lock (``{cache}/index-locks/{index}.lock``): the first build there renames
its folder in; a later one finds the index in place, keeps it and deletes its own copy. A forced rebuild (or one for
another FAISS factory) replaces the index instead: the old folder is moved aside, the new one renamed in, the old one
deleted; a kill in between leaves the aside folder, removed by the next build of that index.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from disambig.retrieval.build_lock import build_lock, lock_path

ASIDE = ".replaced.partial"
"""Suffix of an index folder moved aside while a rebuild replaces it (``.partial``: never opened as an index)."""

logger = logging.getLogger(__name__)


def put_in_place(work: Path, folder: Path, replace: bool = False) -> bool:
    """Rename the finished build ``work`` to ``folder``; if an index is already there and not ``replace``, keep it
    and delete ``work`` instead. Returns whether ``work`` became the index."""
    aside = folder.with_name(folder.name + ASIDE)
    with build_lock(lock_path(folder)):
        shutil.rmtree(aside, ignore_errors=True)  # left by a build killed while replacing this index
        if folder.is_dir() and not replace:
            logger.info("%s was put in place meanwhile by a build of the same content from another path; keeping "
                        "it and deleting this build's copy %s", folder, work)
            shutil.rmtree(work)
            return False
        if folder.exists():
            folder.rename(aside)
        work.rename(folder)
        shutil.rmtree(aside, ignore_errors=True)
    return True
