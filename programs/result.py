"""The one prediction type every program returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import dspy

from disambig.lm.usage import Trace
from disambig.programs.conflicts import Conflict, conflict_note, with_note
from disambig.programs.flags import answer_flags
from disambig.programs.passage_talk import without_passage_talk
from disambig.programs.prompt_echo import clean_prediction, strip_prompt_echo


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
    conflicts: Sequence[Conflict] = (),
) -> dspy.Prediction:
    """Build the common prediction.

    Fields: ``interpretations`` (list of dicts), ``long_answer``, ``passages`` (the passages the answer was
    written from, as ``{id, title, text}`` dicts, for retrieval metrics), ``conflicts``, ``conflict_note`` and
    ``trace`` (dict). The readings and the long answer are cleaned of any prompt text of ours a model echoed
    (``disambig.programs.prompt_echo``) and of talk about the passages the reader never sees
    (``disambig.programs.passage_talk``); the trace's ``notes`` gain ``prompt_echo`` (``removed`` cuts,
    ``dropped_readings`` left with no answer), ``passage_talk`` (sentences changed or dropped) and ``flags``, the
    injection warning signs of ``disambig.programs.flags.answer_flags`` in the cleaned answer.

    ``conflicts`` are the readings the passages answer in different ways (``disambig.programs.conflicts``; only
    RAC's and VerDICt's programs find them), as ``[{question, answers: [{answer, passage_ids}]}]``, empty when there
    is none. ``conflict_note`` is one sentence per conflict saying that the sources disagree and who says what; it is
    appended to a non-empty long answer, and the metrics take it out again before scoring
    (``disambig.metrics.answer_text``), so surfacing a conflict never changes a score. The trace's notes gain
    ``conflicts``, their number.
    """
    cleaned = clean_prediction([asdict(i) | {"passage_ids": list(i.passage_ids)} for i in interpretations],
                               long_answer)
    talkless = without_passage_talk(cleaned.interpretations, cleaned.long_answer)
    readings, long_answer = talkless.interpretations, talkless.long_answer
    shown = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]
    disagree = _without_echo(conflicts)
    note = conflict_note(disagree, passages)
    traced = asdict(trace)
    echo = {"removed": cleaned.removed, "dropped_readings": cleaned.dropped_readings}
    traced["notes"] = {**traced["notes"], "prompt_echo": echo, "passage_talk": talkless.changed,
                       "flags": answer_flags(readings, long_answer, shown),
                       "conflicts": len(disagree)}
    return dspy.Prediction(interpretations=readings, long_answer=with_note(long_answer, note), passages=shown,
                           conflicts=[c.as_dict() for c in disagree], conflict_note=note, trace=traced)


def _without_echo(conflicts: Sequence[Conflict]) -> list[Conflict]:
    """The conflicts with prompt text of ours cut from their questions and answers (as the readings are); an answer
    left empty is dropped, and so is a conflict left with fewer than two answers."""
    kept = []
    for conflict in conflicts:
        answers = [replace(s, answer=strip_prompt_echo(s.answer).text.strip()) for s in conflict.answers]
        answers = [s for s in answers if s.answer]
        if len(answers) > 1:
            kept.append(Conflict(strip_prompt_echo(conflict.question).text.strip(), tuple(answers)))
    return kept
