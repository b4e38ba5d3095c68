"""The one prediction type every program returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import dspy

from disambig.lm.usage import Trace


@dataclass(frozen=True)
class Interpretation:
    """One reading of the question: its disambiguated sub-question, answer and supporting passages."""

    question: str
    answer: str
    passage_ids: tuple[str, ...] = ()
    score: float | None = None


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
