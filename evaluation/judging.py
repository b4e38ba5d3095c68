"""Judge metrics scored one question at a time through a log, so an expensive judged scoring can resume.

A judged score costs LM calls: one I_V call per interpretation and passage tried (up to |U_q| for one that cites
no passage) and one I_M call per matched item. Each question's judge-metric scores are appended to a JSONL log
(``ResultLog`` of ``JudgedQuestion``) as soon as they are known. A later scoring reuses a stored line only
when its setting (the judge LM and the model it names, a digest of the judge prompts, the metric names, the
U_q label) and its digest (the answer, the gold interpretations and evidence, the U_q passages) are both
equal, so scores from another judge, prompt, metric set or U_q are never mixed with new ones; their lines
stay in the log, unused. Other code changes (a metric's formula) do not invalidate stored lines: delete the
log to re-judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from disambig.evaluation.proxy import proxy_ids
from disambig.evaluation.records import JudgedQuestion, ResultLog
from disambig.evaluation.session import lm_model
from disambig.metrics import Judge

PREDICTION_FIELDS = ("long_answer", "answers", "interpretations", "passages")


class JudgedScoring:
    """The judge metrics of a scoring run, one question at a time, stored in and reused from ``log``.

    Args:
        metrics: the judge metrics by name (``metric(example, pred)``), all asking ``judge``.
        judge: the ``Judge`` they share; its ``calls`` and ``parse_failures`` are attributed to each question.
        judge_lm: the judge's LM spec (part of the setting a stored line must match).
        proxy: the U_q label (``ProxySource.label``); "" when each prediction's own passages stand in for U_q.
        log: the JSONL file to reuse and extend; None keeps nothing, so nothing resumes.
    """

    def __init__(self, metrics: dict[str, Callable[..., float]], judge: Judge, judge_lm: str, proxy: str = "",
                 log: Path | None = None) -> None:
        self.metrics = dict(metrics)
        self.judge = judge
        self.log = ResultLog(log, JudgedQuestion) if log is not None else None
        self.setting = {"judge_lm": judge_lm, "judge_model": lm_model(judge_lm), "judge_prompts": prompts_digest(),
                        "metrics": sorted(self.metrics), "proxy": proxy}
        self.records: list[JudgedQuestion] = []
        self.reused = 0
        self._stored: dict[tuple[str, str], JudgedQuestion] | None = None

    def scores(self, example: Any, pred: Any) -> dict[str, float]:
        """The judge metrics' scores of ``pred`` for ``example``: from the log when stored, else judged and logged."""
        digest = question_digest(example, pred)
        record = self._stored_records().get((str(example.id), digest))
        if record is None:
            record = self._judge(example, pred, digest)
        else:
            self.reused += 1
        self.records.append(record)
        return dict(record.scores)

    def summary(self) -> dict[str, Any]:
        """The setting, the log, and the judge's counts over every question scored (reused ones included)."""
        return {**self.setting, "log": str(self.log.path) if self.log else None, "questions": len(self.records),
                "reused": self.reused, "judge_calls": sum(r.judge_calls for r in self.records),
                "parse_failures": sum(r.parse_failures for r in self.records)}

    def _judge(self, example: Any, pred: Any, digest: str) -> JudgedQuestion:
        calls, failures = self.judge.calls, self.judge.parse_failures
        scores = {name: float(metric(example, pred)) for name, metric in self.metrics.items()}
        record = JudgedQuestion(id=str(example.id), setting=self.setting, digest=digest, scores=scores,
                                parse_failures=self.judge.parse_failures - failures,
                                judge_calls=self.judge.calls - calls, proxy_ids=proxy_ids(example))
        if self.log is not None:
            self.log.path.parent.mkdir(parents=True, exist_ok=True)
            self.log.append(record)
        self._stored_records()[(record.id, digest)] = record
        return record

    def _stored_records(self) -> dict[tuple[str, str], JudgedQuestion]:
        if self._stored is None:
            loaded = self.log.load() if self.log is not None else []
            self._stored = {(r.id, r.digest): r for r in loaded if r.setting == self.setting}
        return self._stored


def prompts_digest() -> str:
    """A digest of the judge's signatures (their instructions and fields): editing a judge prompt is a new judge."""
    import inspect

    from disambig.signatures import judge

    return hashlib.sha256(inspect.getsource(judge).encode()).hexdigest()[:12]


def question_digest(example: Any, pred: Any) -> str:
    """A digest of what a judged score depends on besides its setting: the answer, the gold and the U_q."""
    payload = {
        "question": str(example.question),
        "gold": list(getattr(example, "interpretations", None) or []),
        "evidence": list(getattr(example, "evidence", None) or []),
        "proxy": list(getattr(example, "proxy_passages", None) or []),
        "prediction": {name: getattr(pred, name, None) for name in PREDICTION_FIELDS},
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
