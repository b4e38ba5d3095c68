"""Per-question rows a stopped benchmark resumes from: a JSONL file, one row appended as each is made, each row
carrying the code that made it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


class Rows:
    """The rows of ``path`` keyed by the fields ``key`` (``("id", "mode")``: one row per question and mode).

    >>> rows = Rows(Path("out.jsonl"), key=("id",))   # doctest: +SKIP
    >>> todo = [q for q in questions if not rows.done(q)]
    >>> rows.add({"id": q, "count": 3})               # appended now, with the code stamp
    """

    def __init__(self, path: Path, key: Sequence[str] = ("id",)) -> None:
        self.path = path
        self.key = tuple(key)
        self._done = {self._key_of(row) for row in self}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from disambig.data.jsonl import read_jsonl

        return iter([row for _, row in read_jsonl(self.path)] if self.path.is_file() else [])

    def done(self, *key: Any) -> bool:
        """Whether a row with this key is stored."""
        return key in self._done

    def refuse_other(self, field: str, value: Any) -> None:
        """Stop when stored rows hold another ``field`` than ``value`` (rows of one file come from one setting)."""
        other = sorted({str(row.get(field)) for row in self} - {str(value)})
        if other:
            raise SystemExit(f"{self.path} holds rows with {field} {', '.join(other)}; use another file for "
                             f"{field} {value!r}")

    def add(self, row: dict[str, Any]) -> dict[str, Any]:
        """Append ``row`` with the code stamp of this process (``code``), now, so a stop loses nothing made."""
        from disambig.evaluation.code_version import code_stamp

        row = {**row, "code": row.get("code", code_stamp())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        self._done.add(self._key_of(row))
        return row

    def _key_of(self, row: dict[str, Any]) -> tuple:
        return tuple(row.get(k) for k in self.key)
