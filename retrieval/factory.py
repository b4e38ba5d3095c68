"""Build or open the retriever for a corpus: indexes are found (or built) in the cache directory."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.retrieval.base import Progress
from disambig.retrieval.bm25 import PREBUILT
from disambig.retrieval.faiss_index import SearchParams
from disambig.retrieval.fusion import RRF_K
from disambig.retrieval.prebuilt import corpus_name
from disambig.retrieval.progress import LoggedProgress
from disambig.retrieval.store import SHARD_SIZE, build_index, index_dir, known_index_dir, read_index, work_dir

logger = logging.getLogger(__name__)
EXPANDED_KINDS = ("amd-sparse", "amd-dense", "amd-rrf", "q2d-sparse", "q2d-dense", "q2c-sparse", "q2c-dense",
                  "genqr-ensemble", "genqr-fusion")
"""Query-expansion kinds: an LM program expands the query before BM25 or dense search. They are built by
``EXPANSION_BUILDER`` (programs sit above retrieval, so it is imported by name, only when one is asked for)."""
EXPANSION_BUILDER = "disambig.programs.amd.expanded_retrieval"
KINDS = ("bm25", "dense", "hybrid", *EXPANDED_KINDS)
INDEX_KINDS = ("bm25", "dense")
CACHEABLE_KINDS = ("bm25", "dense", "hybrid")
"""Kinds whose rankings ``--cache`` keeps on disk (``retrieval/cache.py``); an expansion kind keeps its own."""


def index_path(kind: str, corpus: str, cache_dir: str | Path, embedder: Any = None) -> Path:
    """The folder of one ``bm25`` or ``dense`` index; the encoder's name is part of a dense index's key."""
    _check_kind(kind, INDEX_KINDS)
    return index_dir(cache_dir, corpus_name(corpus), kind, _params(kind, embedder))


def needs_build(kind: str, corpus: str, cache_dir: str | Path, embedder: Any = None,
                faiss_factory: str | None = None) -> bool:
    """Whether ``ensure_index`` would build: no index yet, or a dense one of another ``faiss_factory`` than asked.
    A corpus never indexed under its name is not hashed first: its build hashes it as it reads it."""
    _check_kind(kind, INDEX_KINDS)
    folder = known_index_dir(cache_dir, corpus_name(corpus), kind, _params(kind, embedder))
    if folder is None or not folder.is_dir():
        return True
    if kind != "dense" or not faiss_factory:
        return False
    from disambig.retrieval.dense import built_factory

    return built_factory(folder) != faiss_factory.strip()


def _params(kind: str, embedder: Any) -> dict[str, Any]:
    return {"encoder": encoder_name(_embedder(embedder))} if kind == "dense" else {}


def ensure_index(kind: str, corpus: str, cache_dir: str | Path, embedder: Any = None, force: bool = False,
                 threads: int = 1, progress: Progress | None = None, faiss_factory: str | None = None,
                 search: SearchParams | None = None, shard_size: int = SHARD_SIZE, encode: Any = None) -> Path:
    """Build the ``bm25`` or ``dense`` index of ``corpus`` unless an identical one exists; return its folder.

    Args:
        kind: ``bm25`` or ``dense``.
        corpus: a bundled corpus name, a JSONL file, a BEIR folder, or ``prebuilt:NAME`` (downloaded by pyserini
            into its own cache).
        cache_dir: the cache directory (indexes go under ``indexes/``).
        embedder: the dense encoder (all-MiniLM-L6-v2 by default).
        force: rebuild even when the index exists.
        threads: Lucene indexing threads.
        progress: called as ``progress(done, total)`` during the build; by default the build logs its progress
            (``disambig.retrieval.progress``) every few seconds.
        faiss_factory: dense only: a ``faiss.index_factory`` string (``IVF4096,SQ8``, ``OPQ64,IVF4096,PQ64``...)
            instead of the size-based default (exact ``Flat`` up to 100k passages); an index built with another
            one is rebuilt from its stored vectors (``vectors.npy``), without encoding again unless ``force``.
        search: dense only: ``nprobe`` / ``ef_search`` stored with the index (an existing index is updated in place).
        shard_size: passages read (and, for dense, encoded and kept for resuming) at a time.
        encode: dense only: how the shards are encoded (``dense.ShardEncoder``); in this process by default,
            ``spark_encode.SparkEncoding`` on Spark.
    """
    corpus = corpus_name(corpus)
    _check_corpus(corpus, kind)
    if corpus.startswith(PREBUILT):
        from disambig.retrieval import prebuilt
        from disambig.retrieval.bm25 import BM25Retriever

        name = corpus.removeprefix(PREBUILT)
        if kind == "dense":
            return prebuilt.fetch(prebuilt.dense_index(name), "dense")
        return BM25Retriever.prebuilt(name).folder
    encoder = _embedder(embedder) if kind == "dense" else None
    if not force and not needs_build(kind, corpus, cache_dir, encoder, faiss_factory):
        return _kept(kind, index_path(kind, corpus, cache_dir, encoder), search)
    from disambig.retrieval.build_lock import build_lock, lock_path

    with build_lock(lock_path(work_dir(cache_dir, corpus, kind, _params(kind, encoder)))):
        if not force and not needs_build(kind, corpus, cache_dir, encoder, faiss_factory):  # built while we waited
            return _kept(kind, index_path(kind, corpus, cache_dir, encoder), search)
        return _build(kind, corpus, cache_dir, encoder, force, threads, progress, faiss_factory, search, shard_size,
                      encode)


def verify_index(kind: str, corpus: str, folder: Path) -> None:
    """Check the built ``bm25`` or ``dense`` index of ``corpus`` at ``folder`` without searching it: its manifest
    and passage store open and agree (``read_index``), and its index files are whole (a dense index's
    ``vectors.npy`` and FAISS file hold the manifest's rows and dimensions; a BM25 index's Lucene files carry
    Lucene's header and footer marks).

    Raises:
        IndexCorruptError: one line naming the damaged file and the rebuild command.
    """
    from disambig.retrieval.bm25 import lucene_mismatch
    from disambig.retrieval.dense import files_mismatch
    from disambig.retrieval.store import IndexCorruptError, rebuild_hint

    _check_kind(kind, INDEX_KINDS)
    manifest, _ = read_index(folder, corpus, kind)
    reason = (files_mismatch if kind == "dense" else lucene_mismatch)(folder, manifest)
    if reason is not None:
        raise IndexCorruptError(f"{kind} index at {str(folder)!r} is damaged: {reason}; rebuild it with "
                                f"`{rebuild_hint(corpus, kind)}`")


def _kept(kind: str, folder: Path, search: SearchParams | None) -> Path:
    """An up-to-date index, with the dense ``search`` parameters stored when given."""
    if kind == "dense" and search:
        from disambig.retrieval.dense import store_search

        store_search(folder, search)
    return folder


def _build(kind: str, corpus: str, cache_dir: str | Path, encoder: Any, force: bool, threads: int,
           progress: Progress | None, faiss_factory: str | None, search: SearchParams | None, shard_size: int,
           encode: Any) -> Path:
    """``ensure_index``'s build, under the index's lock: a re-index from stored vectors, else a streamed build."""
    folder = known_index_dir(cache_dir, corpus, kind, _params(kind, encoder))
    if kind == "dense" and not force and faiss_factory and folder is not None and folder.is_dir():
        from disambig.retrieval.dense import reindex

        if reindex(folder, faiss_factory.strip(), search):  # another factory: the stored vectors, not re-encoded
            logger.info("rebuilt the dense index of %s as %s from its stored vectors", corpus, faiss_factory)
            return folder
    replace = force or (folder is not None and folder.is_dir())  # an index rebuilt in place, not one raced for
    logger.info("building the %s index of %s in %s (once; later runs reuse it)", kind, corpus,
                Path(cache_dir) / "indexes")
    progress = progress or LoggedProgress(f"{kind} index of {corpus}", "passages encoded" if kind == "dense"
                                          else "passages indexed")
    if kind == "bm25":
        from disambig.retrieval.bm25 import write_lucene

        return build_index(cache_dir, corpus, kind, {}, lambda tmp, ps, tick: write_lucene(tmp, ps, tick, threads),
                           progress, fresh=force, shard_size=shard_size, replace=replace)
    from disambig.retrieval.dense import files_mismatch, write_faiss

    folder = build_index(cache_dir, corpus, kind, _params(kind, encoder),
                         lambda tmp, ps, tick: write_faiss(tmp, ps, encoder, tick, faiss_factory, search, encode),
                         progress, fresh=force, shard_size=shard_size, replace=replace, check=files_mismatch)
    return _as_asked(folder, faiss_factory, search)


def _as_asked(folder: Path, faiss_factory: str | None, search: SearchParams | None) -> Path:
    """The dense index at ``folder`` with the ``faiss_factory`` and ``search`` parameters asked for: a finished build
    kept from a killed run, or an index another path put in place first, may have others (re-indexed from its
    stored vectors, nothing encoded)."""
    from disambig.retrieval.dense import built_factory, reindex

    if faiss_factory and built_factory(folder) != faiss_factory.strip():
        reindex(folder, faiss_factory.strip(), search)
    return _kept("dense", folder, search)


def build_retriever(kind: str, corpus: str = "wiki-slice", settings: Any = None, embedder: Any = None,
                    auto_build: bool = True, k1: float = 0.9, b: float = 0.4, rrf_k: int = RRF_K,
                    weights: tuple[float, float] = (1.0, 1.0), depth: int = 100, **expansion: Any) -> Any:
    """Open the ``bm25``, ``dense`` or ``hybrid`` retriever of ``corpus``, or a query-expansion one.

    Args:
        kind: ``bm25``, ``dense``, ``hybrid`` or one of ``EXPANDED_KINDS`` (``amd-sparse``, ...).
        corpus: ``wiki-slice``, ``dbpedia-entity-5k``, a JSONL file of ``{id, title, text}``, a BEIR folder, or
            ``prebuilt:NAME`` for a pyserini prebuilt index (downloaded once; needs network; ``wikipedia-dpr`` is
            short for ``prebuilt:wikipedia-dpr-100w``). Dense search of a prebuilt corpus uses its paired FAISS
            index and the query encoder that index was built for (``disambig.retrieval.prebuilt_dense``), not
            ``embedder``.
        settings: ``disambig.settings.Settings`` (cache directory, threads); ``load_settings()`` by default.
        embedder: the dense encoder; all-MiniLM-L6-v2 by default.
        auto_build: build a missing index (from local files only); otherwise a missing index is an error
            naming the build command.
        k1, b: BM25 parameters (search time; the index does not depend on them).
        rrf_k, weights, depth: hybrid fusion constant, ``(bm25, dense)`` list weights, and passages per list.
        **expansion: options of the query-expansion kinds (temperature, state, cache, knobs; see
            ``disambig.programs.amd.expanded_retrieval.build_expanded``).
    """
    _check_kind(kind, KINDS)
    _check_params(k1, b, rrf_k, weights, depth)
    corpus = corpus_name(corpus)
    if kind in EXPANDED_KINDS:  # the base retriever's own build checks the corpus
        build_expanded = importlib.import_module(EXPANSION_BUILDER).build_expanded
        return build_expanded(kind, corpus, settings_or_default(settings), embedder, auto_build, k1=k1, b=b,
                              rrf_k=rrf_k, depth=depth, **expansion)
    if expansion:
        raise ConfigurationError(f"{', '.join(expansion)} apply to query-expansion retrievers only, not {kind!r}")
    _check_corpus(corpus, kind)
    settings = settings_or_default(settings)
    if kind == "hybrid":
        from disambig.retrieval.hybrid import HybridRetriever

        encoder = _embedder(embedder)
        sparse = build_retriever("bm25", corpus, settings, encoder, auto_build, k1, b)
        dense = build_retriever("dense", corpus, settings, encoder, auto_build)
        return HybridRetriever(sparse, dense, rrf_k=rrf_k, depth=depth, weights=tuple(weights))
    if corpus.startswith(PREBUILT):
        return _prebuilt(kind, corpus.removeprefix(PREBUILT), settings, auto_build, k1, b)
    encoder = _embedder(embedder) if kind == "dense" else None
    folder = (ensure_index(kind, corpus, settings.cache_dir, encoder, threads=settings.threads) if auto_build
              else index_path(kind, corpus, settings.cache_dir, encoder))
    _, passages = read_index(folder, corpus, kind)
    if kind == "bm25":
        from disambig.retrieval.bm25 import BM25Retriever

        return BM25Retriever(folder, passages, corpus, k1=k1, b=b, threads=settings.threads)
    from disambig.retrieval.dense import DenseRetriever

    return DenseRetriever(folder, passages, corpus, encoder)


def _prebuilt(kind: str, name: str, settings: Any, download: bool, k1: float, b: float) -> Any:
    """The BM25 or dense retriever of pyserini's prebuilt index ``name``; dense reads its texts from the BM25 one."""
    from disambig.retrieval.bm25 import BM25Retriever

    texts = BM25Retriever.prebuilt(name, k1, b, settings.threads, download=download)
    if kind == "bm25":
        return texts
    from disambig.retrieval.prebuilt_dense import PrebuiltDenseRetriever

    return PrebuiltDenseRetriever.prebuilt(name, texts, download=download)


def index_kinds(kind: str) -> tuple[str, ...]:
    """The indexes retriever ``kind`` searches: ``bm25``, ``dense`` or both."""
    _check_kind(kind, KINDS)
    if kind == "hybrid":
        return INDEX_KINDS
    return ("dense",) if kind == "dense" or kind.endswith("-dense") else ("bm25",)


def encoder_name(embedder: Any) -> str:
    """The name that keys a dense index: ``embedder.name``, else its class name."""
    return str(getattr(embedder, "name", None) or type(embedder).__name__)


def _check_kind(kind: str, allowed: tuple[str, ...]) -> None:
    if kind not in allowed:
        raise ConfigurationError(f"unknown retriever {kind!r}; choose one of {', '.join(allowed)}")


def _check_corpus(corpus: str, kind: str) -> None:
    if not isinstance(corpus, str) or not corpus.strip():
        raise ConfigurationError(f"corpus must be a name or path, got {corpus!r}")
    if corpus.startswith(PREBUILT) and kind != "bm25":
        from disambig.retrieval.prebuilt import dense_index

        dense_index(corpus.removeprefix(PREBUILT))


def _check_params(k1: float, b: float, rrf_k: int, weights: tuple[float, float], depth: int) -> None:
    if k1 < 0:
        raise ValueError(f"BM25 k1={k1} must be non-negative (Lucene's usual range is 0.5-2.0)")
    if not 0 <= b <= 1:
        raise ValueError(f"BM25 b={b} must lie between 0 and 1")
    if rrf_k <= 0:
        raise ValueError(f"RRF k={rrf_k} must be positive (60 is the usual value)")
    if len(weights) != 2 or any(w < 0 for w in weights) or not any(weights):
        raise ValueError(f"weights={tuple(weights)} must be two non-negative numbers (bm25, dense), not both zero")
    if depth < 1:
        raise ValueError(f"depth={depth} must be at least 1")


def settings_or_default(settings: Any) -> Any:
    """``settings`` with a cache directory, or the loaded defaults."""
    from disambig.settings import load_settings

    if settings is None:
        return load_settings()
    return settings if settings.cache_dir else settings.with_overrides(cache_dir=load_settings().cache_dir)


def _embedder(embedder: Any) -> Any:
    if embedder is not None:
        return embedder
    from disambig.retrieval.embedder import Embedder

    return Embedder()
