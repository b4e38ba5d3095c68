"""VerDICt's "DtV - verification" baseline (seed 001, Table 2: "refers to Eq. 1"): the pseudo-interpretations.

DtV without its retrieval and verification is its first step alone: DIVA's pseudo-interpretations (seed 002,
eq. 3: typing, then rewriting; two LM calls), returned as the interpretations, with no passages. DtV itself is
DIVA (program ``diva``); ``per-reading-rag`` is a different ablation (retrieval per reading, then RAC).

The paper evaluates these readings without answers. ``answer="closed-book"`` (the default) adds one LM call that
answers them all from the model's own knowledge so answer metrics apply; its cost is kept apart in
``trace.notes["answer_cost"]``. The long answer lists the readings (no call).
"""

from __future__ import annotations

from typing import Any, Literal

import dspy

from disambig.lm.usage import measured
from disambig.programs.interpret import PseudoInterpreter
from disambig.programs.knobs import Knob
from disambig.programs.result import Interpretation, make_prediction
from disambig.programs.verdict.program import check_choice, cost, listed
from disambig.signatures import AnswerReadings


class DtVPseudo(dspy.Module):
    """Pseudo-interpretations only (eq. 1), optionally answered closed-book.

    Args:
        retriever: unused (the baseline retrieves nothing); accepted so every program builds alike.
        max_readings: pseudo-interpretations kept.
        answer: ``"closed-book"`` answers the readings in one LM call; ``"none"`` leaves them unanswered (the
            paper's setting).
    """

    KNOBS = {"max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any = None, max_readings: int = 5,
                 answer: Literal["closed-book", "none"] = "closed-book") -> None:
        super().__init__()
        check_choice("answer", answer, ("closed-book", "none"))
        self.retriever = retriever
        self.answer = answer
        self.interpret = PseudoInterpreter(max_readings)
        self.answerer = dspy.Predict(AnswerReadings)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings = self.interpret(question=question)
            with measured() as extra:
                answers = self.answers(list(readings.questions))
            found = [Interpretation(q, a) for q, a in zip(readings.questions, answers, strict=True)]
            trace.notes.update(types=list(readings.types), reason=readings.reason, answer_cost=cost(extra))
        trace.notes["method_lm_calls"] = trace.lm_calls - extra.lm_calls
        return make_prediction(found, listed(found), trace)

    def answers(self, questions: list[str]) -> list[str]:
        """One short answer per question ("" when unanswered or the reply is short)."""
        if self.answer == "none":
            return [""] * len(questions)
        replies = [str(a).strip() for a in self.answerer(questions=questions).answers or []]
        return (replies + [""] * len(questions))[: len(questions)]
