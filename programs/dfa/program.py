"""DFA: disambiguation, completeness-aware filtering and batched aggregation for count questions (seed 004, §5).

1. D — classify the question's ambiguity (A1…C3), clarify each (in evaluation nobody answers, so the rewrite
   takes the most literal reading and lists its assumptions; ``ask_user`` answers in a live session), rewrite it
   with its entity type, conditions and connective;
2. F — from C(0), the question's whole chunk scope: plan a tool call (exact / fuzzy match), run it on a snapshot,
   evaluate what was kept *and* what was discarded, roll back when evidence was lost, until converged;
3. A — cluster the final snapshot's chunks, batch them with Algorithm 1 (eq. 5–6), judge each batch, de-duplicate
   entities across batches; the count is the number of entities. The batch judgements (and the same-entity calls)
   are independent: they run at once on a remote LM (``--parallel-calls``, ``disambig.lm.parallel``).

Numbers that the paper leaves open are constructor arguments (spec ``dfa.md`` §12). The prediction carries
``count``, ``entities`` (name, aliases, chunk ids) and ``retained_chunk_ids`` (the final snapshot, for chunk
recall) beside the common fields; ``trace.notes`` has the LM calls per stage (``lc_*``), CP, the snapshot tree,
the memory, the batches and the assumptions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from disambig.lm.parallel import ordered_map
from disambig.lm.usage import measured
from disambig.programs.dfa.batching import chunk_features, cluster_chunks, estimate_tokens, greedy_batches
from disambig.programs.dfa.dedup import Found, deduplicate
from disambig.programs.dfa.filter import TOOL_MANUAL, FilterState, chunk_lines, chunk_text, samples
from disambig.programs.knobs import Knob
from disambig.programs.result import Interpretation, make_prediction
from disambig.signatures.dfa import (
    ClarifyAmbiguity,
    ClassifyAggregationAmbiguity,
    DirectRewrite,
    EvaluateFilterResult,
    JudgeBatch,
    PlanFilterStep,
    RewriteAggregationQuery,
    SameEntity,
)

STAGES = ("disambig", "filter_plan", "filter_eval", "judge", "dedup")
Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class QueryForm:
    """The rewritten question and its structured form (what the filter and the judge read)."""

    question: str
    entity_type: str = "item"
    conditions: tuple[str, ...] = ()
    connective: str = "AND"
    counting_unit: str = ""
    dedup_rule: str = ""
    assumptions: tuple[str, ...] = ()
    ambiguities: tuple[dict, ...] = ()


@dataclass
class Costs:
    """LM calls, tokens and unparsable replies per stage of one question."""

    calls: Counter = field(default_factory=Counter)
    tokens: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)

    def add(self, other: Costs) -> None:
        """Count ``other``'s calls, tokens and failures here too."""
        self.calls.update(other.calls)
        self.tokens.update(other.tokens)
        self.failures.update(other.failures)

    def notes(self) -> dict[str, Any]:
        out: dict[str, Any] = {f"lc_{s}": self.calls[s] for s in STAGES}
        out["tokens_by_stage"] = {s: self.tokens[s] for s in STAGES}
        out["unparsed_replies"] = dict(self.failures)
        return out


def call(costs: Costs, stage: str, predictor: Callable[..., Any], **inputs: Any) -> Any:
    """Run one LM step, counting its calls and tokens under ``stage``; an unparsable reply gives None."""
    with measured() as spent:
        try:
            result = predictor(**inputs)
        except AdapterParseError:  # a reply the adapter cannot parse degrades this step, noted per stage
            result = None
            costs.failures[stage] += 1
    costs.calls[stage] += spent.lm_calls
    costs.tokens[stage] += spent.input_tokens + spent.output_tokens
    return result


def at_once(costs: Costs, work: Callable[[Item, Costs], Result], items: Iterable[Item]) -> list[Result]:
    """``[work(item, costs) for item in items]``, the independent steps run at once on a remote LM
    (``disambig.lm.parallel``); each counts its costs apart, added to ``costs`` in item order."""
    def run(item: Item) -> tuple[Result, Costs]:
        own = Costs()
        return work(item, own), own

    done = ordered_map(run, items)
    for _, own in done:
        costs.add(own)
    return [result for result, _ in done]


def scope_chunks(corpus: Any, scope: str | None) -> list[dict[str, Any]]:
    """The chunks a question is asked over: a list of chunk dicts as given, or a corpus file's ``scope`` chunks."""
    if corpus is None:
        from disambig.errors import ConfigurationError

        raise ConfigurationError("this count program needs the chunks to count over: evaluate it on an aggregation "
                                 "dataset (disambig data spiderqa), or pass corpus=PATH (and scope=DB_ID)")
    if isinstance(corpus, list | tuple):
        return [dict(c) for c in corpus]
    from disambig.data.spiderqa import load_scope

    return load_scope(corpus, scope)


