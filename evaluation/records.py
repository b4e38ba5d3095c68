"""Per-question records, appended to a JSONL file as they finish so an interrupted run resumes: a run's answers
and scores (``QuestionResult``) and the judge-metric scores of a re-scoring (``JudgedQuestion``)."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from disambig.data.atomic import write_text
from disambig.data.jsonl import appended_lines


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


@dataclass(frozen=True)
class JudgedQuestion:
    """One question's judge-metric scores and what they depend on (``disambig.evaluation.judging``).

    ``setting`` names the judge LM, the metric set and the proxy U_q; ``digest`` covers the answer, the gold
    interpretations and the U_q passages; ``parse_failures`` and ``judge_calls`` are the judge's counts for it.
    """

    id: str
    setting: dict[str, Any]
    digest: str
    scores: dict[str, float]
    parse_failures: int = 0
    judge_calls: int = 0
    proxy_ids: list[str] = field(default_factory=list)


Record = TypeVar("Record", QuestionResult, JudgedQuestion)


class ResultLog(Generic[Record]):
    """Append-only JSONL of ``kind`` records (``QuestionResult`` by default); thread-safe; tolerates a torn
    last line."""

    def __init__(self, path: Path, kind: type[Record] = QuestionResult) -> None:  # type: ignore[assignment]
        self.path = path
        self.kind = kind
        self._lock = threading.Lock()

    def load(self) -> list[Record]:
        """Records already on disk (a truncated last line, left by a kill, is ignored and rewritten)."""
        if not self.path.exists():
            return []
        results, good_lines = [], []
        lines = appended_lines(self.path)
        for line in lines:
            try:
                results.append(self.kind(**json.loads(line)))  # None (not UTF-8): TypeError
            except (json.JSONDecodeError, TypeError):
                continue
            good_lines.append(line)
        if len(good_lines) != len(lines) or not ends_a_line(self.path):  # the next append must start a line of its own
            write_text(self.path, "".join(f"{line}\n" for line in good_lines))  # a kill here keeps the old log
        return results

    def drop(self, ids: set[str]) -> None:
        """Rewrite the log (atomically) without the records of ``ids``."""
        with self._lock:
            kept = [line for line in appended_lines(self.path)  # load() has left only whole rows
                    if line is not None and json.loads(line).get("id") not in ids]
            write_text(self.path, "".join(f"{line}\n" for line in kept))

    def append(self, result: Record) -> None:
        from disambig.data.jsonl import append_line

        line = json.dumps(asdict(result), ensure_ascii=False)
        with self._lock:
            append_line(self.path, line)


def ends_a_line(path: Path) -> bool:
    """Whether ``path`` is empty or its last byte is a newline."""
    with path.open("rb") as handle:
        if handle.seek(0, 2) == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"
