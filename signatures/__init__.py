"""Every LLM step of the suite as a ``dspy.Signature``, grouped by method."""

from __future__ import annotations

from disambig.signatures.answer import ClosedBookAnswer
from disambig.signatures.judge import (
    AnswerSimilarity,
    DeduplicateInterpretations,
    InterpretationCovered,
    MatchInterpretation,
    VerifySupport,
)

__all__ = [
    "AnswerSimilarity",
    "ClosedBookAnswer",
    "DeduplicateInterpretations",
    "InterpretationCovered",
    "MatchInterpretation",
    "VerifySupport",
]
