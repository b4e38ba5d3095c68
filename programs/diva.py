"""DIVA: diversify, verify, adapt (seed 002, Algorithm 1).

1. type the ambiguity and infer pseudo-interpretations (two LM calls, eq. 3);
2. first-stage candidates for the question; the union of each pseudo-interpretation's top-K candidates by
   embedding similarity (eq. 4); prune to the top-K by mean relevance to all pseudo-interpretations (eq. 5);
3. one verification call per pseudo-interpretation over the K passages (eq. 7) -> Useful / PartialUseful /
   Useless;
4. RAC extract + consolidate from the passages, or a closed-book answer when they are Useless.
"""

from __future__ import annotations

from typing import Any

import dspy

from disambig.programs.knobs import Knob
from disambig.programs.context import format_passages
from disambig.programs.diversify import grade, prune, union_top_k
from disambig.programs.interpret import PseudoInterpreter
from disambig.programs.rac import RAC
from disambig.programs.result import make_prediction
from disambig.programs.seed_demos import predict
from disambig.lm.usage import measured
from disambig.signatures import ClosedBookAnswer, VerifyRetrieval


class DIVA(dspy.Module):
    """Diversify-verify-adapt.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder for eq. 4-5 (``encode(texts)`` -> unit vectors); by default the
            retriever's own, else all-MiniLM-L6-v2.
        k: K, passages per pseudo-interpretation and after pruning (the paper's 5).
        first_stage: candidates retrieved for the question before diversification.
        max_readings: pseudo-interpretations kept (each costs one verification call).
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.embedder = embedder
        self.k, self.first_stage = k, first_stage
        self.interpret = PseudoInterpreter(max_readings)
        self.verify = predict(VerifyRetrieval)
        self.rac = RAC()
        self.closed_book = predict(ClosedBookAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings = self.interpret(question=question)
            passages = self.diversify(question, list(readings.questions))
            trace.retrieval_calls += 1
            context = format_passages(passages)
            verdicts = [self.verify(passages=context, question=q).verdict == "Yes" for q in readings.questions]
            quality = grade(verdicts)
            if quality == "Useless":
                found, long_answer = [], self.closed_book(question=question).long_answer
            else:
                found, long_answer = self.rac(question=question, passages=passages)
            trace.notes.update(grade=quality, verdicts=verdicts, types=list(readings.types),
                               reason=readings.reason, pseudo_interpretations=list(readings.questions))
        return make_prediction(found, long_answer, trace, passages)

    def diversify(self, question: str, readings: list[str]) -> list[Any]:
        """Eq. 4-5: candidates for the question, union of top-K per reading, pruned to K by mean relevance."""
        candidates = self.retriever.search(question, min(self.first_stage, self.retriever.size))
        if not candidates:
            return []
        encoder = self.encoder()
        vectors = encoder.encode([f"{p.title}: {p.text}" if p.title else p.text for p in candidates])
        similarity = encoder.encode(readings) @ vectors.T
        return [candidates[i] for i in prune(similarity, union_top_k(similarity, self.k), self.k)]

    def encoder(self) -> Any:
        if self.embedder is None:
            self.embedder = embedder_of(self.retriever)
        return self.embedder


def embedder_of(retriever: Any) -> Any:
    """The dense encoder a retriever already holds (dense and hybrid expose ``embedder``), else a new
    all-MiniLM-L6-v2."""
    embedder = getattr(retriever, "embedder", None)
    if embedder is not None:
        return embedder
    from disambig.retrieval.embedder import Embedder

    return Embedder()
