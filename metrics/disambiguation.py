"""D-F1 (ADF paper, section 5.2.1): the share of gold interpretations a prediction covers.

An interpretation is covered when the prediction reaches token F1 >= 0.5 with one of its answers. The
prediction's candidate strings are its interpretations' answers and, for the long answer, every window of
the gold answer's length (so "Cristiano Ronaldo" inside a paragraph counts; a paragraph compared whole
with a two-word answer never would). This token-overlap D-F1 is *not* ASQA's Disambig-F1, which runs a QA
model over the long answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from disambig.metrics.normalize import normalize, tokens
from disambig.metrics.qa import f1_pair

COVER_THRESHOLD = 0.5


@dataclass(frozen=True)
class Coverage:
    """``recall`` is the paper's D-F1; ``precision`` is the share of predicted interpretations that match one."""

    covered: int
    total: int
    matched_predictions: int
    predictions: int

    @property
    def recall(self) -> float:
        return self.covered / self.total if self.total else 0.0

    @property
    def precision(self) -> float:
        return self.matched_predictions / self.predictions if self.predictions else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def best_span_f1(text: str, answer: str) -> float:
    """Max token F1 between ``answer`` and any window of ``text`` as long as the answer."""
    words, gold = tokens(text), tokens(answer)
    if not words or not gold:
        return 0.0
    width = len(gold)
    windows = (" ".join(words[i : i + width]) for i in range(max(1, len(words) - width + 1)))
    return max(f1_pair(window, answer) for window in windows)


def answer_covered(answer: str, predicted_answers: list[str], long_answer: str) -> bool:
    if any(f1_pair(p, answer) >= COVER_THRESHOLD for p in predicted_answers if normalize(p)):
        return True
    return best_span_f1(long_answer, answer) >= COVER_THRESHOLD


def coverage(interpretations: list[dict], predicted: list[dict], long_answer: str = "") -> Coverage:
    """Count covered gold interpretations and predicted interpretations that match some gold one."""
    answers = [str(p.get("answer") or "") for p in predicted]
    covered = sum(
        any(answer_covered(a, answers, long_answer) for a in gold.get("answers", [])) for gold in interpretations
    )
    matched = sum(
        any(f1_pair(a, g) >= COVER_THRESHOLD for gold in interpretations for g in gold.get("answers", []))
        for a in answers if normalize(a)
    )
    return Coverage(covered, len(interpretations), matched, sum(bool(normalize(a)) for a in answers))
