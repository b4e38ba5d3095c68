"""Grounded precision and recall with an LLM judge (VerDICt paper, section 4.3, Appendix A, and its code).

V(q, p) in {0, 1} is the judge's verdict (prompt I_V) that passage p supports interpretation q with its
answer; an interpretation without an answer (a pseudo-interpretation) is judged with an empty answer, as
VerDICt's code does. p^ is the passage(s) the interpretation cites; when it cites none, the proxy U_q is
used and V = 1 if any proxy passage supports it. U_q is the example's ``proxy_passages`` when the caller
supplies one shared list per question (VerDICt uses one top-20 list for every system; ``--proxy-top`` on
``disambig score``/``eval`` attaches one, ``disambig.evaluation.proxy``), else the prediction's own
``passages`` (then programs are judged against different evidence; say so when comparing).

    G-Precision = (1/|Q^|) sum_{q^ in Q^} V(q^, p^)                                   (Eq. 11 / 19)
    G-Recall (released code, the default). With M_R(q~) the judge's match (I_M, questions only) of a gold
      interpretation against all predicted ones, M_P(q^) of a prediction against all gold ones, and
      A = #{q^ : M_P(q^) = 0 and V(q^, p^) = 1} (grounded readings the annotators missed):
        G-R = (sum_{q~} M_R(q~) + A) / (|Q~| + A)
      Gold interpretations are not grounded, any prediction may cover one, added ones are not de-duplicated.
    G-Recall ``paper`` mode (``g-recall-paper``), our reading of Eq. 12/21-22: the gold set is first grounded
      (V against the example's evidence and U_q), only grounded predictions cover gold, and the added
      predictions are counted after de-duplication by I_D.
    G-F1 = 2PR/(P+R). Per question it serves optimisers; reports give the corpus value from the means of
      G-P and G-R (``corpus``), which is what all of VerDICt's Table 2 G-F1 values equal.

Conventions: an empty Q^ has G-Precision 0 per question (VerDICt's code gives NaN; the report's
``g-precision-micro`` = total grounded / total judged interpretations skips such questions); an empty
denominator gives G-Recall 0; an item whose judge reply cannot be parsed is skipped (left out of numerator
and denominator), as VerDICt's code skips it, and counted in ``Judge.parse_failures``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from disambig.metrics.judge import Judge
from disambig.metrics.mrecall import passage_text

RecallMode = Literal["released", "paper"]


@dataclass(frozen=True)
class GroundedScores:
    """Counts behind G-Precision and G-Recall for one question (items with unparsable verdicts left out)."""

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


def grounded_scores(example: Any, pred: Any, judge: Judge, mode: RecallMode = "released") -> GroundedScores:
    """Judge one prediction: grounded predictions (G-P) and the G-Recall counts of ``mode``."""
    predicted = list(getattr(pred, "interpretations", []) or [])
    verdicts = [grounded(p, example, pred, judge) for p in predicted]
    grounded_pred = [p for p, v in zip(predicted, verdicts, strict=True) if v]
    judged = sum(v is not None for v in verdicts)
    if mode == "paper":
        covered, total = _paper_recall(example, pred, judge, grounded_pred)
    else:
        covered, total = _released_recall(example, judge, predicted, verdicts)
    return GroundedScores(len(grounded_pred), judged, covered, total)


def _released_recall(example: Any, judge: Judge, predicted: list[dict], verdicts: list[bool | None]) -> tuple[int, int]:
    question = str(example.question)
    found = [_question(p, question) for p in predicted]
    gold = [_question(g, question) for g in example.interpretations]
    gold_matches = [judge.match(question, g, found) for g in gold]
    added = sum(
        bool(v) and judge.match(question, q, gold) is False for q, v in zip(found, verdicts, strict=True)
    )
    judged_gold = [m for m in gold_matches if m is not None]
    return sum(judged_gold) + added, len(judged_gold) + added


def _paper_recall(example: Any, pred: Any, judge: Judge, grounded_pred: list[dict]) -> tuple[int, int]:
    question = str(example.question)
    found = [_question(p, question) for p in grounded_pred]
    gold = [_question(g, question) for g in grounded_gold(example, pred, judge)]
    gold_matches = [judge.match(question, g, found) for g in gold]
    added = [q for q in found if judge.match(question, q, gold) is False]
    n_added = judge.count_unique(question, added)
    judged_gold = [m for m in gold_matches if m is not None]
    return sum(judged_gold) + n_added, len(judged_gold) + n_added


def grounded(interpretation: dict, example: Any, pred: Any, judge: Judge) -> bool | None:
    """V(q^, p^): the cited passages, else the proxy U_q, support the interpretation (None: unparsable)."""
    by_id = {str(p.get("id")): passage_text(p) for p in getattr(pred, "passages", []) or [] if isinstance(p, dict)}
    passages = _cited(interpretation, by_id) or proxy_passages(example, pred)
    return _supported(judge, _question(interpretation, str(example.question)),
                      str(interpretation.get("answer") or ""), passages)


def grounded_predictions(example: Any, pred: Any, judge: Judge) -> list[dict]:
    """The predicted interpretations q^ with V(q^, p^) = 1."""
    return [p for p in getattr(pred, "interpretations", []) or [] if grounded(p, example, pred, judge)]


def grounded_gold(example: Any, pred: Any, judge: Judge) -> list[dict]:
    """Paper mode only: gold interpretations supported by the example's evidence or U_q (Eq. 22)."""
    evidence = [passage_text(e) for e in getattr(example, "evidence", []) or []]
    passages = list(dict.fromkeys(evidence + proxy_passages(example, pred)))
    return [
        g for g in example.interpretations
        if _supported(judge, _question(g, str(example.question)), " / ".join(g.get("answers") or []), passages)
    ]


