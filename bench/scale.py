"""Dense index at scale: build time, peak memory, size on disk, p50/p95 latency at k = 100 and recall@100 vs exact.

Vectors: the real wiki-slice MiniLM embeddings (8,840 x 384, the dense index's ``vectors.npy``) and, above that,
SYNTHETIC vectors drawn to match their distribution by one of two generators (``--generator``):

* ``mixture`` (the default): a Gaussian mixture fitted to the real vectors. k-means (k = 256, FAISS, 20 iterations,
  seed 0) splits the 8,840 vectors into topical clusters; each synthetic vector picks a cluster with probability
  its share of the real vectors, then adds to its centroid Gaussian noise with that cluster's own per-dimension
  standard deviation (clusters of fewer than 2 vectors take the pooled within-cluster spread), and is renormalised
  to unit length like MiniLM's. It keeps the slice's topical clustering, which an inverted file exploits.
* ``gaussian``: one multivariate Gaussian with the real vectors' mean and covariance (through the Cholesky factor),
  renormalised. It has the slice's anisotropy but no clusters, so an inverted file's recall on it is pessimistic.

Queries are 200 further draws of the same generator (on the wiki slice: 200 of its own vectors plus small Gaussian
noise, renormalised). ``--check`` compares the generators with the real vectors at the slice's own size: 200 held-out
real vectors as queries against the other 8,640, and the same counts drawn from each generator; it reports the mean
inner product of the 1st, 10th and 100th neighbour and the recall@100 of ``IVF226,SQ8`` at a few ``nprobe``.

Latency is steady-state: before the timed searches, every query is searched once (untimed) at the largest nprobe
measured, so the pages of the memory-mapped index that any setting touches are resident and the setting searched
first does not pay for reading them. Every index is built and searched with ONE thread
(``faiss.omp_set_num_threads(1)``; the other core runs LM jobs) in a worker process of its own, so its peak resident
memory (``VmHWM``) is the build's. The worker reads the
vectors from ``.npy`` shards (memory-mapped), so the peak includes the shard pages it touched. The synthetic vectors
are drawn and written one 100k shard at a time, and the exact top-100 (recall's ground truth) is merged shard by
shard, so neither needs all vectors in memory. The forced exact ``Flat`` row is measured up to 1M only unless
``--flat`` (at 5M it holds 7.7 GB of float32 vectors). ``--sizes`` refuses more than 10M (15.4 GB of shards and a
3.9 GB index: the largest that fits this machine's 24 GiB with room for the page cache). Each row records the code
that measured it and the load average at its start and end.

    python bench/scale.py --generator mixture --sizes 1000000 --probes 16 32 64 128 --out bench/results/scale
    python bench/scale.py --generator mixture --sizes 5000000 --probes 32 128   # ~40 min, ~8 GB of shards in --work
    python bench/scale.py --check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAX_VECTORS = 10_000_000
FLAT_MAX = 1_000_000
"""Largest size whose forced exact ``Flat`` row is measured without ``--flat``."""
SHARD = 100_000
QUERIES = 200
K = 100
SEED = 0
CLUSTERS = 256
GENERATORS = ("mixture", "gaussian")


def real_vectors() -> np.ndarray:
    """The wiki slice's dense-index vectors from the cache (build it with ``disambig index build``)."""
    cache = Path(os.environ.get("DISAMBIG_CACHE_DIR", "~/.cache/disambig")).expanduser() / "indexes"
    found = sorted(cache.glob("wiki-slice-dense-*/vectors.npy"))
    if not found:
        raise SystemExit(f"no wiki-slice dense index under {cache}; run `disambig index build --kind dense` first")
    return np.load(found[0])


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def gaussian_like(real: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` unit vectors from N(mean, cov) of ``real``."""
    mean = real.mean(axis=0)
    factor = np.linalg.cholesky(np.cov(real, rowvar=False) + 1e-6 * np.eye(real.shape[1]))
    z = np.random.default_rng(seed).standard_normal((n, real.shape[1]), dtype=np.float32)
    return unit(mean + z @ factor.T.astype(np.float32))


@dataclass(frozen=True)
class Mixture:
    """A diagonal Gaussian mixture: cluster weights, centroids and per-dimension standard deviations."""

    weights: np.ndarray
    centroids: np.ndarray
    spreads: np.ndarray

    @classmethod
    def fit(cls, real: np.ndarray, clusters: int = CLUSTERS, seed: int = SEED) -> Mixture:
        """k-means on ``real`` (one thread), then each cluster's share, mean and per-dimension spread."""
        import faiss

        kmeans = faiss.Kmeans(real.shape[1], clusters, niter=20, seed=seed, verbose=False)
        kmeans.train(real)
        labels = kmeans.index.search(real, 1)[1][:, 0]
        counts = np.bincount(labels, minlength=clusters)
        centroids = np.stack([real[labels == c].mean(axis=0) if counts[c] else kmeans.centroids[c]
                              for c in range(clusters)])
        residual = real - centroids[labels]
        pooled = residual.std(axis=0)
        spreads = np.stack([residual[labels == c].std(axis=0, ddof=1) if counts[c] >= 2 else pooled
                            for c in range(clusters)])
        return cls(counts / counts.sum(), centroids.astype(np.float32), spreads.astype(np.float32))

    def sample(self, n: int, seed: int) -> np.ndarray:
        """``n`` unit vectors: a cluster by weight, its centroid plus noise of its spread, renormalised."""
        rng = np.random.default_rng(seed)
        picked = rng.choice(len(self.weights), n, p=self.weights)
        noise = rng.standard_normal((n, self.centroids.shape[1]), dtype=np.float32)
        return unit(self.centroids[picked] + noise * self.spreads[picked])


def generator(name: str, real: np.ndarray) -> Callable[[int, int], np.ndarray]:
    """``draw(n, seed)`` for generator ``name`` (``mixture`` or ``gaussian``) fitted to ``real``."""
    if name == "gaussian":
        return lambda n, seed: gaussian_like(real, n, seed)
    return Mixture.fit(real).sample


def write_shards(folder: Path, real: np.ndarray, n: int, draw: Callable[[int, int], np.ndarray]) -> list[Path]:
    """The ``n`` vectors as ``.npy`` shards of ``SHARD`` rows (the real slice itself when ``n`` is its size)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, start in enumerate(range(0, n, SHARD)):
        path = folder / f"{number:05d}.npy"
        if not path.exists():
            np.save(path, real if n == len(real) else draw(min(SHARD, n - start), SEED + 1 + number))
        paths.append(path)
    return paths


def queries_for(real: np.ndarray, n: int, draw: Callable[[int, int], np.ndarray]) -> np.ndarray:
    if n == len(real):
        picked = real[np.random.default_rng(SEED).choice(len(real), QUERIES, replace=False)]
        return unit(picked + 0.02 * np.random.default_rng(SEED + 1).standard_normal(picked.shape).astype(np.float32))
    return draw(QUERIES, SEED)


def exact_top(paths: list[Path] | list[np.ndarray], queries: np.ndarray, k: int = K) -> np.ndarray:
    """Exact top-``k`` rows by inner product, merged shard by shard (``.npy`` files or arrays): only one shard's
    scores (queries x shard rows) and the running top-``k`` are in memory."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    start, began = 0, time.perf_counter()
    for number, path in enumerate(paths):
        shard = np.load(path, mmap_mode="r") if isinstance(path, Path) else path
        scores = queries @ np.asarray(shard).T
        s = np.concatenate([best_s, scores], axis=1)
        i = np.concatenate([best_i, np.broadcast_to(np.arange(start, start + len(shard)), scores.shape)], axis=1)
        top = np.argpartition(-s, min(k, s.shape[1]) - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(s, top, 1), axis=1)
        top = np.take_along_axis(top, order, 1)
        best_s, best_i = np.take_along_axis(s, top, 1), np.take_along_axis(i, top, 1)
        start += len(shard)
        if len(paths) > 10 and (number + 1) % 10 == 0:
            print(f"exact top-{k}: {start:,} vectors, {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    return best_i


def worker(paths: list[str], factory: str, out: str, queries: str, truth: str, probes: list[int]) -> dict[str, Any]:
    """Build ``factory`` over the shards, write it, reopen it memory-mapped and search: one JSON row."""
    import faiss

    from disambig.retrieval import faiss_index as fi

    faiss.omp_set_num_threads(1)
    shards = [np.load(p, mmap_mode="r") for p in paths]
    start = time.perf_counter()
    index = fi.fill_index(factory, shards)
    build_s = time.perf_counter() - start
    fi.write(index, Path(out))
    default = fi.default_search(factory, index)
    del index
    peak_build = peak_mb()
    rss_before = rss_mb()
    index = fi.read(Path(out))
    rss_open = rss_mb() - rss_before
    q, exact = np.load(queries), np.load(truth)
    settings = list(dict.fromkeys([default.nprobe, *probes])) if default.nprobe else [None]
    fi.configure(index, fi.SearchParams(nprobe=max(settings) if default.nprobe else None), K)
    index.search(q, K)  # untimed: the pages any setting below touches are read once, so every setting runs warm
    rows = []
    for nprobe in settings:
        fi.configure(index, fi.SearchParams(nprobe=nprobe), K)
        times, found = [], []
        for vector in q:
            t = time.perf_counter()
            _, ids = index.search(vector[None, :], K)
            times.append(time.perf_counter() - t)
            found.append(ids[0])
        recall = float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact, strict=True)]))
        rows.append({"nprobe": nprobe, "default": nprobe == default.nprobe, "p50_ms": 1000 * float(np.percentile(
            times, 50)), "p95_ms": 1000 * float(np.percentile(times, 95)), "recall_at_100": recall})
    return {"factory": factory, "vectors": int(sum(len(s) for s in shards)), "build_s": build_s,
            "peak_build_rss_mb": peak_build, "rss_after_open_mb": rss_open,
            "rss_after_search_mb": rss_mb() - rss_before, "disk_mb": Path(out).stat().st_size / 2**20, "search": rows}


def peak_mb() -> float:
    """This process's peak resident memory (``VmHWM``; ``ru_maxrss`` would carry the parent's peak across exec)."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM")) / 1024


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_one(folder: Path, paths: list[Path], factory: str, probes: list[int]) -> dict[str, Any]:
    """``worker`` in a fresh one-thread process (its peak memory is its own), stamped with the code and load."""
    from disambig.evaluation.code_version import code_stamp, describe

    load_start = round(os.getloadavg()[0], 2)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    name = factory.replace(",", "_")
    args = [sys.executable, __file__, "--worker", factory, "--folder", str(folder), "--index", str(folder / name),
            "--probes", *map(str, probes), "--shards", *map(str, paths)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"worker {factory} failed:\n{done.stderr[-2000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "code": describe(code_stamp()),
            "load1": [load_start, round(os.getloadavg()[0], 2)]}


def measure(n: int, real: np.ndarray, work: Path, draw: Callable[[int, int], np.ndarray], factories: list[str],
            probes: list[int], flat: bool = False) -> list[dict[str, Any]]:
    """Rows of the exact ``Flat`` index (up to ``FLAT_MAX`` unless ``flat``), the default ``IVF…,SQ8`` and any
    extra ``factories`` over ``n`` vectors."""
    from disambig.retrieval import faiss_index as fi

    folder = work / str(n)
    paths = write_shards(folder / "shards", real, n, draw)
    queries = queries_for(real, n, draw)
    np.save(folder / "queries.npy", queries)
    np.save(folder / "truth.npy", exact_top(paths, queries))
    compressed = f"IVF{fi.cells_for(n)},SQ8"  # the default above 100k, measured below it too
    exact = [fi.EXACT_FACTORY] if flat or n <= FLAT_MAX else []
    return [run_one(folder, paths, f, probes) for f in dict.fromkeys([*exact, compressed, *factories])]


def neighbour_profile(corpus: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Mean inner product of each query's 1st, 10th and 100th nearest corpus vector."""
    scores = -np.sort(-(queries @ corpus.T), axis=1)
    return {f"score_at_{r}": float(scores[:, r - 1].mean()) for r in (1, 10, K)}


def check(real: np.ndarray, probes: list[int]) -> dict[str, Any]:
    """The generators against the real vectors at the slice's size: neighbour profile and IVF recall@100."""
    from disambig.retrieval import faiss_index as fi

    held = np.random.default_rng(SEED).permutation(len(real))
    sets = {"real": (real[held[QUERIES:]], real[held[:QUERIES]])}
    for name in GENERATORS:
        draw = generator(name, real)
        sets[name] = (draw(len(real) - QUERIES, SEED + 1), draw(QUERIES, SEED))
    factory = f"IVF{fi.cells_for(len(real))},SQ8"
    rows = {}
    for name, (corpus, queries) in sets.items():
        truth = exact_top([corpus], queries)
        index = fi.fill_index(factory, [corpus])
        recall = {}
        for nprobe in probes:
            fi.configure(index, fi.SearchParams(nprobe=nprobe), K)
            found = index.search(queries, K)[1]
            recall[str(nprobe)] = float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))
        rows[name] = {**neighbour_profile(corpus, queries), "factory": factory, "recall_at_100_by_nprobe": recall}
    return rows


def report(n: int, generator_name: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        for s in row["search"]:
            print(f"{n:>9,} {generator_name:<8} {row['factory']:<22} build {row['build_s']:8.1f} s  peak "
                  f"{row['peak_build_rss_mb']:7.0f} MB  open {row['rss_after_open_mb']:6.0f} MB  disk "
                  f"{row['disk_mb']:7.1f} MB  nprobe {s['nprobe']!s:>5}  p50 {s['p50_ms']:6.2f} ms  p95 "
                  f"{s['p95_ms']:6.2f} ms  recall@100 {s['recall_at_100']:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--generator", choices=GENERATORS, default="mixture",
                        help="synthetic vectors above the slice's size (module docstring)")
    parser.add_argument("--check", action="store_true", help="compare the generators with the real vectors and stop")
    parser.add_argument("--factories", nargs="*", default=[], help="extra faiss factory strings, every size")
    parser.add_argument("--probes", type=int, nargs="*", default=[], help="extra nprobe values to search with")
    parser.add_argument("--flat", action="store_true",
                        help=f"also measure the forced exact Flat index above {FLAT_MAX:,} vectors (5M: 7.7 GB)")
    parser.add_argument("--work", default="/tmp/disambig-scale", help="shards and indexes (large)")
    parser.add_argument("--out", default="bench/results/scale")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--index", help=argparse.SUPPRESS)
    parser.add_argument("--shards", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        folder = Path(args.folder)
        row = worker(args.shards, args.worker, args.index, str(folder / "queries.npy"), str(folder / "truth.npy"),
                     args.probes)
        print(json.dumps(row))
        return
    if max(args.sizes) > MAX_VECTORS:
        raise SystemExit(f"--sizes {max(args.sizes):,} is above {MAX_VECTORS:,}: the shards, the index and the page "
                         "cache would not fit this machine's 24 GiB; extrapolate larger sizes from the measured ones "
                         "(docs/benchmarks.md, Scale)")
    import faiss

    faiss.omp_set_num_threads(1)
    real = real_vectors()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.check:
        from disambig.evaluation.code_version import code_stamp, describe

        rows = check(real, args.probes or [7, 16, 32, 64]) | {"code": describe(code_stamp())}
        (out / "generators.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
        print(json.dumps(rows, indent=2))
        return
    draw = generator(args.generator, real)
    for n in args.sizes:
        n = len(real) if n == 0 else n
        rows = measure(n, real, Path(args.work) / args.generator, draw, args.factories, args.probes, args.flat)
        name = f"{n}.json" if args.generator == "gaussian" or n == len(real) else f"{n}-{args.generator}.json"
        (out / name).write_text(json.dumps(rows, indent=2), encoding="utf-8")
        report(n, "real" if n == len(real) else args.generator, rows)


if __name__ == "__main__":
    main()
