"""Read JSONL with errors that name the file and line; append to it whole lines only."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError


class MalformedRowError(ConfigurationError):
    """A row could not be read; the message names the file and line."""


def read_jsonl(path: Path, tap: Callable[[bytes], Any] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)``; a blank line is skipped, a broken one raises ``MalformedRowError``. ``tap``, if
    given, sees every line's bytes as read (``text_lines``)."""
    for number, line in text_lines(path, tap):
        if not line.strip():
            continue
        try:
            row = json.loads(line.rstrip("\r\n"))  # an unterminated string ends at the line, not at its newline
        except json.JSONDecodeError as exc:
            reason = exc.msg.removesuffix(" at")  # "Unterminated string starting at" reads on with the column
            raise MalformedRowError(f"{path}:{number}: not valid JSON ({reason} at column {exc.colno}); fix or "
                                    "remove the line") from None
        if not isinstance(row, dict):
            raise MalformedRowError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        yield number, row


def text_lines(path: Path, tap: Callable[[bytes], Any] | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` of a UTF-8 text file; a line that is not UTF-8 raises ``MalformedRowError``
    naming the file, the line and the byte. ``tap``, if given, is called with each line's bytes as read, blank ones
    included (so a ``hashlib`` object's ``update`` hashes the whole file in the same pass)."""
    if not path.is_file():
        raise ConfigurationError(f"file {str(path)!r} does not exist")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if tap is not None:
                tap(raw)
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a leading byte-order mark is dropped
            except UnicodeDecodeError as exc:
                raise MalformedRowError(f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte "
                                        f"{exc.start + 1} of the line); save the file as UTF-8") from None
            yield number, line


def check_text(path: Path) -> None:
    """Raise ``MalformedRowError`` at the first line of ``path`` that is not UTF-8 (before a parser that would not
    say where)."""
    for _ in text_lines(path):
        pass


def appended_lines(path: Path) -> list[str | None]:
    """The lines of a file ``append_line`` writes, split at ``\\n`` only (JSON written with ``ensure_ascii=False``
    keeps U+2028 and U+0085, which ``str.splitlines`` would break a row at); a line that is not UTF-8 (a kill can cut
    a character in two at the end of the last write) is None, for the reader to skip like a line that is not JSON."""
    lines: list[str | None] = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            lines.append(None)
    return lines[:-1] if lines and lines[-1] == "" else lines


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline in one write, flushed and synced to disk: a kill leaves whole lines, except at
    worst a torn last one that readers of appended files skip."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def require(row: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise MalformedRowError(f"{where}: missing field(s) {', '.join(missing)}")
