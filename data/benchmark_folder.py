"""The folder a benchmark builder writes (``data spiderqa``, ``data asqa-retrieval``), checked before it reads
anything: a builder replaces a folder it wrote, never one holding other files, and finds a file in the way before its
work rather than after."""

from __future__ import annotations

import json
from pathlib import Path

from disambig.data.corpus import FOLDER_MANIFEST
from disambig.errors import ConfigurationError


def check_replaceable(out: Path, built_format: str, command: str) -> None:
    """``out`` may be written by ``command``: new, an empty folder, or a folder whose ``manifest.json`` says
    ``built_format`` (one that command wrote), with no file standing where ``out`` or a folder above it would be.

    Raises:
        ConfigurationError: one line naming ``out``, what is in the way and the fix.
    """
    if out.exists() and not out.is_dir():
        raise ConfigurationError(f"--out {str(out)!r} is a file; pass a folder path")
    blocked = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise ConfigurationError(f"--out {str(out)!r}: {str(blocked)!r} is a file, not a folder; write elsewhere")
    if out.is_dir() and any(out.iterdir()) and folder_format(out) != built_format:
        raise ConfigurationError(f"--out {str(out)!r} holds files not written by `{command}`; pass a new or empty "
                                 "folder")


def folder_format(folder: Path) -> str | None:
    """The ``format`` its ``manifest.json`` names, else None (no manifest, or not one a builder wrote)."""
    try:
        manifest = json.loads((folder / FOLDER_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest.get("format") if isinstance(manifest, dict) else None
