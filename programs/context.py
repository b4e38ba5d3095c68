"""Passages as the numbered context block the answer-writing steps read, and back from numbers to passages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def format_passages(passages: Sequence[Any]) -> str:
    """``[1] Title | text`` lines, numbered from 1 in the given order (an empty list gives ``(none)``)."""
    if not passages:
        return "(none)"
    return "\n".join(f"[{n}] {p.title} | {p.text}" if p.title else f"[{n}] {p.text}" for n, p in enumerate(passages, 1))


def passage_at(passages: Sequence[Any], number: int | None) -> Any | None:
    """The passage an LM cited as ``[number]``, or None when the number is out of range."""
    if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= len(passages):
        return passages[number - 1]
    return None


def unique(passages: Iterable[Any], limit: int | None = None) -> list[Any]:
    """Passages without repeated ids, first occurrence kept, at most ``limit`` of them."""
    seen: set[str] = set()
    out = []
    for p in passages:
        if p.id not in seen:
            seen.add(p.id)
            out.append(p)
    return out[:limit] if limit is not None else out
