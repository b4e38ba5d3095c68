"""ClosedBook: answer from the LM's own knowledge, no retrieval (the DIVA paper's no-retrieval baseline)."""

from __future__ import annotations

import dspy

from disambig.lm.usage import measured
from disambig.programs.result import make_prediction
from disambig.programs.seed_demos import predict
from disambig.signatures import ClosedBookAnswer


class ClosedBook(dspy.Module):
    """One LM call: the question in, a long-form answer covering its readings out."""

    def __init__(self, retriever: object | None = None) -> None:
        super().__init__()
        self.retriever = retriever
        self.answer = predict(ClosedBookAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            long_answer = self.answer(question=question).long_answer
        return make_prediction([], long_answer, trace)
