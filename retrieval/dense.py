"""Dense retrieval: sentence embeddings in FAISS (inner product on unit vectors = cosine similarity)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.retrieval import faiss_index
from disambig.retrieval.base import BatchRetriever, Progress, check_k
from disambig.retrieval.faiss_index import SearchParams, import_faiss
from disambig.retrieval.passage import Passage
from disambig.retrieval.passage_store import PASSAGES_DB, Passages, as_passages
from disambig.retrieval.shards import load_shard, save_shard
from disambig.retrieval.store import MANIFEST, CorpusShards, IndexCorruptError, package_version, rebuild_hint

FAISS_FILE = "faiss.index"
VECTORS_FILE = "vectors.npy"
IDS_FILE = "ids.json"
ENCODE_CHUNK = 256  # passages per progress report (~3 s of MiniLM on 2 cores)
HNSW_NEIGHBOURS = 32
HNSW_EF_CONSTRUCTION = 40
ShardEncoder = Callable[..., list[Any]]
"""``encode(folder, shards, progress=...)``: each shard's vectors, kept in ``folder/shards/`` (``encode_shards``)."""


def hnsw_index(dim: int) -> Any:
    """An empty in-memory HNSW graph over inner product (M = 32, efConstruction = 40, efSearch = 128): the index
    earlier versions built above 100k passages, kept for ``bench/retrieval.py`` and the indexes they made."""
    faiss = import_faiss()

    index = faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = faiss_index.HNSW_EF_SEARCH
    return index


def passage_text(passage: dict[str, str]) -> str:
    """What the encoder sees: ``title: text``, or the text alone when there is no title."""
    return f"{passage['title']}: {passage['text']}" if passage["title"] else passage["text"]


def encode_passages(passages: list[dict[str, str]], embedder: Any, progress: Progress | None = None) -> Any:
    """``(n, d)`` float32 unit vectors, encoded in chunks so ``progress(done, total)`` can follow."""
    return encode_texts([passage_text(p) for p in passages], embedder, progress)


def encode_texts(texts: list[str], embedder: Any, progress: Progress | None = None) -> Any:
    """``(n, d)`` float32 unit vectors of ``texts``, encoded ``ENCODE_CHUNK`` at a time (as every build does, so
    a Spark build encodes the same batches)."""
    import numpy as np

    chunks = []
    if progress:
        progress(0, len(texts))
    for start in range(0, len(texts), ENCODE_CHUNK):
        batch = texts[start : start + ENCODE_CHUNK]
        chunks.append(np.asarray(embedder.encode(batch), dtype=np.float32))
        if progress:
            progress(start + len(batch), len(texts))
    return np.vstack(chunks)


def write_faiss(folder: Path, shards: CorpusShards, embedder: Any, progress: Progress | None = None,
                factory: str | None = None, search: SearchParams | None = None,
                encode: ShardEncoder | None = None) -> dict[str, Any]:
    """Encode the corpus shard by shard (``shards/``, kept and verified when a build resumes), then write the
    FAISS index and the vectors (``vectors.npy``) from the shards, memory-mapped. The shards stay until the build's
    manifest is written (``store.SCRATCH``), so a build killed before that resumes from them.

    Args:
        folder: the index folder being built.
        shards: the corpus as numbered shards (``disambig.retrieval.store.CorpusShards``).
        embedder: the encoder (``encode(texts)`` -> unit vectors).
        progress: ``progress(done, total)`` in passages.
        factory: a ``faiss.index_factory`` string; by default ``Flat`` up to 100k passages, else ``IVF...,SQ8``
            (``disambig.retrieval.faiss_index.default_factory``).
        search: search parameters stored with the index (``nprobe``, ``ef_search``); defaults by index type.
        encode: how the shards are encoded, ``encode(folder, shards, progress)`` -> their vectors; by default in
            this process with ``embedder`` (``encode_shards``); ``spark_encode.SparkEncoding`` encodes on Spark.
    """
    vectors = (encode or partial(encode_shards, embedder=embedder))(folder, shards, progress=progress)
    factory = factory or faiss_index.default_factory(sum(len(v) for v in vectors))
    index = faiss_index.fill_index(factory, vectors)
    faiss_index.write(index, folder / FAISS_FILE)
    concatenate(vectors, folder / VECTORS_FILE)
    stored = (search or SearchParams()).over(faiss_index.default_search(factory, index))
    return {"backend": f"faiss {package_version('faiss-cpu')}", "faiss_index": type(index).__name__,
            "faiss_factory": factory, "search": stored.to_dict(), "dimension": int(vectors[0].shape[1])}


