"""VerDICt's ungrounded ("existing") interpretation metrics (section 4.3, Appendix A Eq. 14-18, its code).

    num-interpretations = |Q^|, the predicted interpretations, counted before any de-duplication
    sufficient@k        = [ |I_D(Q^)| >= k ]: the judge de-duplicates the predicted sub-questions (prompt I_D),
                          the question has sufficient diversity when k or more remain (the paper's
                          Sufficient%; k is not stated there, VerDICt's code reports k = 1..5)
    u-precision         = (1/|Q^|) sum_{q^} Match(q^, Q~)        (Eq. 14-15, I_M on questions only)
    u-recall            = (1/|Q~|) sum_{q~} Match(q~, Q^)        (Eq. 18)

An empty Q^ scores 0 on u-precision and u-recall; an item whose match reply cannot be parsed is skipped.
"""

from __future__ import annotations

from typing import Any

from disambig.metrics.judge import Judge


def predicted_questions(example: Any, pred: Any) -> list[str]:
    question = str(example.question)
    return [str(p.get("question") or "").strip() or question for p in getattr(pred, "interpretations", []) or []]


def gold_questions(example: Any) -> list[str]:
    return [str(g.get("question") or "").strip() or str(example.question) for g in example.interpretations]


def num_interpretations(example: Any, pred: Any) -> float:
    """|Q^|."""
    return float(len(getattr(pred, "interpretations", []) or []))


def sufficient_at(k: int) -> Any:
    """``sufficient@k`` as a judge metric: 1.0 when at least k distinct sub-questions remain after I_D."""
    if k < 1:
        raise ValueError(f"k={k} must be at least 1 for sufficient@k")

    def score(example: Any, pred: Any, judge: Judge) -> float:
        return float(judge.count_unique(str(example.question), predicted_questions(example, pred)) >= k)

    return score


def _share_matched(question: str, items: list[str], against: list[str], judge: Judge) -> float:
    verdicts = [v for v in (judge.match(question, item, against) for item in items) if v is not None]
    return sum(verdicts) / len(verdicts) if verdicts else 0.0


def u_precision(example: Any, pred: Any, judge: Judge) -> float:
    """Share of predicted sub-questions the judge finds among the gold ones."""
    return _share_matched(str(example.question), predicted_questions(example, pred), gold_questions(example), judge)


def u_recall(example: Any, pred: Any, judge: Judge) -> float:
    """Share of gold sub-questions the judge finds among the predicted ones."""
    return _share_matched(str(example.question), gold_questions(example), predicted_questions(example, pred), judge)
