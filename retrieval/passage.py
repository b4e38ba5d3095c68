"""The one result type every retriever returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """A ranked passage: ``rank`` starts at 1; ``score`` is the retriever's (higher is better)."""

    id: str
    title: str
    text: str
    score: float = 0.0
    rank: int = 0

    def to_dict(self) -> dict[str, str]:
        """``{id, title, text}``, the corpus row this passage came from."""
        return {"id": self.id, "title": self.title, "text": self.text}