def encode_shards(folder: Path, shards: CorpusShards, embedder: Any, progress: Progress | None = None) -> list[Any]:
    """Each shard's vectors, memory-mapped from ``shards/``: encoded now, or kept from an interrupted build when its
    checksum verifies (only one shard's passages and vectors are in memory at a time)."""
    rebuild = rebuild_hint(shards.corpus, "dense")
    vectors, done = [], 0
    for number, passages in shards:
        ids = [p["id"] for p in passages]
        kept = load_shard(folder, number, ids, rebuild)
        if kept is None:
            tick = (lambda d, t, base=done: progress(base + d, shards.total)) if progress else None
            save_shard(folder, number, encode_passages(passages, embedder, tick), ids)
            kept = load_shard(folder, number, ids, rebuild)
        vectors.append(kept)
        done += len(passages)
    if progress and not done:
        progress(0, shards.total)
    return vectors


def concatenate(shards: list[Any], path: Path) -> None:
    """Write the rows of ``shards`` into one ``.npy`` file, a shard at a time."""
    import numpy as np

    rows = sum(len(s) for s in shards)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, shards[0].shape[1]))
    start = 0
    for shard in shards:
        out[start : start + len(shard)] = shard
        start += len(shard)
    out.flush()
    del out


def files_mismatch(folder: Path, manifest: dict[str, Any]) -> str | None:
    """Why ``vectors.npy`` and the FAISS index in ``folder`` are not ``passages`` float32 vectors of ``dimension``
    as ``manifest`` records (naming the file), or None when they are: a finished build is checked before it is kept,
    an index ``index build`` finds before it is called up to date."""
    import numpy as np

    expected = (manifest.get("passages"), manifest.get("dimension"))
    try:
        vectors = np.load(folder / VECTORS_FILE, mmap_mode="r")
    except (OSError, ValueError) as exc:
        return f"its {VECTORS_FILE} cannot be read ({type(exc).__name__})"
    try:
        index = faiss_index.read(folder / FAISS_FILE)
    except (OSError, RuntimeError) as exc:
        return f"its {FAISS_FILE} cannot be read ({type(exc).__name__})"
    if vectors.dtype != np.float32 or tuple(vectors.shape) != expected:
        return f"its {VECTORS_FILE} holds {vectors.dtype} {tuple(vectors.shape)}, the manifest says float32 {expected}"
    if (index.ntotal, index.d) != expected:
        return f"its {FAISS_FILE} holds {index.ntotal} vectors of {index.d} dimensions, the manifest says {expected}"
    return None


LEGACY_FACTORIES = {"IndexFlatIP": "Flat", "IndexHNSWFlat": "HNSW32,Flat"}
"""The factory strings of indexes built before the manifest recorded one."""


def built_factory(folder: Path) -> str | None:
    """The ``faiss.index_factory`` string the dense index at ``folder`` was built with (None if unreadable)."""
    manifest = _manifest(folder)
    return manifest.get("faiss_factory") or LEGACY_FACTORIES.get(manifest.get("faiss_index", ""))


def reindex(folder: Path, factory: str, search: SearchParams | None = None, rows: int = 100_000) -> bool:
    """Rebuild the FAISS index at ``folder`` as ``factory`` from its own ``vectors.npy`` (memory-mapped, ``rows``
    at a time), without encoding a passage again; the manifest's factory, index type and search parameters (the new
    index's defaults under ``search``) are updated. False when the folder has no usable vectors file.
    """
    import numpy as np

    manifest = _manifest(folder)
    try:
        vectors = np.load(folder / VECTORS_FILE, mmap_mode="r")
    except (OSError, ValueError):
        return False
    if not manifest or vectors.ndim != 2 or len(vectors) != manifest.get("passages"):
        return False
    index = faiss_index.fill_index(factory, [vectors[start : start + rows] for start in range(0, len(vectors), rows)])
    faiss_index.write(index, folder / f"{FAISS_FILE}.tmp")
    (folder / f"{FAISS_FILE}.tmp").replace(folder / FAISS_FILE)
    stored = (search or SearchParams()).over(faiss_index.default_search(factory, index))
    _write_manifest(folder, {**manifest, "backend": f"faiss {package_version('faiss-cpu')}", "faiss_factory": factory,
                             "faiss_index": type(index).__name__, "search": stored.to_dict()})
    return True


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / f"{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    tmp.replace(folder / MANIFEST)


def store_search(folder: Path, search: SearchParams) -> None:
    """Record ``search`` (the parameters set in it) as the stored search parameters of the index at ``folder``."""
    manifest = _manifest(folder)
    stored = search.over(SearchParams.from_dict(manifest.get("search")))
    if manifest and stored.to_dict() != manifest.get("search"):
        _write_manifest(folder, {**manifest, "search": stored.to_dict()})


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


