"""Passage texts on disk: one SQLite table keyed by index row, with an index on the passage id.

A hit's text is read when it is returned, so a 21M-passage corpus need not be in memory (the old layout,
``passages.jsonl`` read whole into a list, is still opened for indexes built before). Both stores answer the same
calls: ``len``, ``store[row]``, ``rows(rows)``, ``by_ids(ids)`` and ``rows_of(ids)``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from disambig.errors import ConfigurationError

PASSAGES_DB = "passages.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
                                     text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shards (number INTEGER PRIMARY KEY, first_row INTEGER NOT NULL, rows INTEGER NOT NULL,
                                   sha256 TEXT NOT NULL DEFAULT '');
"""
BATCH = 500
"""Ids or rows per ``IN (...)`` query (SQLite allows 32,766 parameters)."""


class PassageWriter:
    """Appends shards of passages to a store being built; a shard is written with its number in one transaction,
    so an interrupted build knows exactly which shards it holds.

    Args:
        path: the ``passages.sqlite`` file (created, or reopened to resume).
        corpus: the corpus name, for errors.
    """

    def __init__(self, path: Path, corpus: str) -> None:
        self.path = path
        self.corpus = corpus
        self._db = sqlite3.connect(path)
        self._db.executescript(SCHEMA)

    def has(self, number: int) -> bool:
        return self._db.execute("SELECT 1 FROM shards WHERE number = ?", (number,)).fetchone() is not None

    def digest(self, number: int) -> str | None:
        """The digest shard ``number`` was stored with, or None if it is not stored."""
        row = self._db.execute("SELECT sha256 FROM shards WHERE number = ?", (number,)).fetchone()
        return None if row is None else str(row[0])

    def add(self, number: int, first_row: int, passages: list[dict[str, str]], digest: str = "") -> None:
        """Store shard ``number`` (rows ``first_row...``, its passages' ``digest``) unless it is stored already.

        Raises:
            ConfigurationError: a passage id occurs twice in the corpus.
        """
        if self.has(number):
            return
        try:
            with self._db:
                self._db.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)",
                                     [(first_row + i, p["id"], p["title"], p["text"]) for i, p in enumerate(passages)])
                self._db.execute("INSERT INTO shards VALUES (?, ?, ?, ?)", (number, first_row, len(passages), digest))
        except sqlite3.IntegrityError:
            raise ConfigurationError(f"corpus {self.corpus!r}: duplicate passage id {self._duplicate(passages)!r} "
                                     f"(shard {number}); passage ids must be unique") from None

    def close(self) -> int:
        """Commit, close, and return the number of passages stored."""
        count = self._db.execute("SELECT count(*) FROM passages").fetchone()[0]
        self._db.close()
        return int(count)

    def _duplicate(self, passages: list[dict[str, str]]) -> str:
        seen: set[str] = set()
        for p in passages:
            if p["id"] in seen or self._db.execute("SELECT 1 FROM passages WHERE id = ?", (p["id"],)).fetchone():
                return p["id"]
            seen.add(p["id"])
        return "?"


class SqlitePassages:
    """Read-only passages of a finished index, fetched by row or id; safe to share between threads.

    Raises:
        sqlite3.DatabaseError: the file is not a passage store (the caller names the rebuild command).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._size = int(self._db.execute("SELECT count(*) FROM passages").fetchone()[0])

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, row: int) -> dict[str, str]:
        return self.rows([row])[0]

    def __iter__(self) -> Iterator[dict[str, str]]:
        for start in range(0, self._size, BATCH):
            yield from self.rows(list(range(start, min(start + BATCH, self._size))))

    def rows(self, rows: list[int]) -> list[dict[str, str]]:
        """The passages at index ``rows``, in that order.

        Raises:
            IndexError: a row is not in the store.
        """
        found = self._select("row", rows)
        missing = [r for r in rows if r not in found]
        if missing:
            raise IndexError(f"rows {missing[:5]} are not in the passage store {str(self.path)!r} of {self._size}")
        return [found[r] for r in rows]

    def by_ids(self, ids: list[str]) -> list[dict[str, str] | None]:
        """The passages with ``ids``, in that order (None for an id the store lacks)."""
        found = {p["id"]: p for p in self._select("id", ids).values()}
        return [found.get(i) for i in ids]

    def rows_of(self, ids: list[str]) -> list[int | None]:
        """The index row of each id (None for an id the store lacks)."""
        rows = {p["id"]: row for row, p in self._select("id", ids).items()}
        return [rows.get(i) for i in ids]

    def _select(self, column: str, keys: list[object]) -> dict[int, dict[str, str]]:
        found: dict[int, dict[str, str]] = {}
        for start in range(0, len(keys), BATCH):
            chunk = list(dict.fromkeys(keys[start : start + BATCH]))
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(f"SELECT row, id, title, text FROM passages WHERE {column} IN ({marks})",
                                        chunk).fetchall()
            found.update({row: {"id": pid, "title": title, "text": text} for row, pid, title, text in rows})
        return found


class MemoryPassages:
    """The same calls over passages held in a list (indexes built before the SQLite store, small test corpora)."""

    def __init__(self, passages: list[dict[str, str]]) -> None:
        self._passages = passages
        self._rows: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._passages)

    def __getitem__(self, row: int) -> dict[str, str]:
        return self._passages[row]

    def __iter__(self) -> Iterator[dict[str, str]]:
        return iter(self._passages)

    def rows(self, rows: list[int]) -> list[dict[str, str]]:
        return [self._passages[r] for r in rows]

    def by_ids(self, ids: list[str]) -> list[dict[str, str] | None]:
        return [None if r is None else self._passages[r] for r in self.rows_of(ids)]

    def rows_of(self, ids: list[str]) -> list[int | None]:
        if self._rows is None:
            self._rows = {p["id"]: row for row, p in enumerate(self._passages)}
        return [self._rows.get(i) for i in ids]


Passages = SqlitePassages | MemoryPassages


def as_passages(passages: Passages | list[dict[str, str]]) -> Passages:
    """A store as given, or a list of ``{id, title, text}`` wrapped in ``MemoryPassages``."""
    return passages if isinstance(passages, SqlitePassages | MemoryPassages) else MemoryPassages(list(passages))
