"""Paths as a user gives them (a flag, an environment variable, a served row)."""

from __future__ import annotations

import os
from pathlib import Path


def expanded(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded, and left as given where there is no such home (as a shell
    leaves ``~nobody`` alone): ``Path.expanduser`` raises RuntimeError there, a traceback for a mistyped path."""
    return Path(os.path.expanduser(path))
