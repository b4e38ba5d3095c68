"""VanillaRAG: top-K passages for the question, then RAC extract + consolidate (DIVA's baseline 6)."""

from __future__ import annotations

from typing import Any

import dspy

from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC
from disambig.programs.result import make_prediction
from disambig.lm.usage import measured


class VanillaRAG(dspy.Module):
    """Retrieve ``k`` passages for the question; extract readings and answers; write the long answer.

    Args:
        retriever: any retriever with ``search(query, k)``.
        k: passages given to the LM (the paper's 5).
    """

    KNOBS = {"k": Knob(3, 8)}

    def __init__(self, retriever: Any, k: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.k = k
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            passages = self.retriever.search(question, self.k)
            trace.retrieval_calls += 1
            found, long_answer = self.rac(question=question, passages=passages)
        return make_prediction(found, long_answer, trace, passages)
