"""PerReadingRAG: pseudo-interpretations, one retrieval per reading over the whole corpus, then RAC.

Formerly registered as ``dtv-no-verify``. It is neither DIVA's "RAG + RD, no AG" ablation (that is
``diva-no-adapt``: no first stage over the question's candidates here, no eq. 5 pruning) nor VerDICt's
"DtV - verification" (which keeps the whole union): each pseudo-interpretation is its own query, and the answer is
written from the round-robin merge of their top passages, cut to K.
"""

from __future__ import annotations

from typing import Any

import dspy

from disambig.lm.usage import measured
from disambig.programs.context import round_robin, unique
from disambig.programs.interpret import PseudoInterpreter
from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC
from disambig.programs.result import make_prediction


class PerReadingRAG(dspy.Module):
    """Diversify, retrieve per reading, generate.

    Args:
        retriever: any retriever with ``batch_search(queries, k)``.
        k: passages given to the LM (taken rank by rank across the readings' lists).
        max_readings: pseudo-interpretations kept.
    """

    KNOBS = {"k": Knob(3, 8), "max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any, k: int = 5, max_readings: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.k = k
        self.interpret = PseudoInterpreter(max_readings)
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings = self.interpret.on_verifier(question)
            lists = self.retriever.batch_search(list(readings.questions), self.k)
            trace.retrieval_calls += len(lists)
            passages = unique(round_robin(lists), limit=self.k)
            found, long_answer, conflicts = self.rac(question=question, passages=passages)
            trace.notes.update(readings.notes())
        return make_prediction(found, long_answer, trace, passages, conflicts)