class DFA(dspy.Module):
    """Disambiguation–Filtering–Aggregation.

    Args:
        retriever: unused (DFA scans its chunk scope with its own tools); accepted for the registry.
        embedder: sentence encoder for the batching features (default all-MiniLM-L6-v2 when ``features`` needs it).
        corpus, scope: default chunk scope (a chunk list or a corpus JSONL path, and a ``db_id``) when a call
            gives none.
        disambiguation: ``guided`` (classify, then rewrite), ``direct`` (rewrite only) or ``none``.
        ask_user: ``f(clarification, options) -> answer`` for a live session; None takes the literal reading.
        max_steps: planner steps at most (ReAct's 10 in the paper's A.7.1).
        n_show: chunks shown to the planner and in each evaluator sample.
        memory_window: memory entries shown verbatim (older ones collapsed).
        fuzzy_threshold: threshold used when the planner gives none.
        max_candidates: stop on a ``complete`` verdict only at or below this many chunks (None: any size).
        lam: lambda of eq. 5.
        batch_tokens: M, chunk-text tokens per judge call.
        features: ``both``, ``tfidf`` or ``emb`` (the A.8.3 ablations).
        cluster_method: ``agglomerative`` or ``none`` (w/o offline clustering).
        cluster_distance: cosine distance threshold of the clustering.
        greedy_batching: False gives one batch per cluster (w/o greedy batching).
        dedup_auto, dedup_judge: similarity (0-100) to merge names automatically / to ask the judge.
        observe_discarded: False shows the evaluator only the kept chunks (the A.8.2 ablation).
    """

    KNOBS = {"max_steps": Knob(4, 16), "n_show": Knob(3, 12), "fuzzy_threshold": Knob(60, 95),
             "lam": Knob(0.0, 1.0), "cluster_distance": Knob(0.2, 0.8), "batch_tokens": Knob(500, 4000, step=250)}

    def __init__(self, retriever: Any = None, embedder: Any = None, corpus: Any = None, scope: str | None = None,
                 disambiguation: str = "guided", ask_user: Callable[[str, list[str]], str] | None = None,
                 max_steps: int = 10, n_show: int = 6, memory_window: int = 8, fuzzy_threshold: int = 85,
                 max_candidates: int | None = None, lam: float = 0.5, batch_tokens: int = 2000,
                 features: str = "both", cluster_method: str = "agglomerative", cluster_distance: float = 0.5,
                 greedy_batching: bool = True, dedup_auto: float = 95, dedup_judge: float = 80,
                 observe_discarded: bool = True) -> None:
        super().__init__()
        if disambiguation not in ("guided", "direct", "none"):
            raise ValueError(f"disambiguation={disambiguation!r}; choose guided, direct or none")
        if features not in ("both", "tfidf", "emb"):
            raise ValueError(f"features={features!r}; choose both, tfidf or emb")
        self.retriever, self.embedder, self.corpus, self.scope = retriever, embedder, corpus, scope
        self.disambiguation, self.ask_user = disambiguation, ask_user
        self.max_steps, self.n_show, self.memory_window = max_steps, n_show, memory_window
        self.fuzzy_threshold, self.max_candidates = fuzzy_threshold, max_candidates
        self.lam, self.batch_tokens, self.features = lam, batch_tokens, features
        self.cluster_method, self.cluster_distance, self.greedy_batching = cluster_method, cluster_distance, \
            greedy_batching
        self.dedup_auto, self.dedup_judge, self.observe_discarded = dedup_auto, dedup_judge, observe_discarded
        self.classify = dspy.Predict(ClassifyAggregationAmbiguity)
        self.clarify = dspy.Predict(ClarifyAmbiguity)
        self.rewrite = dspy.Predict(RewriteAggregationQuery)
        self.direct_rewrite = dspy.Predict(DirectRewrite)
        self.plan = dspy.Predict(PlanFilterStep)
        self.evaluate = dspy.Predict(EvaluateFilterResult)
        self.judge = dspy.Predict(JudgeBatch)
        self.same_entity = dspy.Predict(SameEntity)

    def forward(self, question: str, scope: str | None = None, corpus: Any = None) -> dspy.Prediction:
        chunks = scope_chunks(corpus if corpus is not None else self.corpus, scope or self.scope)
        with measured() as trace:
            costs = Costs()
            form = self.disambiguate(question, costs)
            state = self.filter(form, chunks, costs)
            final = state.final()
            entities, notes = self.aggregate(form, [state.chunks[i] for i in final.chunk_ids], costs)
            trace.notes.update(costs.notes())
            trace.notes.update(notes, rewritten_question=form.question, entity_type=form.entity_type,
                               conditions=list(form.conditions), connective=form.connective,
                               assumptions=list(form.assumptions), ambiguities=list(form.ambiguities),
                               scope_chunks=len(chunks), final_snapshot=final.index,
                               snapshots=[{**asdict(s), "chunk_ids": None, "size": len(s.chunk_ids),
                                           "verdict": state.verdicts.get(s.index, "")} for s in state.snapshots],
                               memory=[e.line() for e in state.memory])
        count = len(entities)
        shown = ", ".join(e["name"] for e in entities[:50]) + (", ..." if count > 50 else "")
        prediction = make_prediction([Interpretation(form.question, str(count))], f"{count}: {shown}".strip(), trace)
        prediction["count"] = count
        prediction["entities"] = entities
        prediction["retained_chunk_ids"] = list(final.chunk_ids)
        return prediction

    # Stage D -----------------------------------------------------------------------------------------------
    def disambiguate(self, question: str, costs: Costs) -> QueryForm:
        if self.disambiguation == "none":
            return QueryForm(question, conditions=(question,))
        if self.disambiguation == "direct":
            return to_form(call(costs, "disambig", self.direct_rewrite, question=question), question, ())
        found = call(costs, "disambig", self.classify, question=question)
        ambiguities = [a.model_dump() if hasattr(a, "model_dump") else dict(a)
                       for a in (getattr(found, "ambiguities", None) or [])]
        lines = [self.clarification(question, a, costs) for a in ambiguities]
        rewritten = call(costs, "disambig", self.rewrite, question=question, clarifications=lines)
        return to_form(rewritten, question, tuple(ambiguities))

    def clarification(self, question: str, ambiguity: dict, costs: Costs) -> str:
        """``Q: ... A: ...`` from the user in a live session; else the readings, left for the literal choice."""
        readings = [str(r) for r in ambiguity.get("readings") or []]
        if self.ask_user is None:
            return (f"{ambiguity.get('type')} '{ambiguity.get('span')}' unanswered; readings: "
                    f"{' | '.join(readings)}")
        asked = call(costs, "disambig", self.clarify, question=question, subtype=ambiguity.get("type"),
                     span=str(ambiguity.get("span") or ""), readings=readings)
        text = getattr(asked, "clarification_question", None) or f"Which reading of '{ambiguity.get('span')}'?"
        options = list(getattr(asked, "options", None) or readings)
        return f"Q: {text} A: {self.ask_user(text, options)}"

    # Stage F -----------------------------------------------------------------------------------------------
    def filter(self, form: QueryForm, chunks: list[dict], costs: Costs) -> FilterState:
        state = FilterState(chunks)
        idle = 0
        for _ in range(self.max_steps):
            plan = call(costs, "filter_plan", self.plan, question=form.question, conditions=list(form.conditions),
                        tool_manual=TOOL_MANUAL, snapshots=state.snapshots_text(),
                        memory=state.memory_text(self.memory_window), observation=state.observation(self.n_show))
            action = getattr(plan, "action", None)
            if action == "stop":
                break
            if action == "rollback":
                idle = idle + 1 if state.rollback(getattr(plan, "target_snapshot", -1), "planner") else 0
            elif action == "filter":
                outcome = state.apply(plan.tool, self.params(plan))
                if isinstance(outcome, str):
                    idle += 1
                else:
                    idle = 0
                    if self.judge_filter(form, state, outcome, costs):
                        break
            else:
                idle += 1
            if idle >= 2:
                break
        return state

    def params(self, plan: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"keywords": [str(k) for k in getattr(plan, "keywords", None) or []],
                                  "mode": getattr(plan, "mode", None) or "any"}
        if plan.tool == "fuzzy_match":
            threshold = getattr(plan, "threshold", None)
            params["threshold"] = threshold if isinstance(threshold, int) and 0 < threshold <= 100 \
                else self.fuzzy_threshold
        return params

    def judge_filter(self, form: QueryForm, state: FilterState, snapshot: Any, costs: Costs) -> bool:
        """Evaluate a new snapshot from kept and discarded samples; roll back if over-filtered. True = converged."""
        kept, discarded = state.view(snapshot.index), state.discarded(snapshot.index)
        kept_sample, discarded_sample = samples(form.question, kept, discarded, self.n_show)
        verdict = call(costs, "filter_eval", self.evaluate, question=form.question,
                       conditions=list(form.conditions), tool_call=f"{snapshot.tool} {snapshot.params}",
                       kept_count=len(kept), discarded_count=len(discarded), kept_sample=chunk_lines(kept_sample),
                       discarded_sample=chunk_lines(discarded_sample) if self.observe_discarded else "(not shown)")
        label = getattr(verdict, "verdict", None) or ""
        state.record(snapshot, label, getattr(verdict, "kept_summary", "") or "",
                     getattr(verdict, "discarded_summary", "") or "")
        if label == "over_filtered":
            state.rollback(snapshot.parent, "automatic: the evaluation found evidence among the discarded chunks")
            return False
        return label == "complete" and (self.max_candidates is None or len(kept) <= self.max_candidates)

    # Stage A -----------------------------------------------------------------------------------------------
    def aggregate(self, form: QueryForm, candidates: list[dict], costs: Costs) -> tuple[list[dict], dict]:
        if not candidates:
            return [], {"candidates": 0, "batches": [], "cp": 0, "judged_pairs": 0}
        batches = self.batches(candidates)
        by_id = {c["id"]: c for c in candidates}
        found: list[Found] = []

        def judge(batch: Any, spent: Costs) -> tuple[list[dict], Any]:
            members = [by_id[i] for i in batch.chunk_ids]
            lines = "\n".join(f"[{n}] {chunk_text(c)[: self.batch_tokens * 4]}" for n, c in enumerate(members, 1))
            return members, call(spent, "judge", self.judge, question=form.question, entity_type=form.entity_type,
                                 conditions=list(form.conditions), connective=form.connective, chunks=lines)

        for number, (members, judged) in enumerate(at_once(costs, judge, batches)):
            for entity in getattr(judged, "entities", None) or []:
                ids = tuple(members[n - 1]["id"] for n in entity.chunks
                            if isinstance(n, int) and 1 <= n <= len(members))
                if ids and entity.name.strip():
                    found.append(Found(entity.name.strip(), ids, number))
        merged = deduplicate(found, self.dedup_auto, self.dedup_judge,
                             same=lambda pairs: self.same(form, pairs, costs))
        entities = [{"name": e.name, "aliases": e.names[1:], "chunk_ids": e.chunk_ids} for e in merged.entities]
        notes = {"candidates": len(candidates), "cp": merged.candidate_pairs, "judged_pairs": merged.judged_pairs,
                 "batches": [{"chunks": len(b.chunk_ids), "tokens": b.tokens} for b in batches]}
        return entities, notes

    def batches(self, candidates: list[dict]) -> list[Any]:
        texts = [chunk_text(c) for c in candidates]
        tokens = [estimate_tokens(t) for t in texts]
        if len(candidates) == 1:
            from disambig.programs.dfa.batching import Batch

            return [Batch([candidates[0]["id"]], None, tokens[0])]
        vectors = chunk_features(texts, self._embedder(), self.features)
        clusters = cluster_chunks([c["id"] for c in candidates], tokens, vectors, self.cluster_distance,
                                  self.cluster_method)
        features = {c["id"]: v for c, v in zip(candidates, vectors, strict=True)}
        return greedy_batches(clusters, self.batch_tokens, self.lam, self.greedy_batching, features)

    def _embedder(self) -> Any:
        if self.features == "tfidf":
            return None
        if self.embedder is None:
            from disambig.retrieval.embedder import Embedder

            self.embedder = Embedder()
        return self.embedder

    def same(self, form: QueryForm, pairs: list[tuple[str, str]], costs: Costs) -> list[bool]:
        """The same-entity judge over borderline pairs, 20 pairs per call; a missing answer keeps a pair apart."""
        def judge(part: list[tuple[str, str]], spent: Costs) -> list[bool]:
            lines = "\n".join(f'{n}: "{a}" | "{b}"' for n, (a, b) in enumerate(part, 1))
            answer = call(spent, "dedup", self.same_entity, question=form.question, entity_type=form.entity_type,
                          dedup_rule=form.dedup_rule, pairs=lines)
            got = list(getattr(answer, "same", None) or [])
            return [bool(got[i]) if i < len(got) else False for i in range(len(part))]

        parts = [pairs[start:start + 20] for start in range(0, len(pairs), 20)]
        return [verdict for part in at_once(costs, judge, parts) for verdict in part]


def to_form(result: Any, question: str, ambiguities: tuple[dict, ...]) -> QueryForm:
    """The rewrite's structured form; the original question (one condition) when the reply was unusable."""
    if result is None or not str(getattr(result, "rewritten_question", "") or "").strip():
        return QueryForm(question, conditions=(question,), ambiguities=ambiguities,
                         assumptions=("rewrite unavailable: the question is used as asked",))
    conditions = tuple(str(c) for c in getattr(result, "conditions", None) or []) or (question,)
    return QueryForm(str(result.rewritten_question), str(getattr(result, "entity_type", "") or "item"), conditions,
                     getattr(result, "connective", None) or "AND", str(getattr(result, "counting_unit", "") or ""),
                     str(getattr(result, "dedup_rule", "") or ""),
                     tuple(str(a) for a in getattr(result, "assumptions", None) or []), ambiguities)
