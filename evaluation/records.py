"""Per-question results, appended to a JSONL file as they finish so an interrupted run resumes."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class QuestionResult:
    """One question's outcome: the prediction (or the error that replaced it), its scores, and the code
    that produced it (``code``: see ``disambig.evaluation.code_version``; empty on rows written before stamps)."""

    id: str
    question: str
    prediction: dict[str, Any] | None
    scores: dict[str, float]
    error: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    code: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None


class ResultLog:
    """Append-only JSONL of ``QuestionResult``s; thread-safe; tolerates a torn last line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> list[QuestionResult]:
        """Results already on disk (a truncated last line, left by a kill, is ignored and rewritten)."""
        if not self.path.exists():
            return []
        results, good_lines = [], []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                results.append(QuestionResult(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
            good_lines.append(line)
        self.path.write_text("".join(f"{line}\n" for line in good_lines), encoding="utf-8")
        return results

    def append(self, result: QuestionResult) -> None:
        line = json.dumps(asdict(result), ensure_ascii=False)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
