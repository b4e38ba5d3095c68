"""A clean worktree at a commit: a benchmark measures committed code, not the edits of whoever shares the checkout,
and every row it writes is stamped with that commit and no "+dirty"."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness.docs import CHECKOUT

LAUNCH = Path(__file__).with_name("launch.py")


@contextmanager
def clean_worktree(commit: str = "HEAD", checkout: Path = CHECKOUT) -> Iterator[Path]:
    """A detached ``git worktree`` of ``commit`` of ``checkout`` in a scratch folder, removed when the block ends.

    The folder also links the checkout's ``../shared`` (the data root and the cross-check files the code finds beside
    a checkout), so the worktree's code reads the same data. Results stay where the caller writes them (give paths in
    the checkout)."""
    scratch = Path(tempfile.mkdtemp(prefix="disambig-worktree-"))
    if (checkout.parent / "shared").exists():
        (scratch / "shared").symlink_to(checkout.parent / "shared")
    tree = scratch / "checkout"
    git(checkout, "worktree", "add", "--detach", str(tree), commit)
    try:
        yield tree
    finally:
        git(checkout, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(scratch, ignore_errors=True)


def python_in(tree: Path) -> list[str]:
    """The command prefix that runs Python with ``tree``'s code and this environment's packages: append
    ``disambig ARGS``, ``-m MODULE ARGS`` or ``SCRIPT ARGS``."""
    return [sys.executable, str(LAUNCH), str(tree)]


def git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()
