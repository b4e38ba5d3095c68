"""DIVA whose pseudo-interpretations are written from the passages retrieved for the question.

Ours, not in the seeds. DIVA rewrites the question into readings before it retrieves (eq. 3), from the question
alone; on the embedded models those readings are mostly paraphrases or readings the corpus does not hold ("men's
Friday Night Lights"), and two a question, the seed demo's count (docs/RESULTS.md, "On Qwen2.5-Coder-1.5B"). Here
the rewrite (``GroundedInterpretations``) reads VanillaRAG's top-K passages for the question first, from the same
first-stage candidates DIVA then diversifies over (one retrieval call), and names the readings those passages
answer differently; a reading about the passages themselves ("... in the first passage?") is dropped.
Verification, the retrieval grade and the adaptive answer are DIVA's.

The passages reach the rewrite framed as every answer-writing step reads them (the untrusted-text note, screened),
since what it writes travels on: the readings are the verification calls' questions and the queries the passages are
diversified over. A planted passage the screen misses can so steer the grade and the diversified set, though RAC
still answers the user's question.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from disambig.programs.context import format_passages
from disambig.programs.diva.anchored import DIVAAnchored
from disambig.programs.diva.program import DIVA, diversify
from disambig.programs.interpret import PseudoInterpreter, Readings
from disambig.programs.seed_demos import predict
from disambig.signatures import GroundedInterpretations

# A reading about the shown passages rather than the world: "in the first passage", "according to the passages",
# "passage 2". Not "A Passage to India" or "the passage of the act" (a title, a law passed).
PASSAGE_TALK = re.compile(r"\b(?:the|this|that|these|those|which|each|other|given|provided|above|first|second|third"
                          r"|fourth|fifth|last)\s+passages?\b(?!\s+of\b)|\bpassages?\s*\[?\d", re.IGNORECASE)
PASSAGE_WORD = re.compile(r"\bpassages?\b", re.IGNORECASE)


class GroundedInterpreter(PseudoInterpreter):
    """``classify``, then a rewrite that also reads passages (``GroundedInterpretations``, ours, no seed demo):
    called as ``interpreter(question=..., passages=...)``; the same ``Readings`` out."""

    def __init__(self, max_readings: int = 5) -> None:
        super().__init__(max_readings)
        self.rewrite = predict(GroundedInterpretations)

    def read(self, question: str, passages: list[Any]) -> Readings:
        """The readings ``passages`` answer differently (on the verifier LM when the run has one); a reading about
        the passages themselves ("... in the first passage?") is dropped, unless the question speaks of a passage
        too, and the question is kept if none is left."""
        readings = self.on_verifier(question, passages=format_passages(passages))
        if PASSAGE_WORD.search(question):
            return readings
        kept = tuple(q for q in readings.questions if not PASSAGE_TALK.search(q)) or (question,)
        return replace(readings, questions=kept)


class DIVAGrounded(DIVA):
    """DIVA with the rewrite reading the question's own top-``k`` passages; arguments as ``DIVA``."""

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5, useful_threshold: float = 0.5, partial_threshold: float = 0.5) -> None:
        super().__init__(retriever, embedder, k, first_stage, max_readings, useful_threshold, partial_threshold)
        self.interpret = GroundedInterpreter(max_readings)

    def readings_and_passages(self, question: str) -> tuple[Readings, list[Any]]:
        """The question's candidates (one retrieval call), its top ``k`` shown to the rewrite, and the passages
        diversified over the readings it writes, from the same candidates."""
        candidates = self.reranker.candidates(question)
        readings = self.interpret.read(question, self.reranker.rank(question, candidates, self.k))
        return readings, diversify(self.reranker, question, readings.questions, self.k, candidates)


class DIVAAnchoredGrounded(DIVAAnchored):
    """``diva-anchored`` with the grounded rewrite: the readings written from the question's top-``k`` passages
    (the question's own ranking, made once), each then answered on its own, so the readings shown are the
    rewrite's; arguments as ``DIVAAnchored``."""

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5) -> None:
        super().__init__(retriever, embedder, k, first_stage, max_readings)
        self.interpret = GroundedInterpreter(max_readings)

    def readings(self, question: str) -> tuple[Readings, list[Any] | None]:
        """The grounded readings and the question's ranking they were written from (one retrieval call), which
        ``spread`` then uses as the question's own instead of ranking it again."""
        own = self.reranker.search(question, self.k)
        return self.interpret.read(question, own), own