class DenseRetriever(BatchRetriever):
    """Nearest passages to the query embedding.

    Args:
        folder: the index folder made by ``write_faiss``.
        passages: the indexed passages in index order: a list of ``{id, title, text}`` or an on-disk store
            (``disambig.retrieval.passage_store``), from which only the hits are read.
        corpus: the corpus name or path, for error messages.
        embedder: the encoder the index was built with (``encode(texts)`` -> unit vectors).
        search: ``nprobe`` / ``ef_search`` overriding those stored in the index's manifest.
    """

    name = "dense"

    def __init__(self, folder: Path, passages: Passages | list[dict[str, str]], corpus: str, embedder: Any,
                 search: SearchParams | None = None) -> None:
        self.folder = folder
        self.corpus = corpus
        self.embedder = embedder
        self.search_params = search or SearchParams()
        self._passages = as_passages(passages)
        self._index: Any = None
        self._search: SearchParams | None = None
        self._stored: Any = None

    @property
    def size(self) -> int:
        return len(self._passages)

    def ranked(self, queries: list[str], k: int) -> list[list[Passage]]:
        return self.search_vectors(self.embedder.encode(queries), k)

    def search_vectors(self, vectors: Any, k: int) -> list[list[Passage]]:
        """The ``k`` passages nearest each row of ``vectors`` (unit query vectors, ``(queries, d)``), best first.

        Raises:
            ConfigurationError: the vectors are not of the index's dimension (another encoder made them).
        """
        import numpy as np

        k = check_k(k, self.size)
        index = self._faiss()
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape[1] != index.d:
            raise ConfigurationError(f"the query encoder gives {vectors.shape[1]}-d vectors but the index at "
                                     f"{str(self.folder)!r} holds {index.d}-d ones; use the encoder it was built with")
        faiss_index.configure(index, self._search or SearchParams(), k)
        scores, rows = index.search(vectors, k)
        return [self._to_passages(s, r) for s, r in zip(scores, rows, strict=True)]

    def vectors(self) -> Any:
        """The ``(n, d)`` passage vectors, in the order of the index."""
        import numpy as np

        return np.load(self.folder / VECTORS_FILE)

    def stored_vectors(self, ids: list[str]) -> Any | None:
        """The index's own vectors of the passages ``ids`` (``(len(ids), d)``, unit length), read from the
        memory-mapped ``vectors.npy``; None when one of them is not in the index or the file is missing."""
        import numpy as np

        if self._stored is None:
            path = self.folder / VECTORS_FILE
            if not path.exists():
                return None
            try:
                self._stored = np.load(path, mmap_mode="r")
            except (OSError, ValueError) as exc:
                raise IndexCorruptError(f"vectors file {str(path)!r} cannot be read ({type(exc).__name__}); "
                                        f"rebuild it with `{rebuild_hint(self.corpus, 'dense')}`") from None
        rows = self._passages.rows_of(ids)
        if any(row is None for row in rows):
            return None
        return np.asarray(self._stored[rows], dtype=np.float32)

    def _to_passages(self, scores: Any, rows: Any) -> list[Passage]:
        hits = [(float(s), int(r)) for s, r in zip(scores, rows, strict=True) if r >= 0]
        found = self._passages.rows([r for _, r in hits])
        return [Passage(p["id"], p["title"], p["text"], s, rank)
                for rank, ((s, _), p) in enumerate(zip(hits, found, strict=True), 1)]

    def _faiss(self) -> Any:
        if self._index is None:
            path = self.folder / FAISS_FILE
            try:
                index = faiss_index.read(path)
                ids = self._legacy_ids()
            except (RuntimeError, OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise IndexCorruptError(f"FAISS index at {str(path)!r} cannot be read ({type(exc).__name__}); "
                                        f"rebuild it with `{rebuild_hint(self.corpus, 'dense')}`") from None
            if index.ntotal != len(self._passages) or (ids is not None and ids != [p["id"] for p in self._passages]):
                raise IndexCorruptError(f"FAISS index at {str(path)!r} does not match its passages; rebuild it "
                                        f"with `{rebuild_hint(self.corpus, 'dense')}`")
            self._search = self.search_params.over(SearchParams.from_dict(_manifest(self.folder).get("search")))
            self._index = index
        return self._index

    def _legacy_ids(self) -> list[str] | None:
        """The row -> id list of an index built before the SQLite passage store (None for later ones)."""
        path = self.folder / IDS_FILE
        if not path.exists() and (self.folder / PASSAGES_DB).exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))
