"""Dense shards encoded on Spark: ``disambig index build --engine spark [--master URL]``.

The driver streams the corpus in shards exactly as a local build does (and fills the same passage store); shards
not yet encoded are sent to Spark in waves, one shard per task, and each task's vectors come back to the driver,
which writes them as the local build's ``shards/NNNNN.npy`` with their checksum record (``shards.save_shard``).
The index is then built from those shards by the same code as a local build, so both give the same index, and an
interrupted Spark build resumes from the shards it finished (with either engine). Executors never write files.

Each executor's Python worker loads the sentence-transformers encoder once (``_ENCODERS``: Spark reuses its
Python workers across tasks) and encodes in the local build's chunks (``dense.ENCODE_CHUNK``) with ``threads``
torch threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.retrieval.base import Progress
from disambig.retrieval.shards import load_shard, save_shard
from disambig.retrieval.store import CorpusShards, rebuild_hint

_LOCK = threading.Lock()
_ENCODERS: dict[str, Any] = {}


@dataclass(frozen=True)
class SparkEncoding:
    """How ``write_faiss`` encodes its shards on Spark.

    Attributes:
        model: the encoder as every executor can load it: ``all-MiniLM-L6-v2`` (from the installed package) or a
            sentence-transformers folder present at the same path on every node.
        master: the Spark master, ``local[N]`` or a cluster URL (``spark://host:7077``...).
        wave: shards sent to Spark per job (default: twice the master's parallelism); the driver holds their text.
        threads: torch threads per task (match ``spark.task.cpus``).
    """

    model: str
    master: str = "local[2]"
    wave: int | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        for name in ("wave", "threads"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(f"Spark encoding {name}={value!r} must be a positive integer")

    def __call__(self, folder: Path, shards: CorpusShards, progress: Progress | None = None) -> list[Any]:
        """Each shard's vectors, memory-mapped from ``folder/shards/`` (kept from an interrupted build when they
        verify, else encoded on Spark)."""
        from disambig.data.spark_session import spark_session

        with spark_session(self.master, "disambig-index") as spark:
            context = spark.sparkContext
            wave = self.wave or 2 * context.defaultParallelism
            encode = partial(encode_partition, model=self.model, threads=self.threads)
            return _encode_in_waves(folder, shards, wave, lambda rows: _run(context, rows, encode), progress)


def _encode_in_waves(folder: Path, shards: CorpusShards, wave: int, run: Any, progress: Progress | None) -> list[Any]:
    """Stream the shards; keep the verified ones; encode the others ``wave`` at a time with ``run``."""
    from disambig.retrieval.dense import passage_text

    rebuild = rebuild_hint(shards.corpus, "dense")
    vectors: dict[int, Any] = {}
    pending: list[tuple[int, list[str], list[str]]] = []
    done = 0

    def flush() -> None:
        for (number, ids, _), encoded in zip(pending, run([(n, texts) for n, _, texts in pending]), strict=True):
            save_shard(folder, number, encoded, ids)
            vectors[number] = load_shard(folder, number, ids, rebuild)
        pending.clear()
        if progress:
            progress(done, shards.total)

    for number, passages in shards:
        ids = [p["id"] for p in passages]
        kept = load_shard(folder, number, ids, rebuild)
        if kept is None:
            pending.append((number, ids, [passage_text(p) for p in passages]))
        else:
            vectors[number] = kept
        done += len(passages)
        if len(pending) == wave:
            flush()
    flush()
    return [vectors[n] for n in sorted(vectors)]


def _run(context: Any, rows: list[tuple[int, list[str]]], encode: Any) -> list[Any]:
    """``rows`` (shard number, texts) encoded on Spark, one shard a task; the vectors in the order of ``rows``."""
    import numpy as np

    if not rows:
        return []
    found = dict(context.parallelize(rows, len(rows)).mapPartitions(encode).collect())
    return [np.frombuffer(found[n][0], dtype=np.float32).reshape(-1, found[n][1]) for n, _ in rows]


def encode_partition(rows: Iterable[tuple[int, list[str]]], model: str, threads: int = 1
                     ) -> Iterator[tuple[int, tuple[bytes, int]]]:
    """Executor side: each ``(shard number, texts)`` as ``(number, (float32 bytes, dimension))``."""
    from disambig.retrieval.dense import encode_texts

    encoder = shared_encoder(model, threads)
    for number, texts in rows:
        vectors = encode_texts(texts, encoder)
        yield number, (vectors.tobytes(), int(vectors.shape[1]))


def shared_encoder(model: str, threads: int) -> Any:
    """This process's encoder for ``model``, loaded on first use (once per Spark Python worker)."""
    import torch

    from disambig.retrieval.embedder import Embedder

    torch.set_num_threads(threads)
    with _LOCK:
        if model not in _ENCODERS:
            _ENCODERS[model] = Embedder(model)
        return _ENCODERS[model]
