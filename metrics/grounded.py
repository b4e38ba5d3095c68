"""Grounded precision, recall and F1 with an LLM judge (VerDICt paper, section 4.3 and Appendix A).

V(q, p) in {0, 1} is the judge's verdict (prompt I_V) that passage p supports the answer to interpretation q;
a set of passages supports q when any one of them does.

    G-Precision = 1/|Q^| * sum_{q^ in Q^} V(q^, p^)                                   (Eq. 11, 19)
    Q-bar       = {q in Q^ u Q~ | V(q, p)}                                             (Eq. 22)
    G-Recall    = 1/|Q-bar| * sum_{q in Q-bar} [q is produced, grounded, by the model] (Eq. 12, 21)
    G-F1        = 2 * G-P * G-R / (G-P + G-R)                                          (section 5)

Q^ are the predicted interpretations, p^ the passages each one cites (``passage_ids``), or, when it cites none,
every passage the program retrieved (U_q, the paper's proxy for the corpus). Q~ are the gold interpretations;
a gold one is grounded when the example's evidence passages or the retrieved passages support one of its
answers. Q-bar is the union of the grounded gold and grounded predicted interpretations: a grounded prediction
the judge matches (prompt I_M) to a grounded gold one is the same member, the other grounded predictions are
added once each (counted as distinct by prompt I_D). A gold member of Q-bar counts for recall when a grounded
prediction matches it; an added predicted member counts by construction. So generating an ungrounded reading
("Harry Potter" in an enterprise corpus) earns nothing, and grounded readings the annotators missed still do.

Conventions: an interpretation without an answer cannot be supported (V = 0, no judge call); an empty Q^ has
G-Precision 0; an empty Q-bar has G-Recall 0; a program that retrieves nothing and cites nothing (closed book)
grounds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from disambig.metrics.judge import Judge
from disambig.metrics.mrecall import passage_text


@dataclass(frozen=True)
class GroundedScores:
    """Counts behind G-Precision and G-Recall for one question."""

    grounded_predictions: int
    predictions: int
    covered: int
    grounded_total: int

    @property
    def precision(self) -> float:
        return self.grounded_predictions / self.predictions if self.predictions else 0.0

    @property
    def recall(self) -> float:
        return self.covered / self.grounded_total if self.grounded_total else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def grounded_scores(example: Any, pred: Any, judge: Judge) -> GroundedScores:
    """Judge one prediction: which predicted and gold interpretations are grounded, and which gold ones are found."""
    question = str(example.question)
    predicted = list(getattr(pred, "interpretations", []) or [])
    grounded_pred = grounded_predictions(example, pred, judge)
    found = [_describe(p, question) for p in grounded_pred]
    gold = [_describe(g, question) for g in grounded_gold(example, pred, judge)]
    covered_gold = sum(judge.match(question, g, found) for g in gold)
    added = [_question(p, question) for p, text in zip(grounded_pred, found, strict=True)
             if not judge.match(question, text, gold)]
    n_added = judge.count_unique(question, added)
    return GroundedScores(len(grounded_pred), len(predicted), covered_gold + n_added, len(gold) + n_added)


def grounded_predictions(example: Any, pred: Any, judge: Judge) -> list[dict]:
    """The predicted interpretations q^ with V(q^, p^) = 1: p^ = the cited passages, else all retrieved ones."""
    retrieved = _retrieved(pred)
    by_id = {str(p.get("id")): passage_text(p) for p in getattr(pred, "passages", []) or [] if isinstance(p, dict)}
    return [
        p for p in getattr(pred, "interpretations", []) or []
        if _supported(judge, _question(p, example.question), str(p.get("answer") or ""), _cited(p, by_id) or retrieved)
    ]


def grounded_gold(example: Any, pred: Any, judge: Judge) -> list[dict]:
    """The gold interpretations supported by the example's evidence or the retrieved passages (proxies for C)."""
    evidence = [passage_text(e) for e in getattr(example, "evidence", []) or []]
    passages = list(dict.fromkeys(evidence + _retrieved(pred)))
    return [
        g for g in example.interpretations
        if _supported(judge, _question(g, example.question), " / ".join(g.get("answers") or []), passages)
    ]


def g_precision(example: Any, pred: Any, judge: Judge) -> float:
    """Share of predicted interpretations whose cited (else retrieved) passages support their answer."""
    predicted = getattr(pred, "interpretations", []) or []
    return len(grounded_predictions(example, pred, judge)) / len(predicted) if predicted else 0.0


def g_recall(example: Any, pred: Any, judge: Judge) -> float:
    """Share of the grounded interpretations (gold or predicted) that the model produced, grounded."""
    return grounded_scores(example, pred, judge).recall


def g_f1(example: Any, pred: Any, judge: Judge) -> float:
    """Harmonic mean of G-Precision and G-Recall."""
    return grounded_scores(example, pred, judge).f1


def _retrieved(pred: Any) -> list[str]:
    return [passage_text(p) for p in getattr(pred, "passages", []) or []]


def _supported(judge: Judge, question: str, answer: str, passages: list[str]) -> bool:
    if not answer.strip():
        return False
    return any(judge.verify(question, answer, passage) for passage in passages)


def _cited(interpretation: dict, by_id: dict[str, str]) -> list[str]:
    return [by_id[str(i)] for i in interpretation.get("passage_ids") or [] if str(i) in by_id]


def _question(interpretation: dict, fallback: str) -> str:
    return str(interpretation.get("question") or "").strip() or fallback


def _describe(interpretation: dict, fallback: str) -> str:
    answers = interpretation.get("answers") or [interpretation.get("answer") or ""]
    return f"{_question(interpretation, fallback)} -> {' / '.join(str(a) for a in answers)}"
