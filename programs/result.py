"""The one prediction type every program returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import dspy

from disambig.lm.usage import Trace
from disambig.programs.flags import answer_flags
from disambig.programs.prompt_echo import clean_prediction


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
    written from, as ``{id, title, text}`` dicts, for retrieval metrics) and ``trace`` (dict). The readings and the
    long answer are cleaned of any prompt text of ours a model echoed (``disambig.programs.prompt_echo``); the
    trace's ``notes`` gain ``prompt_echo`` (``removed`` cuts, ``dropped_readings`` left with no answer) and
    ``flags``, the injection warning signs of ``disambig.programs.flags.answer_flags`` in the cleaned answer.
    """
    cleaned = clean_prediction([asdict(i) | {"passage_ids": list(i.passage_ids)} for i in interpretations],
                               long_answer)
    readings, long_answer = cleaned.interpretations, cleaned.long_answer
    shown = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]
    traced = asdict(trace)
    echo = {"removed": cleaned.removed, "dropped_readings": cleaned.dropped_readings}
    traced["notes"] = {**traced["notes"], "prompt_echo": echo, "flags": answer_flags(readings, long_answer, shown)}
    return dspy.Prediction(interpretations=readings, long_answer=long_answer, passages=shown, trace=traced)
