"""Which code produced a result: the commit, whether the working tree's code differed from it, the version.

A result row carries this stamp so a resumed run never silently mixes answers from different code.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import lru_cache
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
CODE_PATHS = ("*.py", "pyproject.toml")


@lru_cache(maxsize=1)
def code_stamp() -> dict[str, object]:
    """``{commit, dirty, diff, version}`` of the code this process runs, read once per process.

    ``dirty`` is true when tracked Python files or ``pyproject.toml`` differ from the commit (results, docs
    and artifacts do not count); ``diff`` is then a short hash of that difference, so two different
    uncommitted states are told apart. Outside a git checkout, commit and diff are empty.
    """
    from disambig import __version__

    commit = _git("rev-parse", "HEAD").strip()
    diff = _git("diff", "HEAD", "--", *CODE_PATHS) if commit else ""
    return {
        "commit": commit[:12],
        "dirty": bool(diff),
        "diff": hashlib.sha256(diff.encode()).hexdigest()[:12] if diff else "",
        "version": __version__,
    }


def describe(stamp: dict[str, object]) -> str:
    """``abc123def456`` or ``abc123def456+dirty(9f0e…)``, or ``unknown code`` for a row without a stamp."""
    if not stamp:
        return "unknown code"
    text = str(stamp.get("commit") or "no commit")
    return f"{text}+dirty({stamp.get('diff')})" if stamp.get("dirty") else text


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=CHECKOUT)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout if out.returncode == 0 else ""
