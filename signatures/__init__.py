"""Every LLM step of the suite as a ``dspy.Signature``, grouped by method."""

from __future__ import annotations

from disambig.signatures.adf import (
    ClusterSubQuestion,
    DistinguishingPassage,
    EntityPassage,
    Intent,
    MultiIntentSynthesis,
)
from disambig.signatures.amd import DialogicAnswer, ReflectiveFeedback, SocraticQuestions
from disambig.signatures.answer import (
    ClosedBookAnswer,
    ConsolidateAnswer,
    Disambiguation,
    ExtractInterpretations,
)
from disambig.signatures.dfa import (
    ClarifyAmbiguity,
    ClassifyAggregationAmbiguity,
    CountClosedBook,
    CountFromPassages,
    DirectRewrite,
    EvaluateFilterResult,
    JudgeBatch,
    PlanFilterStep,
    RewriteAggregationQuery,
    SameEntity,
    WriteRowTemplate,
)
from disambig.signatures.diva import (
    AnchoredAnswer,
    ClassifyAmbiguity,
    GroundedInterpretations,
    PseudoInterpretations,
    VerifyRetrieval,
)
from disambig.signatures.expansion import ExpansionKeywords, PseudoDocument, ReasonedAnswer
from disambig.signatures.judge import (
    AnswerSimilarity,
    DeduplicateInterpretations,
    InterpretationCovered,
    MatchInterpretation,
    VerifySupport,
)
from disambig.signatures.route import QuestionHasReadings
from disambig.signatures.verdict import AnswerReadings, ExecutionFeedback, RelaxQuery

__all__ = [
    "AnchoredAnswer",
    "AnswerReadings",
    "AnswerSimilarity",
    "ClarifyAmbiguity",
    "ClassifyAggregationAmbiguity",
    "ClassifyAmbiguity",
    "ClosedBookAnswer",
    "ClusterSubQuestion",
    "ConsolidateAnswer",
    "CountClosedBook",
    "CountFromPassages",
    "DeduplicateInterpretations",
    "DialogicAnswer",
    "DirectRewrite",
    "Disambiguation",
    "DistinguishingPassage",
    "EntityPassage",
    "EvaluateFilterResult",
    "ExecutionFeedback",
    "ExpansionKeywords",
    "ExtractInterpretations",
    "GroundedInterpretations",
    "Intent",
    "InterpretationCovered",
    "JudgeBatch",
    "MatchInterpretation",
    "MultiIntentSynthesis",
    "PlanFilterStep",
    "PseudoDocument",
    "PseudoInterpretations",
    "QuestionHasReadings",
    "ReasonedAnswer",
    "ReflectiveFeedback",
    "RelaxQuery",
    "RewriteAggregationQuery",
    "SameEntity",
    "SocraticQuestions",
    "VerifyRetrieval",
    "VerifySupport",
    "WriteRowTemplate",
]
