"""ADF: agentic disambiguation, gated by the geometry of the first retrieval (seed 000, Algorithm 1).

1. retrieve 2k passages for the question and embed them; their dispersion and 2-means separation (eq. 1-2)
   put the question in a state (eq. 3): Unambiguous questions are answered from the top-k passages;
2. otherwise K-means with adaptive k (eq. 4) over the passages; clusters whose centroid is far from the
   question are dropped (eq. 5);
3. one sub-question per kept cluster (LM), one hypothetical passage per sub-question (HyDE, LM);
4. dual-pathway retrieval (the sub-question and its hypothetical passage), fused by RRF on passage ids (eq. 6);
5. structured multi-intent synthesis (LM): intents, a long answer and a concise answer.

With a second LM (``--verifier-lm``), step 3's sub-questions and hypothetical passages are written by it and the
synthesis by the run's LM: a small model for the short steps, or a stronger one for the intents.

Two profiles: ``paper`` (the equations and Algorithm 1 as written) and ``authors`` (what the released code
does: mean distance, strict thresholds 0.8 / 0.1, Uncertain not decomposed on AmbigNQ, every ASQA question
decomposed, K-means on the top 5 so k = 2, max-score merge instead of RRF). See ``PROFILES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import dspy
import numpy as np

from disambig.lm.usage import Trace, measured
from disambig.lm.verifier import using_verifier
from disambig.programs.adf.gate import AmbiguityGate, is_ambiguous
from disambig.programs.adf.geometry import (
    N_INIT,
    SEED,
    adaptive_k,
    cluster_relevance,
    coherence,
    fuse,
    kmeans,
    max_score_merge,
)
from disambig.programs.context import format_passages
from disambig.programs.interpret import distinct
from disambig.programs.knobs import Knob
from disambig.programs.rerank import embedder_of
from disambig.programs.result import Interpretation, make_prediction
from disambig.signatures import ClusterSubQuestion, DistinguishingPassage, EntityPassage, MultiIntentSynthesis

Profile = Literal["paper", "authors"]
Style = Literal["ambignq", "asqa"]
STYLES = ("ambignq", "asqa")

PAPER = {
    "dispersion": "variance", "strict": False, "uncertain": "decompose", "always_decompose": False,
    "initial_k": 10, "cluster_depth": 10, "k": 5, "pathway_k": 5, "k_min": 2, "k_max": 4, "tau_rel": 0.2,
    "fusion": "rrf", "eta": 60, "fresh_retrieval": True, "hyde_temperature": 0.7,
}
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    # Section 5.3.4 and Algorithm 1; thresholds per dataset from section 5.3.4.
    "paper": {
        "ambignq": PAPER | {"tau_var": 0.25, "tau_sep": 0.1},
        "asqa": PAPER | {"tau_var": 0.15, "tau_sep": 0.05},
    },
    # The released code (spec section 1.14): mean distance, `>`, 0.8 / 0.1; top-5 clustered; max-score merge;
    # the first k of the initial retrieval on the direct path; ASQA always decomposed.
    "authors": {
        style: PAPER | {"dispersion": "mean_distance", "strict": True, "tau_var": 0.8, "tau_sep": 0.1,
                        "uncertain": "answer" if style == "ambignq" else "decompose",
                        "always_decompose": style == "asqa", "cluster_depth": 5, "fusion": "max-score",
                        "fresh_retrieval": False}
        for style in STYLES
    },
}


class ADF(dspy.Module):
    """Agentic disambiguation framework.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder for the coherence statistics and eq. 5 (``encode(texts)`` -> unit vectors);
            by default the retriever's own, else all-MiniLM-L6-v2.
        profile: ``paper`` or ``authors``: the defaults for every argument below left as None.
        style: ``ambignq`` (short answers: entity-heavy HyDE, the AmbigNQ thresholds) or ``asqa`` (long-form:
            distinguishing HyDE, the ASQA thresholds). ``disambig eval`` and ``compile`` set it from the dataset's
            row format unless ``--option style=...`` is given.
        tau_var, tau_sep: eq. 3 thresholds on dispersion and separation.
        tau_rel: eq. 5, minimum cosine between the question and a cluster centroid.
        initial_k: passages of the first retrieval (2k), measured for coherence.
        cluster_depth: how many of them K-means clusters (10 in the paper, 5 in the released code).
        k: passages the answer is written from.
        pathway_k: passages per pathway (sub-question, hypothetical passage).
        k_min, k_max: eq. 4 bounds on the number of clusters.
        eta: eq. 6 RRF constant.
        cluster_passages, cluster_chars: passages of a cluster shown to the sub-question step, and their length.
        dispersion, strict, uncertain: the state rule's statistic, comparison, and the Uncertain route
            (see ``AmbiguityGate``).
        always_decompose: decompose every question whatever its state (the released code on ASQA).
        fusion: ``rrf`` (eq. 6) or ``max-score`` (the released code).
        fresh_retrieval: on the direct path, retrieve k passages anew (Algorithm 1 line 6) rather than reuse
            the first k of the initial retrieval.
        hyde_temperature: sampling temperature of the HyDE step (0.7 in both).
        synthesis_tokens: token limit of the synthesis reply (intents, concise answer and long answer); None keeps
            the LM's own cap, as the released code does (256 on the embedded LM, where a larger cap mostly buys
            the small model's repetitions of its long answer).
        seed, n_init: K-means seed and restarts.
    """

    KNOBS = {
        "tau_var": Knob(0.0, 1.2, step=0.01), "tau_sep": Knob(0.0, 0.5, step=0.01),
        "tau_rel": Knob(0.0, 0.6, step=0.05),
        "initial_k": Knob(6, 20, step=2), "cluster_depth": Knob(4, 20, step=2), "k": Knob(3, 8),
        "pathway_k": Knob(3, 10), "k_min": Knob(1, 2), "k_max": Knob(2, 6), "eta": Knob(1, 100, step=1),
        "cluster_passages": Knob(1, 5),
    }

    def __init__(self, retriever: Any, embedder: Any = None, profile: Profile = "paper", style: Style = "ambignq",
                 tau_var: float | None = None, tau_sep: float | None = None, tau_rel: float | None = None,
                 initial_k: int | None = None, cluster_depth: int | None = None, k: int | None = None,
                 pathway_k: int | None = None, k_min: int | None = None, k_max: int | None = None,
                 eta: float | None = None, cluster_passages: int = 3, cluster_chars: int = 200,
                 dispersion: str | None = None, strict: bool | None = None, uncertain: str | None = None,
                 always_decompose: bool | None = None, fusion: str | None = None,
                 fresh_retrieval: bool | None = None, hyde_temperature: float | None = None,
                 synthesis_tokens: int | None = None, seed: int = SEED, n_init: int = N_INIT) -> None:
        super().__init__()
        given = {"tau_var": tau_var, "tau_sep": tau_sep, "tau_rel": tau_rel, "initial_k": initial_k,
                 "cluster_depth": cluster_depth, "k": k, "pathway_k": pathway_k, "k_min": k_min, "k_max": k_max,
                 "eta": eta, "dispersion": dispersion, "strict": strict, "uncertain": uncertain,
                 "always_decompose": always_decompose, "fusion": fusion, "fresh_retrieval": fresh_retrieval,
                 "hyde_temperature": hyde_temperature}
        settings = profile_settings(profile, style) | {n: v for n, v in given.items() if v is not None}
        self.retriever, self.embedder = retriever, embedder
        self.profile, self.style = profile, style
        self.settings = check_settings(settings)
        self.cluster_passages, self.cluster_chars = cluster_passages, cluster_chars
        self.seed, self.n_init = seed, n_init
        self.gate = AmbiguityGate(settings["tau_var"], settings["tau_sep"], settings["dispersion"],
                                  settings["strict"], settings["uncertain"])
        self.sub_question = dspy.Predict(ClusterSubQuestion)
        self.hyde = dspy.Predict(EntityPassage if style == "ambignq" else DistinguishingPassage,
                                 temperature=settings["hyde_temperature"])
        cap = {} if synthesis_tokens is None else {"max_tokens": synthesis_tokens}  # None must not unset the LM's
        self.synthesize = dspy.Predict(MultiIntentSynthesis, **cap)

    def forward(self, question: str) -> dspy.Prediction:
        s = self.settings
        with measured() as trace:
            initial = self.retrieve(question, s["initial_k"], trace)               # 1: D_init <- Retrieve(q, 2k)
            vectors = self.encode([passage_text(p) for p in initial])             # 2: V <- Encode(D_init)
            stats = coherence(vectors, self.seed, self.n_init)                    # 3: sigma2_var, sigma_sep
            state = self.gate.state(stats)                                        # 4: S_q
            decompose = s["always_decompose"] or self.gate.decomposes(state)
            trace.notes.update(profile=self.profile, style=self.style, state=state, statistics=stats.to_dict(),
                               thresholds=dict(zip(("tau_var", "tau_sep"), self.gate.thresholds, strict=True)),
                               decomposed=decompose)
            if decompose:                                                          # 8-21
                sub_questions, passages, cited = self.disambiguate(question, initial, vectors, trace)
            else:                                                                  # 5-7
                sub_questions, cited = [], {}
                passages = self.retrieve(question, s["k"], trace) if s["fresh_retrieval"] else initial[: s["k"]]
            found, long_answer = self.answer(question, passages, sub_questions, cited, trace)   # 22
        return make_prediction(found, long_answer, trace, passages)

    def disambiguate(self, question: str, initial: list[Any], vectors: np.ndarray,
                     trace: Trace) -> tuple[list[str], list[Any], dict[str, list[str]]]:
        """Algorithm 1 lines 8-21: clusters, sub-questions, HyDE, dual retrieval, fusion."""
        s = self.settings
        groups = self.clusters(question, initial[: s["cluster_depth"]], vectors[: s["cluster_depth"]], trace)
        with using_verifier():  # the run's second LM, if it has one (--verifier-lm), writes both
            asked = [self.sub_question(question=question, passages=self.cluster_context(g)).sub_question
                     for g in groups]                                              # 12: q_j <- SummarizeIntent
            sub_questions = list(distinct([q for q in asked if q], len(asked)) or (question,))
            hypotheticals = [(self.hyde(question=q).passage or "").strip() for q in sub_questions]  # 13: HyDE(q_j)
        pathways, lists, cited = [], [], {}
        for sub_question, hypothetical in zip(sub_questions, hypotheticals, strict=True):
            direct = self.retrieve(sub_question, s["pathway_k"], trace)            # 19: Retrieve(q_j)
            latent = self.retrieve(hypothetical, s["pathway_k"], trace) if hypothetical else []   # Retrieve(d_j)
            lists += [direct, latent]
            pathways.append({"sub_question": sub_question, "hyde": hypothetical,
                             "direct": [p.id for p in direct], "latent": [p.id for p in latent]})
        passages = self.merge(lists)                                                # 21: D_final
        final = {p.id for p in passages}
        for pathway in pathways:
            ids = pathway["direct"] + pathway["latent"]
            cited[pathway["sub_question"]] = [i for i in dict.fromkeys(ids) if i in final]
        trace.notes.update(sub_questions=sub_questions, pathways=pathways,
                           fused=[{"id": p.id, "title": p.title, "score": p.score} for p in passages])
        return sub_questions, passages, cited

    def clusters(self, question: str, passages: list[Any], vectors: np.ndarray, trace: Trace) -> list[list[Any]]:
        """Lines 8-11: K-means with adaptive k (eq. 4), then the clusters relevant to the question (eq. 5)."""
        s = self.settings
        if len(passages) < 2:
            trace.notes.update(k=0, clusters=[])
            return []
        k = adaptive_k(len(passages), s["k_min"], s["k_max"])
        labels, centroids = kmeans(vectors, k, self.seed, self.n_init)
        relevance = cluster_relevance(self.encode([question])[0], centroids)
        groups, described = [], []
        for j in range(k):
            members = [p for p, label in zip(passages, labels, strict=True) if label == j]
            kept = bool(relevance[j] >= s["tau_rel"])
            described.append({"passage_ids": [p.id for p in members], "relevance": float(relevance[j]), "kept": kept})
            if kept and members:
                groups.append(members)
        trace.notes.update(k=k, clusters=described)
        return groups

    def answer(self, question: str, passages: list[Any], sub_questions: list[str], cited: dict[str, list[str]],
               trace: Trace) -> tuple[list[Interpretation], str]:
        """Line 22: structured synthesis; interpretations pair each sub-question with its intent by position."""
        with measured() as synthesis:
            result = self.synthesize(passages=format_passages(passages), question=question,
                                     sub_questions=sub_questions)
        intents = list(result.intents or [])
        concise = (result.concise_answer or "").strip()
        trace.notes.update(concise_answer=concise, intents=[i.model_dump() for i in intents], synthesis_only={
            "lm_calls": synthesis.lm_calls, "input_tokens": synthesis.input_tokens,
            "output_tokens": synthesis.output_tokens})
        return interpretations(question, sub_questions, intents, concise, cited), (result.long_answer or "").strip()

    def retrieve(self, query: str, k: int, trace: Trace) -> list[Any]:
        trace.retrieval_calls += 1
        return self.retriever.search(query, min(k, self.retriever.size))

    def merge(self, ranked_lists: list[list[Any]]) -> list[Any]:
        """Eq. 6 (RRF on passage ids) or the released code's max-score merge; the top k passages."""
        s = self.settings
        if s["fusion"] == "rrf":
            return fuse(ranked_lists, s["eta"], s["k"])
        return max_score_merge(ranked_lists, s["k"])

    def cluster_context(self, members: list[Any]) -> str:
        """The first ``cluster_passages`` passages of a cluster (rank order), each cut to ``cluster_chars``."""
        shown = members[: self.cluster_passages]
        return format_passages([replace(p, text=clip(p.text, self.cluster_chars)) for p in shown])

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0))
        if self.embedder is None:
            self.embedder = embedder_of(self.retriever)
        return np.asarray(self.embedder.encode(texts), dtype=float)

    @classmethod
    def fit_gate(cls, retriever: Any, trainset: Sequence[Any], **kwargs: Any) -> dict[str, float]:
        """Learn tau_var and tau_sep from the train questions' first retrieval (no LM calls).

        Labels: ambiguous iff the example has more than one annotated interpretation. Returns the learned
        thresholds as constructor arguments.
        """
        program = cls(retriever, **kwargs)
        stats = [program.statistics(ex.question) for ex in trainset]
        gate = program.gate.fit(stats, [is_ambiguous(ex) for ex in trainset])
        return {"tau_var": gate.tau_var_, "tau_sep": gate.tau_sep_}

    def statistics(self, question: str) -> Any:
        """Lines 1-3 alone: the coherence of the question's first retrieval."""
        initial = self.retriever.search(question, min(self.settings["initial_k"], self.retriever.size))
        return coherence(self.encode([passage_text(p) for p in initial]), self.seed, self.n_init)


