"""GEPA feedback: the score plus, in words, which gold interpretations the prediction missed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def explain(example: Any, pred: Any) -> str:
    """Name the covered and missed interpretations (by the token D-F1 rule) for a reflection LM."""
    from disambig.metrics.disambiguation import answer_covered

    predicted = [str(i.get("answer") or "") for i in getattr(pred, "interpretations", []) or []]
    long_answer = str(getattr(pred, "long_answer", "") or "")
    missed, covered = [], []
    for gold in getattr(example, "interpretations", []) or []:
        hit = any(answer_covered(a, predicted, long_answer) for a in gold["answers"])
        (covered if hit else missed).append(f"{gold['question']} -> {' / '.join(gold['answers'][:3])}")
    if not missed:
        return f"All {len(covered)} interpretations were covered."
    lines = [f"Covered {len(covered)} of {len(covered) + len(missed)} interpretations. Missed:"]
    lines += [f"- {m}" for m in missed]
    return "\n".join(lines)


def with_feedback(metric: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``metric(example, pred, trace)`` in GEPA's five-argument form returning score + feedback."""
    import dspy

    def feedback_metric(gold: Any, pred: Any, trace: Any = None, pred_name: str | None = None,
                        pred_trace: Any = None) -> Any:
        score = float(metric(gold, pred))
        return dspy.Prediction(score=score, feedback=f"Score {score:.2f}. {explain(gold, pred)}")

    return feedback_metric
