"""Which FAISS index a dense corpus gets, how it is trained and filled, and how it is opened and searched.

Up to ``EXACT_LIMIT`` vectors the index is exact (``Flat``: inner product on unit vectors, as before). Above, it is
``IVF{nlist},SQ8``: an inverted file of ``nlist`` k-means cells over 8-bit scalar-quantised vectors, 1 byte a
dimension (384 B a MiniLM passage, a quarter of float32: 21M passages are ~8 GB instead of 32 GB), trained on a
sample, searched in ``nprobe`` cells (``default_nprobe``). Any ``faiss.index_factory`` string
(``OPQ64,IVF16384,PQ64``, ``HNSW32,Flat``...) can be forced instead. Search parameters (``nprobe``, ``efSearch``)
are stored with the index and can be changed without rebuilding. Files are opened memory-mapped where FAISS allows it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.retrieval.base import passive_openmp

EXACT_LIMIT = 100_000
EXACT_FACTORY = "Flat"
CELL_POINTS = 39
"""FAISS's minimum of training points per k-means cell (it warns below)."""
TRAIN_POINTS = 64
"""Training points drawn per cell (FAISS itself subsamples to 256 a cell)."""
PROBE_SHARE = 64
PROBE_FLOOR = 64
"""Default ``nprobe`` is ``max(PROBE_FLOOR, nlist / PROBE_SHARE)`` cells (all cells when there are fewer).
Measured against exact search (docs/benchmarks.md "Scale"): 64 cells give recall@100 0.952 on the real wiki-slice
vectors with 226 cells of ~39 vectors (7 cells: 0.65); 1/64 of the cells gives 0.981 at 1M vectors drawn from a
mixture fitted to them (1/128: 0.974, 1/256: 0.936), where the real slice needs about twice the mixture's cells,
hence 1/64 rather than 1/128."""
HNSW_EF_SEARCH = 128
SAMPLE_SEED = 0


def import_faiss() -> Any:
    passive_openmp()
    import faiss

    return faiss


@dataclass(frozen=True)
class SearchParams:
    """How widely a FAISS index is searched; None leaves the index's own setting.

    Attributes:
        nprobe: inverted-file cells visited per query (IVF indexes).
        ef_search: HNSW candidate-list size (at least ``k`` is used).
    """

    nprobe: int | None = None
    ef_search: int | None = None

    def __post_init__(self) -> None:
        for name in ("nprobe", "ef_search"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigurationError(f"{name}={value!r} must be a positive integer")

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in (("nprobe", self.nprobe), ("ef_search", self.ef_search)) if v is not None}

    @classmethod
    def from_dict(cls, data: Any) -> SearchParams:
        data = data if isinstance(data, dict) else {}
        return cls(data.get("nprobe"), data.get("ef_search"))

    def over(self, stored: SearchParams) -> SearchParams:
        """These parameters where set, else ``stored``'s."""
        return SearchParams(self.nprobe or stored.nprobe, self.ef_search or stored.ef_search)


