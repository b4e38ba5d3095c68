"""Read JSONL with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError


class MalformedRowError(ConfigurationError):
    """A row could not be read; the message names the file and line."""


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)``; a blank line is skipped, a broken one raises ``MalformedRowError``."""
    if not path.is_file():
        raise ConfigurationError(f"file {str(path)!r} does not exist")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MalformedRowError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise MalformedRowError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            yield number, row


def require(row: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise MalformedRowError(f"{where}: missing field(s) {', '.join(missing)}")
