"""Every LLM step of the suite as a ``dspy.Signature``, grouped by method."""

from __future__ import annotations

from disambig.signatures.adf import (
    ClusterSubQuestion,
    DistinguishingPassage,
    EntityPassage,
    Intent,
    MultiIntentSynthesis,
)
from disambig.signatures.answer import ClosedBookAnswer, ConsolidateAnswer, Disambiguation, ExtractInterpretations
from disambig.signatures.diva import ClassifyAmbiguity, PseudoInterpretations, VerifyRetrieval
from disambig.signatures.judge import (
    AnswerSimilarity,
    DeduplicateInterpretations,
    InterpretationCovered,
    MatchInterpretation,
    VerifySupport,
)
from disambig.signatures.verdict import AnswerReadings, ExecutionFeedback, RelaxQuery

__all__ = [
    "AnswerReadings",
    "AnswerSimilarity",
    "ClassifyAmbiguity",
    "ClosedBookAnswer",
    "ClusterSubQuestion",
    "ConsolidateAnswer",
    "DeduplicateInterpretations",
    "Disambiguation",
    "DistinguishingPassage",
    "EntityPassage",
    "ExecutionFeedback",
    "ExtractInterpretations",
    "Intent",
    "InterpretationCovered",
    "MatchInterpretation",
    "MultiIntentSynthesis",
    "PseudoInterpretations",
    "RelaxQuery",
    "VerifyRetrieval",
    "VerifySupport",
]
