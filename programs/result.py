"""The one prediction type every program returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import dspy


@dataclass(frozen=True)
class Interpretation:
    """One reading of the question: its disambiguated sub-question, answer and supporting passages."""

    question: str
    answer: str
    passage_ids: tuple[str, ...] = ()
    score: float | None = None


@dataclass
class Trace:
    """What a question cost: LM calls and tokens (filled by ``measured``), retrieval calls, and extras."""

    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retrieval_calls: int = 0
    seconds: float = 0.0
    notes: dict[str, object] = field(default_factory=dict)


def make_prediction(
    interpretations: list[Interpretation],
    long_answer: str,
    trace: Trace,
    passages: list[Any] = (),
) -> dspy.Prediction:
    """Build the common prediction.

    Fields: ``interpretations`` (list of dicts), ``long_answer``, ``passages`` (the passages the answer was
    written from, as ``{id, title, text}`` dicts, for retrieval metrics) and ``trace`` (dict).
    """
    return dspy.Prediction(
        interpretations=[asdict(i) | {"passage_ids": list(i.passage_ids)} for i in interpretations],
        long_answer=long_answer,
        passages=[{"id": p.id, "title": p.title, "text": p.text} for p in passages],
        trace=asdict(trace),
    )
