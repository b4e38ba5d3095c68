"""VanillaRAG: top-K passages for the question, then RAC extract + consolidate (DIVA's baseline 6).

Seed: DIVA (002), A.3 (6): first-stage candidates reranked by SentenceBERT similarity to the question, the top 5
given to RAC. The reranker is the one DIVA ranks its candidates with (``programs/rerank.py``).
"""

from __future__ import annotations

from typing import Any

import dspy

from disambig.lm.usage import measured
from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC
from disambig.programs.rerank import Reranker
from disambig.programs.result import make_prediction


class VanillaRAG(dspy.Module):
    """Retrieve ``k`` passages for the question; extract readings and answers; write the long answer.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder of the shared reranker (default: the retriever's own).
        k: passages given to the LM (the paper's 5).
        first_stage: candidates reranked by cosine to the question (DIVA's default); 0 keeps the retriever's
            own top-``k``.
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50) -> None:
        super().__init__()
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k = k
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            passages = self.reranker.search(question, self.k)
            trace.retrieval_calls += 1
            found, long_answer, conflicts = self.rac(question=question, passages=passages)
        return make_prediction(found, long_answer, trace, passages, conflicts)
