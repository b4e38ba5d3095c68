"""Files a command will write, checked before it does any work: a one-line refusal rather than a traceback (or a
clobbered input) once the work is done."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def check_output_file(path: Path, flag: str, inputs: Mapping[str, Path] | None = None) -> None:
    """Refuse ``path`` (given as ``flag``) when it is a folder, when a file stands where one of its folders would be,
    or when it is one of the command's ``inputs`` (named by what they are: ``{"predictions": Path(...)}``).

    Raises:
        ValueError: one line naming the path, what is wrong and the fix.
    """
    if path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a folder; give the file to write, e.g. "
                         f"{str(path / ('out' + (path.suffix or '.json')))!r}")
    blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise ValueError(f"{flag} {str(path)!r}: {str(blocked)!r} is a file, not a folder; write elsewhere")
    for what, given in (inputs or {}).items():
        if given.is_file() and path.resolve() == given.resolve():
            raise ValueError(f"{flag} {str(path)!r} is the {what} file being read; write to another file")


def check_output_folder(path: Path, flag: str) -> None:
    """Refuse a folder to write (given as ``flag``) when it, or one of the folders above it, is a file.

    Raises:
        ValueError: one line naming the path, the file in the way and the fix.
    """
    blocked = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocked == path:
        raise ValueError(f"{flag} {str(path)!r} is a file, not a folder; give a folder to write")
    if blocked is not None:
        raise ValueError(f"{flag} {str(path)!r}: {str(blocked)!r} is a file, not a folder; write elsewhere")
