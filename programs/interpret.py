"""Pseudo-interpretations: type the question's ambiguity, then rewrite it into specific questions.

Seed: DIVA (002), eq. 3: two separate LM calls (typing with prompt I_a, then rewriting with I_p).
"""

from __future__ import annotations

from dataclasses import dataclass

import dspy

from disambig.data.text import normalize
from disambig.programs.seed_demos import predict
from disambig.signatures import ClassifyAmbiguity, PseudoInterpretations


@dataclass(frozen=True)
class Readings:
    """The typing step's types and reason, and the pseudo-interpretations (never empty)."""

    types: tuple[str, ...]
    reason: str
    questions: tuple[str, ...]


class PseudoInterpreter(dspy.Module):
    """``classify`` then ``rewrite``; at most ``max_readings`` distinct questions, the original if none."""

    def __init__(self, max_readings: int = 5) -> None:
        super().__init__()
        self.max_readings = max_readings
        self.classify = predict(ClassifyAmbiguity)
        self.rewrite = predict(PseudoInterpretations)

    def forward(self, question: str) -> Readings:
        typed = self.classify(question=question)
        rewritten = self.rewrite(question=question, reason=typed.reason)
        questions = distinct(rewritten.sub_questions or [], self.max_readings) or (question,)
        return Readings(tuple(typed.types or ()), typed.reason, questions)


def distinct(questions: list[str], limit: int) -> tuple[str, ...]:
    """Non-empty questions without repeats (by normalised text), first ``limit`` of them."""
    seen: set[str] = set()
    out = []
    for q in questions:
        key = normalize(q)
        if key and key not in seen:
            seen.add(key)
            out.append(q.strip())
    return tuple(out[:limit])
