"""Find pickle files under a folder: by the protocol 2-5 magic bytes, or by suffix."""

from __future__ import annotations

from pathlib import Path

PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


def pickles_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*")
            if p.is_file() and (p.read_bytes()[:2] in PICKLE_MAGIC or p.suffix in (".pkl", ".pickle"))]