def cells_for(n: int) -> int:
    """``nlist`` for ``n`` vectors: the power of two nearest ``4 * sqrt(n)``, at most ``n / 39`` (at least 1).

    1M -> 4096, 21M -> 16384, 100k -> 1024.
    """
    target = 2 ** round(math.log2(4 * math.sqrt(max(n, 1))))
    return max(1, min(target, n // CELL_POINTS))


def default_factory(n: int, exact_limit: int | None = None) -> str:
    """``Flat`` up to ``exact_limit`` vectors (``EXACT_LIMIT``, 100k, by default), else ``IVF{cells_for(n)},SQ8``."""
    return EXACT_FACTORY if n <= (EXACT_LIMIT if exact_limit is None else exact_limit) else f"IVF{cells_for(n)},SQ8"


def default_search(factory: str, index: Any = None) -> SearchParams:
    """``nprobe = max(64, nlist / 64)`` (at most ``nlist``) for an inverted file, ``efSearch = 128`` for HNSW,
    nothing for exact search."""
    ivf = faiss_ivf(index) if index is not None else None
    if ivf is not None:
        return SearchParams(nprobe=default_nprobe(ivf.nlist))
    return SearchParams(ef_search=HNSW_EF_SEARCH) if "HNSW" in factory else SearchParams()


def default_nprobe(nlist: int) -> int:
    """Cells searched by default: ``max(PROBE_FLOOR, nlist // PROBE_SHARE)``, at most ``nlist``.

    226 cells (the wiki slice forced) -> 64, 4096 (1M) -> 64, 16384 (21M) -> 256, 16 -> 16.
    """
    return min(nlist, max(PROBE_FLOOR, nlist // PROBE_SHARE))


def new_index(factory: str, dim: int) -> Any:
    """An empty inner-product index from a ``faiss.index_factory`` string.

    Raises:
        ConfigurationError: FAISS does not understand ``factory`` for ``dim``-d vectors.
    """
    faiss = import_faiss()
    if not isinstance(factory, str) or not factory.strip():
        raise ConfigurationError(f"faiss factory must be a non-empty string such as 'IVF4096,SQ8', got {factory!r}")
    if factory.strip() == EXACT_FACTORY:
        return faiss.IndexFlatIP(dim)  # what exact indexes always were (the factory would make an IndexFlat)
    try:
        return faiss.index_factory(dim, factory.strip(), faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1][:200]
        raise ConfigurationError(f"faiss cannot make index {factory!r} for {dim}-d vectors ({reason}); use a "
                                 "faiss.index_factory string such as 'Flat', 'IVF4096,SQ8' or "
                                 "'OPQ64,IVF4096,PQ64'") from None


def training_sample(shards: Sequence[Any], size: int, seed: int = SAMPLE_SEED) -> Any:
    """``size`` rows drawn without replacement, uniformly over all rows of ``shards`` (arrays, e.g. memory-mapped),
    in row order; all rows when there are fewer."""
    import numpy as np

    total = sum(len(s) for s in shards)
    rows = np.arange(total) if size >= total else np.sort(np.random.default_rng(seed).choice(total, size, False))
    picked, start = [], 0
    for shard in shards:
        inside = rows[(rows >= start) & (rows < start + len(shard))] - start
        if len(inside):
            picked.append(np.asarray(shard[inside], dtype=np.float32))
        start += len(shard)
    return np.vstack(picked)


def fill_index(factory: str, shards: Sequence[Any]) -> Any:
    """The index ``factory`` trained on a sample of ``shards`` (when it needs training) and holding all their rows,
    added one shard at a time so only one is in memory besides the index.

    Raises:
        ConfigurationError: faiss cannot make ``factory``, or cannot train it on these vectors (an inverted file of
            more lists than there are passages, say), in one line naming the factory and the row count.
    """
    import numpy as np

    dim = int(shards[0].shape[1])
    index = new_index(factory, dim)
    if not index.is_trained:
        ivf = faiss_ivf(index)
        points = (ivf.nlist if ivf is not None else 1) * TRAIN_POINTS
        sample = training_sample(shards, max(points, 10_000))
        try:
            index.train(sample)
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1].partition("failed: ")[2] or str(exc).strip()[-200:]
            raise ConfigurationError(f"faiss cannot train index {factory!r} on {len(sample):,} vectors "
                                     f"({reason[:200]}); choose one they can train (fewer IVF lists, fewer PQ bits) "
                                     "or 'Flat'; nothing encoded is lost: rerun with another --faiss-factory") from None
    for shard in shards:
        index.add(np.ascontiguousarray(shard, dtype=np.float32))
    return index


def configure(index: Any, params: SearchParams, k: int = 1) -> None:
    """Apply ``params`` to ``index`` (through any OPQ/PCA wrapper); HNSW searches at least ``k`` candidates."""
    ivf = faiss_ivf(index)
    if ivf is not None and params.nprobe:
        ivf.nprobe = min(params.nprobe, ivf.nlist)
    hnsw = _hnsw(index)
    if hnsw is not None:
        hnsw.efSearch = max(params.ef_search or HNSW_EF_SEARCH, k)


def write(index: Any, path: Path) -> None:
    import_faiss().write_index(index, str(path))


def read(path: Path) -> Any:
    """Open an index file memory-mapped: a flat index's vectors with ``IO_FLAG_MMAP_IFC``, anything else with
    ``IO_FLAG_MMAP`` (an inverted file's lists stay on disk; FAISS reads into memory what it cannot map).

    Raises:
        RuntimeError, OSError: FAISS cannot read the file (the caller names the rebuild command).
    """
    faiss = import_faiss()
    with path.open("rb") as handle:
        flat = handle.read(4) in (b"IxFI", b"IxF2")
    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC if flat else faiss.IO_FLAG_MMAP)


def faiss_ivf(index: Any) -> Any:
    """The inverted-file index inside ``index`` (through OPQ/PCA wrappers), or None when it has none."""
    faiss = import_faiss()
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def _hnsw(index: Any) -> Any:
    faiss = import_faiss()
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexPreTransform) else index
    return getattr(faiss.downcast_index(inner), "hnsw", None)
