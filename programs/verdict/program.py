"""VerDICt: verified diversification with consolidation (seed 001, Algorithm 1).

1. relax the question into a broad search query (eq. 6; one LM call, skipped with ``relax=False`` as in the
   authors' release);
2. ONE retrieval of the top-k passages for it, k = 20 (eq. 7);
3. execution feedback: one LM call per passage, in retrieval order, that states the single reading the passage
   answers and its answer, or abstains (eq. 8). The calls are independent: they run at once on a remote LM (up
   to ``--parallel-calls``, ``disambig.lm.parallel``) and one after another on the in-process engine; with a
   second LM (``--verifier-lm``) it makes these calls, and the run's LM the relaxation and the long answer;
4. embed each surviving (reading; answer) with the retriever's encoder, cluster with HDBSCAN, drop the noise and
   keep each cluster's medoid, which cites its own passage (section 4.2, Algorithm 1 lines 10-14).

Not in the paper: a cluster whose passages give different answers (a noise pair asking the cluster's question
counted in) is a conflict (``cluster_claims``, ``programs/conflicts.py``). The readings stay the medoids; the
prediction carries the conflicts and its long answer says the sources disagree (no extra LM call).

The paper's cost is one retrieval and 1 + k LM calls. The paper has no long answer; ``long_answer`` adds one
(``consolidate``: one more LM call; ``list``: the readings joined, no call) so ASQA's long-form metrics apply, and
its cost is kept apart in ``trace.notes["long_answer_cost"]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dspy

from disambig.data.text import normalize
from disambig.lm.parallel import call_workers, ordered_map, serialised
from disambig.lm.usage import Trace, measured
from disambig.lm.verifier import using_verifier
from disambig.programs.abstain import says_unknown
from disambig.programs.conflicts import find_conflicts
from disambig.programs.context import format_passage, format_passages
from disambig.programs.knobs import Knob
from disambig.programs.rerank import embedder_of
from disambig.programs.result import Interpretation, make_prediction
from disambig.programs.seed_demos import MEN, QUESTION, predict
from disambig.programs.verdict.consolidate import Consolidation, consolidate
from disambig.signatures import ConsolidateAnswer, Disambiguation, ExecutionFeedback, RelaxQuery

__all__ = ["VerDICt", "Feedback", "serialised", "stated", "stated_answer"]

LongAnswer = Literal["consolidate", "list", "none"]

# The paper prints no demos for either step; these are the project's, built on the seed World Cup example: one
# passage that answers a reading and one that is on topic but answers none (rule 2 of the prompt).
FEEDBACK_DEMOS = [
    {"question": QUESTION, "document": "Miroslav Klose | Klose scored 16 goals, the most in the history of the men's "
     "World Cup.", "interpretation": MEN, "answer": "Miroslav Klose"},
    {"question": QUESTION, "document": "2014 FIFA World Cup | The tournament was held in Brazil from 12 June to 13 "
     "July 2014.", "interpretation": "null", "answer": "null"},
]
RELAX_DEMOS = [{"question": QUESTION, "query": "World Cup top goalscorer"}]
ABSTAIN = {"null", "none", "na"}


@dataclass(frozen=True)
class Feedback:
    """What one passage gave: its reading and answer, or neither (abstained, or the reply did not parse)."""

    passage: Any
    interpretation: str | None = None
    answer: str | None = None
    parse_failed: bool = False

    @property
    def answered(self) -> bool:
        return self.interpretation is not None and self.answer is not None


class VerDICt(dspy.Module):
    """Verified diversification with consolidation.

    Args:
        retriever: any retriever with ``search(query, k)`` and ``size``.
        embedder: encoder f for the readings (``encode(texts)`` -> unit vectors); by default the retriever's own,
            else all-MiniLM-L6-v2.
        k: passages retrieved, one feedback call each (the paper's 20; clamped to the corpus size).
        relax: relax the question into a search query first (the paper); False searches with the question (the
            authors' release).
        embed: ``"qa"`` embeds "reading answer" (the paper), ``"q"`` the reading alone (Table 4's ablation).
        min_cluster_size, min_samples, allow_single_cluster, cluster_selection_epsilon: HDBSCAN's parameters
            (``programs.consolidate``).
        cite: ``"medoid"`` cites the medoid's own passage (the paper's p-hat); ``"cluster"`` also cites its
            cluster's other passages (lenient under any-passage grounding; not for paper comparisons).
        long_answer: ``"consolidate"`` (one LM call over the medoids), ``"list"`` (no call) or ``"none"``.
        parallel: feedback calls in flight at once; None takes the run's ``--parallel-calls`` (by default 1 on the
            in-process engine, which always runs them one at a time, and 8 on a remote LM).
    """

    KNOBS = {
        "k": Knob(5, 40, step=5),
        "min_cluster_size": Knob(2, 4),
        "min_samples": Knob(1, 4),
        "cluster_selection_epsilon": Knob(0.0, 0.3),
    }

    def __init__(
        self,
        retriever: Any,
        embedder: Any = None,
        k: int = 20,
        relax: bool = True,
        embed: Literal["qa", "q"] = "qa",
        min_cluster_size: int = 2,
        min_samples: int = 2,
        allow_single_cluster: bool = False,
        cluster_selection_epsilon: float = 0.0,
        cite: Literal["medoid", "cluster"] = "medoid",
        long_answer: LongAnswer = "consolidate",
        parallel: int | None = None,
    ) -> None:
        super().__init__()
        check_choice("embed", embed, ("qa", "q"))
        check_choice("cite", cite, ("medoid", "cluster"))
        check_choice("long_answer", long_answer, ("consolidate", "list", "none"))
        if parallel is not None and (not isinstance(parallel, int) or parallel < 1):
            raise ValueError(f"parallel={parallel!r} must be a positive integer, or None to decide from the LM")
        self.retriever = retriever
        self.embedder = embedder
        self.k, self.relax, self.embed, self.cite = k, relax, embed, cite
        self.clustering = {"min_cluster_size": min_cluster_size, "min_samples": min_samples,
                           "allow_single_cluster": allow_single_cluster,
                           "cluster_selection_epsilon": cluster_selection_epsilon}
        self.long_answer, self.parallel = long_answer, parallel
        self.relaxer = with_demos(RelaxQuery, RELAX_DEMOS)
        self.feedback = with_demos(ExecutionFeedback, FEEDBACK_DEMOS)
        self.writer = predict(ConsolidateAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            query = relaxed_query(self.relaxer, question) if self.relax else question  # line 3, eq. 6
            passages = self.retriever.search(query, min(self.k, self.retriever.size))  # line 4, eq. 7
            trace.retrieval_calls += 1
            feedback = self.execute(question, passages)  # lines 5-9, eq. 8
            pairs = [f for f in feedback if f.answered]
            groups = consolidate(self.vectors(pairs), **self.clustering) if pairs else Consolidation((), (), ())
            found = [self.interpretation(pairs, medoid, group)  # lines 10-15
                     for medoid, group in zip(groups.medoids, groups.members, strict=True)]
            conflicts = find_conflicts(cluster_claims(pairs, groups))  # not in the paper: answers that disagree
            with measured() as extra:
                long_answer = self.write(question, found, passages)
            trace.notes.update(relaxed_query=query, **feedback_notes(feedback), labels=list(groups.labels),
                               medoids=[pairs[i].passage.id for i in groups.medoids],
                               long_answer_cost=cost(extra))
        trace.notes["method_lm_calls"] = trace.lm_calls - extra.lm_calls
        return make_prediction(found, long_answer, trace, passages, conflicts)

    def execute(self, question: str, passages: Sequence[Any]) -> list[Feedback]:
        """One feedback call per passage, on the run's second LM if it has one; results in retrieval order however the
        calls were scheduled (as many at once as that LM takes)."""
        with using_verifier():
            return ordered_map(lambda passage: self.read(question, passage), passages, self.workers())

    def read(self, question: str, passage: Any) -> Feedback:
        """Execution feedback on one passage; an unparsable reply counts as an abstention."""
        from dspy.utils.exceptions import AdapterParseError

        try:
            out = self.feedback(question=question, document=passage_text(passage))
        except AdapterParseError:
            return Feedback(passage, parse_failed=True)
        return Feedback(passage, stated(out.interpretation), stated_answer(out.answer))

    def workers(self) -> int:
        """Feedback calls at once: 1 on the in-process engine, else ``parallel`` if set, else the run's setting."""
        return call_workers(self.parallel)

    def vectors(self, pairs: list[Feedback]) -> Any:
        """f(reading; answer) for every pair (the reading alone with ``embed="q"``), unit length."""
        if self.embedder is None:
            self.embedder = embedder_of(self.retriever)
        texts = [p.interpretation if self.embed == "q" else f"{p.interpretation} {p.answer}" for p in pairs]
        return self.embedder.encode(texts)

    def interpretation(self, pairs: list[Feedback], medoid: int, members: tuple[int, ...]) -> Interpretation:
        """The medoid's reading and answer, citing its passage; the score is the cluster's share of the pairs."""
        cited = [pairs[medoid].passage.id]
        if self.cite == "cluster":
            cited += [pairs[i].passage.id for i in members if pairs[i].passage.id not in cited]
        return Interpretation(pairs[medoid].interpretation, pairs[medoid].answer, tuple(cited),
                              round(len(members) / len(pairs), 4))

    def write(self, question: str, found: list[Interpretation], passages: Sequence[Any]) -> str:
        """The optional long answer (not in the paper)."""
        if self.long_answer == "none" or not found:
            return ""
        if self.long_answer == "list":
            return listed(found)
        cited = [p for p in passages if any(p.id == i.passage_ids[0] for i in found)]
        numbers = {p.id: n for n, p in enumerate(cited, 1)}
        pairs = [Disambiguation(question=i.question, answer=i.answer, passage=numbers[i.passage_ids[0]])
                 for i in found]
        return self.writer(passages=format_passages(cited), question=question, disambiguations=pairs).long_answer


def cluster_claims(pairs: list[Feedback], groups: Consolidation) -> list[Interpretation]:
    """Every pair as a claim on its cluster's reading (the medoid's question: a cluster is one reading), in
    retrieval order, for ``find_conflicts``. A noise pair joins the first cluster holding a pair with the same
    normalised question: with ``embed="qa"`` a lone contrary answer is what HDBSCAN sets apart, and it must still
    be compared. Other noise answers no reading kept and is left out."""
    readings = [(pairs[m].interpretation, {normalize(pairs[i].interpretation) for i in members})
                for m, members in zip(groups.medoids, groups.members, strict=True)]
    reading_of = {i: reading for (reading, _), members in zip(readings, groups.members, strict=True) for i in members}
    claims = []
    for i, pair in enumerate(pairs):
        reading = reading_of.get(i) or next((r for r, asked in readings if normalize(pair.interpretation) in asked),
                                            None)
        if reading is not None:
            claims.append(Interpretation(reading, pair.answer, (pair.passage.id,)))
    return claims


def with_demos(signature: type[dspy.Signature], demos: list[dict[str, Any]]) -> dspy.Predict:
    """``dspy.Predict(signature)`` starting with the given demos (``disambig compile`` may replace them)."""
    predictor = dspy.Predict(signature)
    predictor.demos = [dspy.Example(**demo) for demo in demos]
    return predictor


def relaxed_query(relaxer: dspy.Predict, question: str) -> str:
    """Eq. 6: the relaxed search query, or the question itself when the reply is empty or does not parse."""
    from dspy.utils.exceptions import AdapterParseError

    try:
        query = relaxer(question=question).query
    except AdapterParseError:
        return question
    return query.strip() if isinstance(query, str) and query.strip() else question


def stated(value: Any) -> str | None:
    """A field's text, or None for a missing, empty or null-like value ("null", "None", "N/A", quoted or not)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return None if re.sub(r"[\W_]+", "", value.lower()) in ABSTAIN else value.strip()


def stated_answer(value: Any) -> str | None:
    """``stated(value)``, also None for a refusal in other words ("unknown", "not mentioned", "The passage does not
    say"): such a reply answers no reading and must not be consolidated as one."""
    answer = stated(value)
    return None if answer is None or says_unknown(answer) else answer


def passage_text(passage: Any) -> str:
    """``Title | text``, framed as the project's other steps show a passage (``programs/context.py``)."""
    return format_passage(passage)


def listed(found: list[Interpretation]) -> str:
    """The readings and their answers, one "reading answer." line each (a long answer without an LM call); a reading
    without an answer is listed alone."""
    return "\n".join(f"{i.question} {i.answer.rstrip('.')}." if i.answer.strip() else i.question for i in found)


def feedback_notes(feedback: list[Feedback]) -> dict[str, Any]:
    """Trace notes of the feedback step: every pair with its passage, abstentions and parse failures."""
    return {
        "pairs": [{"question": f.interpretation, "answer": f.answer, "passage_id": f.passage.id}
                  for f in feedback if f.answered],
        "abstained": sum(not f.answered for f in feedback),
        "parse_failures": sum(f.parse_failed for f in feedback),
    }


def cost(trace: Trace) -> dict[str, float]:
    return {"lm_calls": trace.lm_calls, "input_tokens": trace.input_tokens, "output_tokens": trace.output_tokens,
            "seconds": round(trace.seconds, 3)}


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, choices))}")