def interpretations(question: str, sub_questions: list[str], intents: list[Any], concise: str,
                    cited: dict[str, list[str]]) -> list[Interpretation]:
    """One per sub-question: the intent at the same position gives the answer (its key facts), else the
    concise answer when there is a single reading. Without sub-questions, or when no sub-question got an answer
    (a reply that lists no intents for several readings), the question itself with the concise answer, so the
    synthesis's short answer is never lost."""
    whole = [Interpretation(question, concise)] if concise else []
    if not sub_questions:
        return whole
    out = []
    for n, sub_question in enumerate(sub_questions):
        intent = intents[n] if n < len(intents) else None
        facts = "; ".join(f.strip() for f in intent.key_facts if f.strip()) if intent is not None else ""
        answer = facts or (concise if len(sub_questions) == 1 else "")
        if answer:
            score = min(max(float(intent.confidence), 0.0), 1.0) if intent is not None else None
            out.append(Interpretation(sub_question, answer, tuple(cited.get(sub_question, [])), score))
    return out or whole


def profile_settings(profile: str, style: str) -> dict[str, Any]:
    """The defaults of ``profile`` (``paper`` or ``authors``) for ``style`` (``ambignq`` or ``asqa``)."""
    if profile not in PROFILES:
        raise ValueError(f"profile={profile!r} is not known; choose one of {', '.join(PROFILES)}")
    if style not in STYLES:
        raise ValueError(f"style={style!r} is not known; choose one of {', '.join(STYLES)}")
    return dict(PROFILES[profile][style])


def check_settings(s: dict[str, Any]) -> dict[str, Any]:
    """``s`` when every value is usable; otherwise a ``ValueError`` naming the value and the fix."""
    for name in ("initial_k", "cluster_depth", "k", "pathway_k"):
        if not isinstance(s[name], int) or s[name] < 1:
            raise ValueError(f"{name}={s[name]!r} must be a positive integer")
    adaptive_k(2, s["k_min"], s["k_max"])  # validates the bounds
    if s["fusion"] not in ("rrf", "max-score"):
        raise ValueError(f"fusion={s['fusion']!r}; choose rrf (eq. 6) or max-score (the released code)")
    if s["eta"] <= 0:
        raise ValueError(f"eta={s['eta']} must be positive (60 is the usual RRF constant)")
    return s


def passage_text(passage: Any) -> str:
    """What is embedded for a passage: ``title: text`` (the title alone carries much of the topic)."""
    return f"{passage.title}: {passage.text}" if passage.title else passage.text


def clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " ..."
