"""Score stored predictions (any system's) against a question set: the engine behind ``disambig score``.

A prediction row is a JSON object with ``question`` (and ``id`` when known) and any of ``long_answer``,
``answers`` (short answers), ``interpretations`` (``[{question, answer, passage_ids?}]``) and ``passages``
(``[{id?, title, text}]``); a count program's rows also carry ``count`` and ``retained_chunk_ids``, and a row whose
long answer ends with a program's conflict note carries it as ``conflict_note`` (taken out before scoring). Rows are
matched to the dataset by ``id`` when the row has one the dataset knows, else by the question text (lower-cased,
whitespace collapsed). Judge metrics can be scored through a ``JudgedScoring`` (``disambig.evaluation.judging``),
which stores each question's judged scores as they are computed and reuses them on a re-run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from disambig.evaluation.judging import JudgedScoring
from disambig.evaluation.report import metric_means


@dataclass(frozen=True)
class ScoreResult:
    """Corpus values by metric and each row's scores, in the order of the prediction rows; ``judge`` is the
    judged scoring's summary (``JudgedScoring.summary``: judge LM, U_q, calls, parse failures), None without one."""

    questions: int
    metrics: dict[str, float]
    per_question: list[dict[str, Any]] = field(default_factory=list)
    judge: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"questions": self.questions, "metrics": self.metrics, "judge": self.judge,
                "per_question": self.per_question}


def question_key(text: str) -> str:
    return " ".join(str(text or "").lower().split())


def match_rows(rows: list[dict[str, Any]], examples: list[Any]) -> list[Any]:
    """The example each row answers (by id, else by question text); unmatched rows raise, naming a few."""
    by_id = {str(ex.id): ex for ex in examples}
    by_question = {question_key(ex.question): ex for ex in examples}
    matched, missing = [], []
    for number, row in enumerate(rows, start=1):
        check_row(number, row)
        example = by_id.get(str(row.get("id"))) if row.get("id") is not None else None
        example = example or by_question.get(question_key(row["question"]))
        if example is None:
            missing.append(f"row {number} ({row.get('id') or row['question']!r})")
        matched.append(example)
    if missing:
        shown = "; ".join(missing[:5]) + (f"; and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(f"{len(missing)} prediction row(s) match no question of the dataset by id or question "
                         f"text: {shown}. Score against the dataset they answer (--dataset)")
    return matched


def check_row(number: int, row: dict[str, Any]) -> None:
    """Refuse prediction row ``number`` unless its fields have the types the metrics read (see the module doc).

    Raises:
        ValueError: one line naming the row, the field, what it must be and what it is.
    """
    if "question" not in row:
        raise ValueError(f"prediction row {number} has no 'question'; every row needs the question it answers")
    wrong = _wrong_field(row)
    if wrong:
        field_name, must = wrong
        value = row[field_name]
        raise ValueError(f"prediction row {number}: {field_name!r} must be {must}, got {type(value).__name__} "
                         f"{_shown(value)}")


def _wrong_field(row: dict[str, Any]) -> tuple[str, str] | None:
    """The first field of ``row`` whose type the metrics cannot read, and what it must be; None if all can be."""
    text, number = (str, type(None)), (int, float, type(None))
    checks = (("question", "text", lambda v: isinstance(v, str)),
              ("id", "text, a number or null", lambda v: isinstance(v, (str, int, float, type(None)))),
              ("long_answer", "text or null", lambda v: isinstance(v, text)),
              ("answers", "a list of texts", lambda v: _list_of(v, str)),
              ("interpretations", "a list of {question, answer, passage_ids} objects", _readings),
              ("passages", "a list of {id, title, text} objects", lambda v: _list_of(v, dict)),
              ("conflict_note", "text or null", lambda v: isinstance(v, text)),
              ("count", "a number or null", lambda v: isinstance(v, number) and not isinstance(v, bool)),
              ("retained_chunk_ids", "a list of ids", lambda v: _list_of(v, (str, int))))
    return next(((name, must) for name, must, ok in checks if name in row and not ok(row[name])), None)


def _list_of(value: Any, kind: type | tuple[type, ...]) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, kind) for v in value))


def _readings(value: Any) -> bool:
    return _list_of(value, dict) and all(
        isinstance(r.get(key), (str, type(None))) for r in value or [] for key in ("question", "answer")) and all(
        _list_of(r.get("passage_ids"), (str, int)) for r in value or [])


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def answered_examples(rows: list[dict[str, Any]], examples: list[Any]) -> list[Any]:
    """The examples the rows answer, each once, in the order first answered (to attach a U_q to, say)."""
    return list({str(ex.id): ex for ex in match_rows(rows, examples)}.values())


def to_prediction(row: dict[str, Any]) -> Any:
    """A ``dspy.Prediction`` with the common fields, empty where the row has none, and a count program's
    ``count`` and ``retained_chunk_ids`` and a conflict note when the row has them (the metrics read those)."""
    import dspy

    carried = {k: row[k] for k in ("count", "retained_chunk_ids", "conflict_note") if row.get(k) is not None}
    return dspy.Prediction(
        long_answer=str(row.get("long_answer") or ""), answers=list(row.get("answers") or []),
        interpretations=[dict(i) for i in row.get("interpretations") or []], passages=list(row.get("passages") or []),
        **carried,
    )


def score_predictions(
    rows: list[dict[str, Any]],
    examples: list[Any],
    metrics: dict[str, Any],
    judged: JudgedScoring | None = None,
    on_row: Callable[[int, int], None] | None = None,
) -> ScoreResult:
    """Score every row with every metric; report corpus values as ``evaluation.report.metric_means`` does.

    Args:
        rows: prediction rows (see the module docstring).
        examples: the question set, from ``disambig.data.load_dataset`` (with ``proxy_passages`` when a shared
            U_q was attached, ``disambig.evaluation.proxy``).
        metrics: metric callables by name (``metric(example, pred)``), including the inputs of corpus metrics
            (``disambig.metrics.with_inputs``). A metric that raises stops the scoring: it is a bug or a
            missing resource, never a property of one answer.
        judged: scores the metrics it names (the judge metrics) through its log, reusing stored questions;
            the other metrics are computed here every time.
        on_row: called as ``on_row(done, total)`` after each row (progress).
    """
    if not rows:
        raise ValueError("no prediction rows to score; the file is empty")
    matched = match_rows(rows, examples)
    names = list(dict.fromkeys([*metrics, *(judged.metrics if judged else ())]))
    plain = {name: metric for name, metric in metrics.items() if judged is None or name not in judged.metrics}
    per_question = []
    for done, (row, example) in enumerate(zip(rows, matched, strict=True), start=1):
        pred = to_prediction(row)
        scores = {name: float(metric(example, pred)) for name, metric in plain.items()}
        scores |= judged.scores(example, pred) if judged else {}
        per_question.append({"id": str(example.id), "question": example.question,
                             "scores": {name: scores[name] for name in names}})
        if on_row is not None:
            on_row(done, len(rows))
    means = metric_means([q["scores"] for q in per_question], names)
    return ScoreResult(len(rows), means, per_question, judged.summary() if judged else None)


def mean_of(per_question: list[dict[str, Any]], name: str) -> float:
    """Plain mean of one metric over the rows (for comparisons with per-question reference values)."""
    return statistics.fmean(q["scores"][name] for q in per_question)
