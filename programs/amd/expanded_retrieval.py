"""Retrievers that expand the query with an LM program first: AMD (sparse, dense, RRF) and the baselines Q2D, Q2C,
GenQREnsemble and GenQRFusion, built on the BM25 and dense retrievers.

Seed: AMD (003), section 5's three formulas. Sparse: the query, the sub-questions and the refined answers as one
Lucene query string. Dense: ``q* = 0.7 emb(Q) + 0.3 mean_i emb(a'_i)``, re-normalised and searched in embedding
space (the text is never re-encoded as one query). RRF: ``score(d) = sum_i 1 / (k + r_i(d))`` over the rankings
of the per-sub-question queries. The baselines use the same three compositions so that only the expansion differs.

Retrieval is the lowest layer and cannot import programs, so ``disambig.retrieval.factory`` names these kinds
(``EXPANDED_KINDS``) and imports this module by name when one is asked for (``build_expanded``).

Expansions cost LM calls, so each is kept on disk (``CACHE_DIR/expansions``, one JSON file per query) keyed by the
LM, the expansion program's state (prompts, demos, settings) and the query: evaluating a retriever a second time
costs no LM call. ``usage`` counts what the expansions of a retriever's queries cost.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from disambig.errors import ConfigurationError
from disambig.lm.usage import measured
from disambig.paths import expanded
from disambig.programs.amd.expansion import POSTER_TEMPERATURE, GenQR, QueryToChainOfThought, QueryToDocument
from disambig.programs.amd.program import AMD
from disambig.retrieval.base import BatchRetriever, check_query
from disambig.retrieval.fusion import RRF_K, rrf
from disambig.retrieval.passage import Passage

CACHE_SUBDIR = "expansions"
CACHE_VERSION = 1
QUERY_REPEATS = 5
QUERY_WEIGHT = 0.7
LM_KEY_PARAMS = ("temperature", "max_tokens", "top_p", "seed")

EXPANDERS: dict[str, type[dspy.Module]] = {"amd": AMD, "q2d": QueryToDocument, "q2c": QueryToChainOfThought,
                                           "genqr": GenQR}

EXPANDED_KINDS: dict[str, tuple[str, str]] = {
    "amd-sparse": ("amd", "sparse"), "amd-dense": ("amd", "dense"), "amd-rrf": ("amd", "rrf"),
    "q2d-sparse": ("q2d", "sparse"), "q2d-dense": ("q2d", "dense"),
    "q2c-sparse": ("q2c", "sparse"), "q2c-dense": ("q2c", "dense"),
    "genqr-ensemble": ("genqr", "sparse"), "genqr-fusion": ("genqr", "rrf"),
}
"""Each kind: ``(expansion program, composition)``; ``sparse`` and ``rrf`` search BM25, ``dense`` the FAISS index."""


@dataclass(frozen=True)
class Expansion:
    """What an expansion program gave for one query (see ``disambig.programs.amd.expansion``)."""

    query: str
    sub_questions: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    fusion_queries: tuple[str, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_prediction(cls, query: str, prediction: Any) -> Expansion:
        return cls(query, tuple(prediction.sub_questions), tuple(prediction.texts), tuple(prediction.fusion_queries),
                   dict(prediction.notes))

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Expansion:
        return cls(row["query"], tuple(row["sub_questions"]), tuple(row["texts"]), tuple(row["fusion_queries"]),
                   dict(row.get("notes") or {}))

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "sub_questions": list(self.sub_questions), "texts": list(self.texts),
                "fusion_queries": list(self.fusion_queries), "notes": self.notes}


COST_FIELDS = ("lm_calls", "input_tokens", "output_tokens", "seconds")


@dataclass
class ExpansionUsage:
    """What a retriever's expansions cost: queries expanded by the LM or read from the cache, LM calls and tokens
    (of this process's LM calls only; cached expansions cost none), and seconds spent expanding. ``made`` sums
    what making each expansion cost, cached ones included as their cache entry recorded it: the method's cost,
    whichever run paid it (a benchmark resumed from the cache still reports it)."""

    queries: int = 0
    cached: int = 0
    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    made_by_query: dict[str, dict[str, float]] = field(default_factory=dict)
    reflection_by_query: dict[str, dict[str, int]] = field(default_factory=dict)
    """AMD's agents per distinct query (``reflection``): sub-questions asked, answers written and kept."""

    @property
    def reflection(self) -> dict[str, int] | None:
        """AMD's agents over the distinct queries: how many got no sub-questions (their questioning reply could not
        be parsed), answers written, and answers reflection kept; None for expansions without them (Q2D, ...)."""
        if not self.reflection_by_query:
            return None
        rows = self.reflection_by_query.values()
        return {"queries": len(rows), "questioning_failed": sum(not r["sub_questions"] for r in rows),
                "answers": sum(r["answers"] for r in rows), "kept": sum(r["kept"] for r in rows)}

    @property
    def made(self) -> dict[str, float]:
        """Summed over the distinct queries (a query searched twice was expanded once)."""
        return {name: sum(cost[name] for cost in self.made_by_query.values()) for name in COST_FIELDS}

    def per_query(self, queries: int | None = None) -> dict[str, float]:
        """LM calls, tokens and expansion seconds per query (over ``queries``, by default the queries expanded), of
        this process and (``made_*``) of making the expansions."""
        n = max(queries or self.queries, 1)
        return {"lm_calls": self.lm_calls / n, "input_tokens": self.input_tokens / n,
                "output_tokens": self.output_tokens / n, "expansion_seconds": self.seconds / n,
                **{f"made_{name}": value / n for name, value in self.made.items()}}


class ExpansionCache:
    """One JSON file per expansion under ``folder``, named by its key (written atomically; never pickle)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None  # a damaged entry is recomputed and overwritten
        return row if isinstance(row, dict) and row.get("version") == CACHE_VERSION else None

    def put(self, key: str, row: dict[str, Any]) -> None:
        from disambig.data.atomic import write_json

        write_json(self._path(key), {"version": CACHE_VERSION, **row}, indent=None)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"


def lm_identity(lm: Any) -> str:
    """The LM's model name and the generation settings that change its replies (no credentials)."""
    kwargs = getattr(lm, "kwargs", {}) or {}
    params = {k: kwargs[k] for k in LM_KEY_PARAMS if k in kwargs}
    return f"{getattr(lm, 'model', type(lm).__name__)} {json.dumps(params, sort_keys=True, default=str)}"


def program_identity(expander: dspy.Module) -> str:
    """A hash of the expansion program: class, decoding settings, and its state (instructions, demos)."""
    settings = {k: getattr(expander, k, None) for k in ("temperature", "max_tokens", "reflect", "instructions")}
    state = {"program": type(expander).__name__, "settings": settings, "state": expander.dump_state()}
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


def expansion_key(lm: str, program: str, query: str) -> str:
    """The cache key of one query's expansion by one LM and one program state."""
    return hashlib.sha256(json.dumps([lm, program, query]).encode()).hexdigest()


def sparse_query(expansion: Expansion, query_repeats: int = QUERY_REPEATS) -> str:
    """The Lucene query string: the query ``query_repeats`` times, the sub-questions, then the generated texts.

    Lucene's bag-of-words query weighs a term by how often it occurs, so repeating the query keeps its own terms
    weighty against a long expansion (query2doc repeats it five times; the poster's formula does not say).
    """
    return " ".join([expansion.query] * query_repeats + list(expansion.sub_questions) + list(expansion.texts))


def mixed_vector(query_vector: Any, text_vectors: Any, query_weight: float = QUERY_WEIGHT) -> Any:
    """``w q + (1 - w) mean(texts)``, re-normalised to unit length; the query vector alone when there is no text.

    The poster's dense formula with ``w = 0.7``; inputs are unit vectors as the embedder gives them.
    """
    import numpy as np

    query_vector = np.asarray(query_vector, dtype=np.float32)
    text_vectors = np.asarray(text_vectors, dtype=np.float32).reshape(-1, query_vector.shape[-1])
    if not len(text_vectors):
        return query_vector
    mixed = query_weight * query_vector + (1 - query_weight) * text_vectors.mean(axis=0)
    norm = float(np.linalg.norm(mixed))
    return (mixed / norm if norm > 0 else query_vector).astype(np.float32)


class ExpandedRetriever(BatchRetriever):
    """A retriever that expands each query with ``expander`` and searches ``base`` with the expansion.

    The expansion runs on the configured LM (``dspy.configure`` / ``dspy.context``), else on the LM of
    ``settings`` (built once, on first use). Subclasses define how an expansion is searched.

    Args:
        name: the retriever kind (``amd-sparse`` ...).
        base: the retriever searched (BM25 for sparse and fusion, dense for dense).
        expander: the expansion program (``AMD``, ``QueryToDocument``, ``QueryToChainOfThought``, ``GenQR``).
        cache: where expansions are kept; None keeps none.
        settings: ``disambig.settings.Settings`` whose LM expands queries when none is configured.
    """

    def __init__(self, name: str, base: Any, expander: dspy.Module, cache: ExpansionCache | None = None,
                 settings: Any = None) -> None:
        self.name, self.base, self.expander = name, base, expander
        self.cache, self.settings = cache, settings
        self.usage = ExpansionUsage()
        self._lock = threading.Lock()
        self._lm: Any = None

    @property
    def size(self) -> int:
        return self.base.size

    @property
    def embedder(self) -> Any:
        return getattr(self.base, "embedder", None)

    def ranked(self, queries: list[str], k: int) -> list[list[Passage]]:
        return self.search_expanded([self.expand(q) for q in queries], k)

    def search_expanded(self, expansions: list[Expansion], k: int) -> list[list[Passage]]:
        raise NotImplementedError

    def expand(self, query: str, expander: dspy.Module | None = None, use_cache: bool = True) -> Expansion:
        """The expansion of ``query`` by ``expander`` (this retriever's own by default): from the cache when this
        LM and program state expanded it before, unless ``use_cache`` is off."""
        query = check_query(query)
        expander = expander or self.expander
        hit = self.cached(query, expander) if use_cache else None
        if hit is not None:
            return hit
        from disambig.lm.runtime import default_adapter

        lm = self._current_lm()
        with dspy.context(lm=lm, adapter=dspy.settings.adapter or default_adapter()), measured() as trace:
            expansion = Expansion.from_prediction(query, expander(query=query))
        cost = {"lm_calls": trace.lm_calls, "input_tokens": trace.input_tokens,
                "output_tokens": trace.output_tokens, "seconds": round(trace.seconds, 3)}
        self._count(query, trace=trace, recorded=cost, expansion=expansion)
        if use_cache and self.cache:
            self.cache.put(self._key(query, expander), {"lm": lm_identity(lm), "program": type(expander).__name__,
                                                         "expansion": expansion.to_dict(), "cost": cost})
        return expansion

    def cached(self, query: str, expander: dspy.Module | None = None) -> Expansion | None:
        """The cached expansion of ``query`` by this LM and ``expander`` (counted as a cache hit), or None; never
        calls the LM."""
        query = check_query(query)
        row = self.cache.get(self._key(query, expander or self.expander)) if self.cache else None
        if row is None:
            return None
        expansion = Expansion.from_dict(row["expansion"])
        self._count(query, cached=True, recorded=row.get("cost"), expansion=expansion)
        return expansion

    def _key(self, query: str, expander: dspy.Module) -> str:
        return expansion_key(lm_identity(self._current_lm()), program_identity(expander), query)

    def _current_lm(self) -> Any:
        if dspy.settings.lm is not None:
            return dspy.settings.lm
        with self._lock:
            if self._lm is None:
                if self.settings is None:
                    raise ConfigurationError(f"retriever {self.name!r} expands queries with an LM; configure one "
                                             "(dspy.configure(lm=...)) or build it with settings (--lm)")
                from disambig.lm.runtime import build_lm

                self._lm = build_lm(self.settings)
        return self._lm

    def _count(self, query: str, cached: bool = False, trace: Any = None,
               recorded: dict[str, Any] | None = None, expansion: Expansion | None = None) -> None:
        recorded = recorded or {}  # an entry from before costs were recorded counts as free
        notes = expansion.notes if expansion is not None else {}
        with self._lock:
            if "answers" in notes and "kept" in notes:  # AMD's agents (programs/amd/program.py)
                self.usage.reflection_by_query.setdefault(query, {
                    "sub_questions": len(expansion.sub_questions), "answers": sum(bool(a) for a in notes["answers"]),
                    "kept": sum(bool(k) for k in notes["kept"])})
            self.usage.queries += 1
            self.usage.cached += int(cached)
            self.usage.made_by_query.setdefault(query, {
                name: float(v) if isinstance(v := recorded.get(name), int | float) else 0.0 for name in COST_FIELDS})
            if trace is not None:
                self.usage.lm_calls += trace.lm_calls
                self.usage.input_tokens += trace.input_tokens
                self.usage.output_tokens += trace.output_tokens
                self.usage.seconds += trace.seconds


class SparseExpansion(ExpandedRetriever):
    """BM25 with the expansion as one Lucene query string (``sparse_query``): AMD sparse, Q2D, Q2C, GenQREnsemble.

    Args:
        query_repeats: how often the query is repeated before the expansion (the poster is silent; 5 as in
            query2doc, the same for every expansion so that only the expansion differs). A knob.
        (others): see ``ExpandedRetriever``.
    """

    def __init__(self, name: str, base: Any, expander: dspy.Module, cache: ExpansionCache | None = None,
                 settings: Any = None, query_repeats: int = QUERY_REPEATS) -> None:
        super().__init__(name, base, expander, cache, settings)
        if isinstance(query_repeats, bool) or not isinstance(query_repeats, int) or query_repeats < 1:
            raise ValueError(f"query_repeats={query_repeats!r} must be a positive integer (5 as in query2doc)")
        self.query_repeats = query_repeats

    def search_expanded(self, expansions: list[Expansion], k: int) -> list[list[Passage]]:
        return self.base.batch_search([sparse_query(e, self.query_repeats) for e in expansions], k)


class DenseExpansion(ExpandedRetriever):
    """Dense search with ``query_weight * emb(query) + (1 - query_weight) * mean emb(texts)``, re-normalised,
    looked up in the dense index directly (``mixed_vector``): AMD dense, Q2D dense, Q2C dense.

    Args:
        query_weight: the query's share of the mix (the poster's 0.7). A knob.
        (others): see ``ExpandedRetriever``; ``base`` is a ``DenseRetriever``.
    """

    def __init__(self, name: str, base: Any, expander: dspy.Module, cache: ExpansionCache | None = None,
                 settings: Any = None, query_weight: float = QUERY_WEIGHT) -> None:
        super().__init__(name, base, expander, cache, settings)
        if not 0 <= query_weight <= 1:
            raise ValueError(f"query_weight={query_weight} must lie between 0 and 1 (the poster's 0.7)")
        self.query_weight = query_weight

    def query_vector(self, expansion: Expansion) -> Any:
        """The unit query vector of one expansion."""
        vectors = self.base.embedder.encode([expansion.query, *expansion.texts])
        return mixed_vector(vectors[0], vectors[1:], self.query_weight)

    def search_expanded(self, expansions: list[Expansion], k: int) -> list[list[Passage]]:
        import numpy as np

        return self.base.search_vectors(np.vstack([self.query_vector(e) for e in expansions]), k)


class FusionExpansion(ExpandedRetriever):
    """RRF over BM25 rankings of the expansion's fusion queries (one per sub-question for AMD, one per instruction
    for GenQRFusion): ``score(d) = sum_i 1 / (rrf_k + r_i(d))``, fused by passage id.

    Args:
        rrf_k: the RRF constant (the poster does not give it; 60, the usual value). A knob.
        include_query: also fuse the original query's own ranking (the poster's sum runs over the sub-questions
            only, so off by default). A knob.
        depth: passages taken from each ranking before fusion (at least ``k``).
        (others): see ``ExpandedRetriever``.
    """

    def __init__(self, name: str, base: Any, expander: dspy.Module, cache: ExpansionCache | None = None,
                 settings: Any = None, rrf_k: float = RRF_K, include_query: bool = False, depth: int = 100) -> None:
        super().__init__(name, base, expander, cache, settings)
        if rrf_k <= 0 or depth < 1:
            raise ValueError(f"rrf_k={rrf_k} must be positive and depth={depth} at least 1")
        self.rrf_k, self.include_query, self.depth = rrf_k, include_query, depth

    def fusion_queries(self, expansion: Expansion) -> list[str]:
        """The queries whose rankings are fused; the query itself when the expansion gave none."""
        queries = list(expansion.fusion_queries)
        if self.include_query or not queries:
            queries.insert(0, expansion.query)
        return queries

    def search_expanded(self, expansions: list[Expansion], k: int) -> list[list[Passage]]:
        groups = [self.fusion_queries(e) for e in expansions]
        flat = [q for group in groups for q in group]
        rankings = iter(self.base.batch_search(flat, min(max(self.depth, k), self.size)))
        return [rrf([next(rankings) for _ in group], k=self.rrf_k, top=k) for group in groups]


COMPOSITIONS: dict[str, type[ExpandedRetriever]] = {"sparse": SparseExpansion, "dense": DenseExpansion,
                                                    "rrf": FusionExpansion}
KNOBS: dict[str, tuple[str, ...]] = {"sparse": ("query_repeats",), "dense": ("query_weight",),
                                     "rrf": ("include_query",)}
PROGRAM_OPTIONS: dict[str, tuple[str, ...]] = {"amd": ("reflect",), "q2d": (), "q2c": (), "genqr": ("instructions",)}


def make_expander(method: str, temperature: float | None = POSTER_TEMPERATURE, max_tokens: int | None = None,
                  state: str | Path | None = None, **options: Any) -> dspy.Module:
    """The expansion program ``method`` (``amd``, ``q2d``, ``q2c``, ``genqr``), loaded from a saved JSON
    ``state`` (a compiled program's prompts and demos) when given."""
    if method not in EXPANDERS:
        raise ConfigurationError(f"unknown expansion {method!r}; choose one of {', '.join(EXPANDERS)}")
    expander = EXPANDERS[method](temperature=temperature, max_tokens=max_tokens, **options)
    if state:
        path = Path(state)
        if path.suffix != ".json" or not path.is_file():
            raise ConfigurationError(f"expansion state {str(path)!r} is not a JSON file; pass the state file a "
                                     "compile saved (never pickle)")
        expander.load_state(expander_state(json.loads(path.read_text(encoding="utf-8"))))
    return expander


def expander_state(state: dict[str, Any]) -> dict[str, Any]:
    """An expansion program's saved state, also from a compiled ``ExpansionSearch`` (keys ``expander.NAME``)."""
    prefix = f"{ExpansionSearch.EXPANDER}."
    if any(key.startswith(prefix) for key in state):
        return {key.removeprefix(prefix): value for key, value in state.items() if key.startswith(prefix)}
    return state


def build_expanded(kind: str, corpus: str, settings: Any, embedder: Any = None, auto_build: bool = True, *,
                   k1: float = 0.9, b: float = 0.4, rrf_k: float = RRF_K, depth: int = 100,
                   temperature: float | None = POSTER_TEMPERATURE, max_tokens: int | None = None,
                   state: str | Path | None = None, cache: bool = True, **options: Any) -> ExpandedRetriever:
    """The query-expansion retriever ``kind`` over ``corpus`` (see ``EXPANDED_KINDS``).

    Args:
        kind, corpus, settings, embedder, auto_build, k1, b: as for ``disambig.retrieval.build_retriever``.
        rrf_k, depth: the RRF constant and per-ranking depth of ``amd-rrf`` and ``genqr-fusion``.
        temperature: sampling temperature of the expansion LM calls (the poster's 0.5; None keeps the LM's own).
        max_tokens: reply cap of each expansion call (None keeps the LM's own).
        state: a saved JSON state of the expansion program (its compiled prompts and demos).
        cache: keep expansions in ``settings.cache_dir/expansions`` (a repeated query costs no LM call).
        **options: the composition's knob (``query_repeats``, ``query_weight``, ``include_query``) or the
            program's (``reflect`` for AMD, ``instructions`` for GenQR).
    """
    from disambig.retrieval.factory import build_retriever

    if kind not in EXPANDED_KINDS:
        raise ConfigurationError(f"unknown expansion retriever {kind!r}; choose one of {', '.join(EXPANDED_KINDS)}")
    method, composition = EXPANDED_KINDS[kind]
    allowed = KNOBS[composition] + PROGRAM_OPTIONS[method]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigurationError(f"{kind!r} takes no option {unknown[0]!r}; its options: "
                                 f"{', '.join(allowed) or 'none'} (and temperature, max_tokens, state, cache)")
    program_options = {n: v for n, v in options.items() if n in PROGRAM_OPTIONS[method]}
    knobs = {n: v for n, v in options.items() if n in KNOBS[composition]}
    expander = make_expander(method, temperature, max_tokens, state, **program_options)
    base_kind = "dense" if composition == "dense" else "bm25"
    base = build_retriever(base_kind, corpus, settings, embedder, auto_build, k1=k1, b=b)
    if composition == "rrf":
        knobs.update(rrf_k=rrf_k, depth=depth)
    store = ExpansionCache(expanded(settings.cache_dir) / CACHE_SUBDIR) if cache else None
    return COMPOSITIONS[composition](kind, base, expander, store, settings, **knobs)


def expansion_usage(retriever: Any) -> ExpansionUsage | None:
    """What a retriever's expansions have cost so far (None for a retriever that expands nothing)."""
    usage = getattr(retriever, "usage", None)
    return usage if isinstance(usage, ExpansionUsage) else None


class ExpansionSearch(dspy.Module):
    """A query-expansion retriever as a program, so its expansion prompts compile against a retrieval metric.

    ``forward(question)`` expands the question with ``self.expander`` (a copy an optimizer may change) and searches
    the retriever's index with it; the prediction holds the ranked ``passages`` (``{id, title, text, score}``) and
    the ``expansion``. Its expansions are not read from the cache by default: an optimizer needs every predictor
    call traced, and a compiled candidate's state differs from the cached one anyway. A compiled state loads back
    into the retriever with ``build_retriever(kind, state=PATH)`` (``expander_state`` strips the prefix).

    Args:
        retriever: an ``ExpandedRetriever`` (``build_retriever("amd-sparse", ...)``).
        k: passages returned (100, the deepest cut-off of the usual retrieval metrics).
        use_cache: read and write the retriever's expansion cache.
    """

    EXPANDER = "expander"

    def __init__(self, retriever: ExpandedRetriever, k: int = 100, use_cache: bool = False) -> None:
        super().__init__()
        if not isinstance(retriever, ExpandedRetriever):
            raise ConfigurationError(f"ExpansionSearch needs a query-expansion retriever ({', '.join(EXPANDED_KINDS)}),"
                                     f" got {getattr(retriever, 'name', type(retriever).__name__)!r}")
        self.retriever, self.k, self.use_cache = retriever, k, use_cache
        self.expander = retriever.expander

    def forward(self, question: str) -> dspy.Prediction:
        expansion = self.retriever.expand(question, self.expander, self.use_cache)
        hits = self.retriever.search_expanded([expansion], min(self.k, self.retriever.size))[0]
        passages = [{**p.to_dict(), "score": p.score} for p in hits]
        return dspy.Prediction(passages=passages, expansion=expansion.to_dict())
