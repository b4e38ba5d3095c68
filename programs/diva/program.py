"""DIVA: diversify, verify, adapt (seed 002, Algorithm 1), and its ablation without adaptive generation.

1. type the ambiguity and infer pseudo-interpretations (two LM calls, eq. 3);
2. first-stage candidates for the question; the union of each pseudo-interpretation's top-K candidates by
   embedding similarity (eq. 4); prune to the top-K by mean relevance to all pseudo-interpretations (eq. 5).
   Candidates and similarity are VanillaRAG's reranker (``programs/rerank.py``), as in the paper;
3. one verification call per pseudo-interpretation over the K passages (eq. 7), read as a probability of Yes
   (token log-probabilities where the LM reports them, else the label); thresholds on those probabilities give
   Useful / PartialUseful / Useless. The calls are independent: they run at once on a remote LM
   (``--parallel-calls``, ``disambig.lm.parallel``);
4. RAC extract + consolidate from the passages, or a closed-book answer when they are Useless.

Steps 1 and 3 run on the verifier LM when the run names one (``--verifier-lm``; the paper uses GPT-4 there).
``DIVANoAdapt`` is the paper's "RAG + RD, no AG" row (Table 2): steps 1, 2 and RAC, without 3 and 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dspy

from disambig.lm.parallel import ordered_map
from disambig.lm.usage import measured
from disambig.lm.verifier import using_verifier
from disambig.lm.yes_probability import YesAnswer, logprob_config, yes_answer
from disambig.programs.context import format_passages
from disambig.programs.diva.diversify import grade, prune, union_top_k
from disambig.programs.interpret import PseudoInterpreter, Readings
from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC
from disambig.programs.rerank import Reranker, embedder_of
from disambig.programs.result import make_prediction
from disambig.programs.seed_demos import predict
from disambig.signatures import ClosedBookAnswer, VerifyRetrieval

__all__ = ["DIVA", "DIVANoAdapt", "Check", "diversify", "embedder_of"]

Check = YesAnswer  # one verification; its name here before the reader moved to disambig.lm.yes_probability


class DIVA(dspy.Module):
    """Diversify-verify-adapt.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder for eq. 4-5 (``encode(texts)`` -> unit vectors); by default the
            retriever's own, else all-MiniLM-L6-v2.
        k: K, passages per pseudo-interpretation and after pruning (the paper's 5).
        first_stage: candidates retrieved for the question before diversification.
        max_readings: pseudo-interpretations kept (each costs one verification call).
        useful_threshold: P(Yes) every pseudo-interpretation must reach for Useful.
        partial_threshold: P(Yes) one pseudo-interpretation must reach for PartialUseful; below it for all of them
            the passages are Useless and the answer is closed-book. 0.5 / 0.5 is the paper's all / some / none.
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_readings": Knob(2, 6),
             "useful_threshold": Knob(0.05, 0.95), "partial_threshold": Knob(0.01, 0.9)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5, useful_threshold: float = 0.5, partial_threshold: float = 0.5) -> None:
        super().__init__()
        for name, value in (("useful_threshold", useful_threshold), ("partial_threshold", partial_threshold)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}={value} must be a probability in [0, 1]")
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k = k
        self.useful_threshold, self.partial_threshold = useful_threshold, partial_threshold
        self.interpret = PseudoInterpreter(max_readings)
        self.verify = predict(VerifyRetrieval)
        self.rac = RAC()
        self.closed_book = predict(ClosedBookAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings, passages = self.readings_and_passages(question)
            trace.retrieval_calls += 1
            context = format_passages(passages, labelled=False)  # a grader: screened, without the untrusted note
            with using_verifier():
                checks = ordered_map(lambda reading: self.check(context, reading), readings.questions)
            quality = grade([c.probability for c in checks], self.useful_threshold, self.partial_threshold)
            if quality == "Useless":
                found, long_answer, conflicts = [], self.closed_book(question=question).long_answer, []
            else:
                found, long_answer, conflicts = self.rac(question=question, passages=passages)
            trace.notes.update(readings.notes())
            trace.notes.update(grade=quality, verdicts=[c.verdict == "Yes" for c in checks],
                               yes_probabilities=[round(c.probability, 4) for c in checks],
                               probability_source=sorted({c.source for c in checks}),
                               thresholds={"useful": self.useful_threshold, "partial": self.partial_threshold})
        return make_prediction(found, long_answer, trace, passages, conflicts)

    def readings_and_passages(self, question: str) -> tuple[Readings, list[Any]]:
        """Steps 1-2 (one retrieval call): the pseudo-interpretations and the passages diversified over them."""
        return diversified(self.interpret, self.reranker, question, self.k)

    def check(self, context: str, question: str) -> YesAnswer:
        """Eq. 7 for one pseudo-interpretation, as a probability of Yes."""
        return yes_answer(self.verify(passages=context, question=question, config=logprob_config(dspy.settings.lm)))

    def diversify(self, question: str, readings: list[str]) -> list[Any]:
        """Eq. 4-5 with this program's reranker and K."""
        return diversify(self.reranker, question, readings, self.k)


class DIVANoAdapt(dspy.Module):
    """DIVA's retrieval diversification without verification or adaptive generation: RAC always answers.

    Args: as ``DIVA`` (no thresholds).
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k = k
        self.interpret = PseudoInterpreter(max_readings)
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings, passages = diversified(self.interpret, self.reranker, question, self.k)
            trace.retrieval_calls += 1
            found, long_answer, conflicts = self.rac(question=question, passages=passages)
            trace.notes.update(readings.notes())
        return make_prediction(found, long_answer, trace, passages, conflicts)


def diversified(interpret: PseudoInterpreter, reranker: Reranker, question: str,
                k: int) -> tuple[Readings, list[Any]]:
    """Steps 1-2: the pseudo-interpretations (on the verifier LM when the run has one) and the ``k`` passages
    diversified over them (one retrieval call)."""
    readings = interpret.on_verifier(question)
    return readings, diversify(reranker, question, readings.questions, k)


def diversify(reranker: Reranker, question: str, readings: Sequence[str], k: int,
              candidates: list[Any] | None = None) -> list[Any]:
    """Eq. 4-5: the question's candidates (``candidates`` when the caller fetched them already), union of top-``k``
    per reading, pruned to ``k`` by mean relevance.

    With one reading equal to the question this is exactly ``reranker.search(question, k)``, VanillaRAG's passages.
    """
    if candidates is None:
        candidates = reranker.candidates(question)
    if not candidates:
        return []
    similarity = reranker.similarity(list(readings), candidates)
    return [candidates[i] for i in prune(similarity, union_top_k(similarity, k), k)]