def proxy_passages(example: Any, pred: Any) -> list[str]:
    """U_q: the example's shared ``proxy_passages`` when given, else the prediction's own passages."""
    shared = getattr(example, "proxy_passages", None)
    source = shared if shared is not None else getattr(pred, "passages", []) or []
    return [passage_text(p) for p in source]


def precision_counts(example: Any, pred: Any, judge: Judge) -> tuple[int, int]:
    """(grounded, judged) predicted interpretations, with grounding verdicts only (no match calls)."""
    verdicts = [grounded(p, example, pred, judge) for p in getattr(pred, "interpretations", []) or []]
    return sum(bool(v) for v in verdicts), sum(v is not None for v in verdicts)


def g_precision(example: Any, pred: Any, judge: Judge) -> float:
    """Share of (judged) predicted interpretations whose cited passages, else U_q, support them."""
    grounded_n, judged = precision_counts(example, pred, judge)
    return grounded_n / judged if judged else 0.0


def grounded_count(example: Any, pred: Any, judge: Judge) -> float:
    """How many predicted interpretations are grounded (for the micro G-Precision of the report)."""
    return float(precision_counts(example, pred, judge)[0])


def judged_count(example: Any, pred: Any, judge: Judge) -> float:
    """How many predicted interpretations got a parsable grounding verdict."""
    return float(precision_counts(example, pred, judge)[1])


def g_recall(example: Any, pred: Any, judge: Judge) -> float:
    """G-Recall by VerDICt's released formula."""
    return grounded_scores(example, pred, judge).recall


def g_recall_paper(example: Any, pred: Any, judge: Judge) -> float:
    """G-Recall with the gold set grounded first (our reading of Eq. 22)."""
    return grounded_scores(example, pred, judge, mode="paper").recall


def g_f1(example: Any, pred: Any, judge: Judge) -> float:
    """Per-question harmonic mean of G-Precision and G-Recall (reports use the corpus value)."""
    return grounded_scores(example, pred, judge).f1


def _supported(judge: Judge, question: str, answer: str, passages: list[str]) -> bool | None:
    """True at the first supporting passage; None when every verdict was unparsable; else False."""
    parsed = False
    for passage in passages:
        verdict = judge.verify(question, answer, passage)
        if verdict:
            return True
        parsed = parsed or verdict is not None
    return False if parsed or not passages else None


def _cited(interpretation: dict, by_id: dict[str, str]) -> list[str]:
    return [by_id[str(i)] for i in interpretation.get("passage_ids") or [] if str(i) in by_id]


def _question(interpretation: dict, fallback: str) -> str:
    return str(interpretation.get("question") or "").strip() or fallback
