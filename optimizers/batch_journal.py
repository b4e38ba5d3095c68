"""The rows a running ``disambig batch`` has answered since it last wrote its output table, kept on disk one by one.

Rewriting a whole table (CSV, Parquet) after every row would cost more than the row as the table grows, so each
answered row is first appended, as one whole line of JSON flushed and synced, to a journal beside the output
(``.NAME.rows.jsonl``). The table is rewritten atomically from time to time and at the end, and the journal emptied
after it. A run killed in between leaves its answers in the journal; the next run folds them into the table first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from disambig.data.jsonl import append_line, appended_lines
from disambig.optimizers.batch_io import row_line, table_of


class AnswerJournal:
    """The journal of the batch writing ``output``."""

    def __init__(self, output: Path) -> None:
        self.path = output.with_name(f".{output.name}.rows.jsonl")

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Add answered rows, each a whole line on disk before this returns."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for row in rows:
            append_line(self.path, row_line(row))

    def table(self) -> Any:
        """The journal's rows as a DataFrame (None when it holds none); a line torn by a kill is skipped, so its row
        counts as not answered."""
        if not self.path.exists():
            return None
        rows = []
        for line in appended_lines(self.path):
            try:
                row = json.loads(line)  # None (not UTF-8): TypeError
            except (json.JSONDecodeError, TypeError):
                continue
            if isinstance(row, dict):
                rows.append(row)
        return table_of(rows) if rows else None

    def clear(self) -> None:
        """Forget the rows (call once the output table holds them)."""
        self.path.unlink(missing_ok=True)
