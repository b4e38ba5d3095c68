"""The registry of DSPy metrics: each reads the common example and prediction fields.

Judge metrics (``JUDGE_METRICS``) also need a judge LM, distinct from the program's: ``get_metric(name, judge_lm)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from disambig.errors import ConfigurationError
from disambig.metrics.adf_judge import disambiguation_score, similarity_score
from disambig.metrics.disambiguation import coverage
from disambig.metrics.grounded import g_f1, g_precision, g_recall
from disambig.metrics.judge import Judge
from disambig.metrics.mrecall import mrecall_at_k
from disambig.metrics.qa import answer_set_f1, exact_match, token_f1
from disambig.metrics.rouge import rouge_l

PASS_THRESHOLD = 0.5


def _predicted_answers(pred: Any) -> list[str]:
    answers = [str(i.get("answer") or "") for i in getattr(pred, "interpretations", []) or []]
    return [a for a in answers if a] or [str(getattr(pred, "long_answer", "") or "")]


def _gold_answers(example: Any) -> list[str]:
    return [a for i in example.interpretations for a in i["answers"]]


def _coverage(example: Any, pred: Any) -> Any:
    return coverage(example.interpretations, getattr(pred, "interpretations", []) or [],
                    str(getattr(pred, "long_answer", "") or ""))


def em(example: Any, pred: Any) -> float:
    return max(exact_match(a, _gold_answers(example)) for a in _predicted_answers(pred))


def f1(example: Any, pred: Any) -> float:
    return max(token_f1(a, _gold_answers(example)) for a in _predicted_answers(pred))


def answer_f1(example: Any, pred: Any) -> float:
    return answer_set_f1(_predicted_answers(pred), [i["answers"] for i in example.interpretations])


def d_f1(example: Any, pred: Any) -> float:
    return _coverage(example, pred).recall


def d_precision(example: Any, pred: Any) -> float:
    return _coverage(example, pred).precision


def rouge(example: Any, pred: Any) -> float:
    return rouge_l(str(getattr(pred, "long_answer", "") or ""), list(getattr(example, "long_answers", []) or []))


def dr(example: Any, pred: Any) -> float:
    return math.sqrt(d_f1(example, pred) * rouge(example, pred))


def mrecall(k: int) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        return mrecall_at_k(example.interpretations, list(getattr(pred, "passages", []) or []), k)

    return score


def as_dspy_metric(name: str, fn: Callable[[Any, Any], float]) -> Callable[..., float | bool]:
    """Wrap ``fn(example, pred)`` as ``metric(example, pred, trace=None)``."""

    def metric(example: Any, pred: Any, trace: Any = None) -> float | bool:
        value = float(fn(example, pred))
        return value >= PASS_THRESHOLD if trace is not None else value

    metric.__name__ = name.replace("-", "_").replace("@", "_at_")
    return metric


METRICS: dict[str, Callable[[Any, Any], float]] = {
    "em": em, "f1": f1, "answer-f1": answer_f1, "d-f1": d_f1, "d-precision": d_precision,
    "rouge-l": rouge, "dr": dr, "mrecall@5": mrecall(5),
}

JUDGE_METRICS: dict[str, Callable[[Any, Any, Judge], float]] = {
    "g-precision": g_precision, "g-recall": g_recall, "g-f1": g_f1,
    "judge-similarity": similarity_score, "judge-disambiguation": disambiguation_score,
}


def is_judge_metric(name: str) -> bool:
    return name in JUDGE_METRICS


def get_metric(name: str, judge_lm: Any = None) -> Callable[..., float | bool]:
    """A DSPy metric by registry name; ``mrecall@K`` takes any positive K.

    Args:
        name: a name of ``METRICS`` or ``JUDGE_METRICS``, or ``mrecall@K``.
        judge_lm: the LM the judge metrics ask (a ``dspy.LM``), or a ``Judge`` to share its memoised verdicts
            between metrics (G-Precision, G-Recall and G-F1 ask the same questions). Ignored by other metrics.
    """
    match = re.fullmatch(r"mrecall@(\d+)", name)
    if match and int(match.group(1)) > 0:
        return as_dspy_metric(name, mrecall(int(match.group(1))))
    if name in JUDGE_METRICS:
        return as_dspy_metric(name, _with_judge(JUDGE_METRICS[name], _judge(name, judge_lm)))
    if name not in METRICS:
        raise ConfigurationError(
            f"unknown metric {name!r}; choose one of: {', '.join([*METRICS, *JUDGE_METRICS])} (or mrecall@K)"
        )
    return as_dspy_metric(name, METRICS[name])


def _judge(name: str, judge_lm: Any) -> Judge:
    if judge_lm is None:
        raise ConfigurationError(
            f"metric {name!r} is scored by an LLM judge and no judge LM was given; pass get_metric({name!r}, "
            "judge_lm=dspy.LM(...)) (CLI: --judge-lm SPEC, or the program's --lm is used)"
        )
    return judge_lm if isinstance(judge_lm, Judge) else Judge(judge_lm)


def _with_judge(fn: Callable[[Any, Any, Judge], float], judge: Judge) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        return fn(example, pred, judge)

    return score
