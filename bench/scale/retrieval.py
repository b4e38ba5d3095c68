"""Retrieval speed: index build time and query latency of BM25, dense and hybrid on the Wikipedia slice, and how
BM25 (Lucene) and FAISS query latency grow with the number of passages.

    python -m bench.scale.retrieval                          # everything, ~10-15 min on 2 cores
    python -m bench.scale.retrieval --sizes 10000 100000     # skip the 1M scaling point
    python -m bench.scale.retrieval --hnsw-max 1000000       # also build HNSW at 1M (not measured: the 100k build
                                                       # took ~1 min, so expect well over 15 min)

Latency is wall-clock time of one ``search(query, k=10)`` call, one query at a time, after 5 warm-up queries;
queries are the first 200 questions of the ASQA file under the data root. For the scaling runs, BM25 indexes the slice's
passages replicated under new ids up to each size, and FAISS holds random 384-d unit vectors searched with
random unit queries. The numbers are written to ``--json`` and between the markers of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Script

SCRIPT = Script.of(__file__)
DIM = 384
K = 10


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds (nearest-rank on the sorted timings)."""
    ordered = sorted(seconds)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))] * 1000

    return {"p50_ms": round(rank(0.50), 2), "p95_ms": round(rank(0.95), 2), "mean_ms": round(
        statistics.fmean(ordered) * 1000, 2)}


def latency(search: Any, queries: list[Any], warmup: int = 5) -> dict[str, float]:
    for query in queries[:warmup]:
        search(query)
    timings = []
    for query in queries:
        start = time.perf_counter()
        search(query)
        timings.append(time.perf_counter() - start)
    return percentiles(timings)


def timed(step: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = step()
    return result, round(time.perf_counter() - start, 2)


def questions(n: int) -> list[str]:
    from disambig.data import load_dataset

    return [ex.question for ex in load_dataset("asqa", split="all", limit=n)]


def wiki_slice(cache_dir: str, queries: list[str]) -> dict[str, Any]:
    """Build both indexes of the slice from scratch, then time each retriever's queries."""
    from disambig.retrieval import build_retriever
    from disambig.retrieval.embedder import Embedder
    from disambig.retrieval.factory import ensure_index
    from disambig.retrieval.java import pyserini_lucene
    from disambig.settings import load_settings

    settings = load_settings(cache_dir=cache_dir)
    _, jvm_s = timed(pyserini_lucene)
    embedder = Embedder()
    _, model_s = timed(lambda: embedder.encode(["warm up"]))
    _, bm25_s = timed(lambda: ensure_index("bm25", "wiki-slice", cache_dir, force=True, threads=settings.threads))
    _, dense_s = timed(lambda: ensure_index("dense", "wiki-slice", cache_dir, embedder, force=True))
    out: dict[str, Any] = {"jvm_start_s": jvm_s, "model_load_s": model_s,
                           "build_s": {"bm25": bm25_s, "dense": dense_s, "hybrid": round(bm25_s + dense_s, 2)}}
    for kind in ("bm25", "dense", "hybrid"):
        retriever = build_retriever(kind, "wiki-slice", settings, embedder=embedder, auto_build=False)
        out[kind] = latency(lambda q, r=retriever: r.search(q, K), queries)
        print(f"wiki-slice {kind}: build {out['build_s'][kind]} s, {out[kind]}", flush=True)
    out["hnsw_real"] = hnsw_on(retriever.dense.vectors(), embedder.encode(queries))
    print(f"wiki-slice HNSW on MiniLM vectors: {out['hnsw_real']}", flush=True)
    return out


def hnsw_on(vectors: Any, queries: Any) -> dict[str, Any]:
    """HNSW over real passage embeddings: build time, latency and recall@10 against exact search."""
    from disambig.retrieval.dense import hnsw_index

    hnsw, build_s = timed(lambda: add(hnsw_index(vectors.shape[1]), vectors))
    return {"build_s": build_s, **latency(lambda q: hnsw.search(q[None, :], K), list(queries)),
            "recall@10": recall(exact(vectors), hnsw, queries)}


def replicated(base: list[dict[str, str]], n: int) -> list[dict[str, str]]:
    return [{"id": f"r{i}", "title": base[i % len(base)]["title"], "text": base[i % len(base)]["text"]}
            for i in range(n)]


def bm25_scaling(sizes: list[int], queries: list[str], threads: int, workdir: Path) -> dict[str, Any]:
    from disambig.data import load_corpus
    from disambig.retrieval.bm25 import BM25Retriever, write_lucene
    from disambig.retrieval.java import pyserini_lucene

    pyserini_lucene()  # start the JVM outside the timings
    base = load_corpus("wiki-slice")
    out = {}
    for n in sizes:
        passages = replicated(base, n)
        folder = Path(tempfile.mkdtemp(prefix=f"bm25-{n}-", dir=workdir))
        _, build_s = timed(lambda f=folder, ps=passages: write_lucene(f, ps, threads=threads))
        retriever = BM25Retriever(folder, passages, f"replicated-{n}", threads=threads)
        out[str(n)] = {"build_s": build_s, **latency(lambda q, r=retriever: r.search(q, K), queries)}
        print(f"bm25 {n}: {out[str(n)]}", flush=True)
        del passages, retriever
    return out


def faiss_scaling(sizes: list[int], n_queries: int, hnsw_max: int) -> dict[str, Any]:
    """Exact flat search at every size; in-memory HNSW (what versions before the IVF default built above 100k, kept
    as a comparison) up to ``hnsw_max``."""
    import numpy as np

    from disambig.retrieval.dense import hnsw_index

    rng = np.random.default_rng(0)
    queries = unit(rng.standard_normal((n_queries, DIM), dtype=np.float32))
    out: dict[str, Any] = {}
    for n in sizes:
        vectors = unit(rng.standard_normal((n, DIM), dtype=np.float32))
        row: dict[str, Any] = {}
        flat, row["flat_build_s"] = timed(lambda v=vectors: exact(v))
        row["flat"] = latency(lambda q, i=flat: i.search(q[None, :], K), list(queries))
        if n <= hnsw_max:
            hnsw, row["hnsw_build_s"] = timed(lambda v=vectors: add(hnsw_index(DIM), v))
            row["hnsw"] = latency(lambda q, i=hnsw: i.search(q[None, :], K), list(queries))
            row["hnsw_recall@10"] = recall(flat, hnsw, queries)
            del hnsw
        else:
            row["hnsw"] = f"not built (> --hnsw-max {hnsw_max})"
        out[str(n)] = row
        print(f"faiss {n}: {row}", flush=True)
        del vectors, flat
    return out


def unit(x: Any) -> Any:
    import numpy as np

    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact(vectors: Any) -> Any:
    import faiss

    return add(faiss.IndexFlatIP(vectors.shape[1]), vectors)


def add(index: Any, vectors: Any) -> Any:
    index.add(vectors)
    return index


def recall(flat: Any, hnsw: Any, queries: Any) -> float:
    """Share of the exact top-10 that HNSW returns, over the benchmark queries."""
    _, truth = flat.search(queries, K)
    _, found = hnsw.search(queries, K)
    return round(sum(len(set(t) & set(f)) for t, f in zip(truth, found, strict=True)) / truth.size, 4)


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    intro = (f"Measured {meta['date']} on {meta['cpus']} CPU cores (1-minute load average {meta['load']} at start), "
             f"FAISS search with {meta['faiss_threads']} OpenMP thread(s), Lucene "
             f"indexing with {meta['lucene_threads']} threads, {meta['queries']} ASQA questions, k = {K}.\n"
             f"Command: `{meta['command']}`.")
    return "\n\n".join([intro, wiki_table(results["wiki_slice"]), scaling_table(results)])


def wiki_table(wiki: dict[str, Any]) -> str:
    lines = [f"Wikipedia slice (8,840 passages). JVM start ({wiki['jvm_start_s']} s) and embedder load "
             f"({wiki['model_load_s']} s) are not included; hybrid build = BM25 + dense, and hybrid fuses the top 100 "
             "of each.", "",
             "| retriever | index build (s) | p50 latency (ms) | p95 latency (ms) |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {kind} | {wiki['build_s'][kind]} | {wiki[kind]['p50_ms']} | {wiki[kind]['p95_ms']} |"
              for kind in ("bm25", "dense", "hybrid")]
    if "hnsw_real" in wiki:
        h = wiki["hnsw_real"]
        lines += ["", f"HNSW over the slice's MiniLM vectors (not used at this size; a check of graph quality on real "
                      f"embeddings): build {h['build_s']} s, p50 / p95 {h['p50_ms']} / {h['p95_ms']} ms, recall@10 "
                      f"against exact search {h['recall@10']}."]
    return "\n".join(lines)


def scaling_table(results: dict[str, Any]) -> str:
    lines = ["Scaling: BM25 over the slice's passages replicated under new ids; FAISS over random 384-d unit vectors "
             "with random unit queries. The HNSW columns (in-memory `HNSW32,Flat`, efSearch = 128) are a comparison "
             "only: `disambig index build` searches exactly (Flat) up to 100k passages and builds a memory-mapped "
             "`IVF{4·√n},SQ8` above (the Scale section).", "",
             "| passages | BM25 build (s) | BM25 p50 / p95 (ms) | FAISS flat p50 / p95 (ms) | "
             "HNSW build (s) | HNSW p50 / p95 (ms) | HNSW recall@10 |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n in sorted({int(n) for n in (*results["bm25"], *results["faiss"])}):
        b, f = results["bm25"].get(str(n)), results["faiss"].get(str(n))
        bm = f"{b['build_s']} | {b['p50_ms']} / {b['p95_ms']}" if b else "not run | not run"
        flat = f"{f['flat']['p50_ms']} / {f['flat']['p95_ms']}" if f else "not run"
        h = f.get("hnsw") if f else None
        hnsw = (f"{f['hnsw_build_s']} | {h['p50_ms']} / {h['p95_ms']} | {f['hnsw_recall@10']}" if isinstance(h, dict)
                else f"{h or 'not run'} | - | -")
        lines.append(f"| {n:,} | {bm} | {flat} | {hnsw} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200, help="ASQA questions timed per retriever.")
    parser.add_argument("--hnsw-max", type=int, default=100_000, help="Largest size to build HNSW at.")
    parser.add_argument("--faiss-threads", type=int, default=1, help="OpenMP threads for FAISS search.")
    parser.add_argument("--skip-wiki", action="store_true", help="Only the scaling runs.")
    parser.add_argument("--json", type=Path, default=Path("bench/results/retrieval.json"))
    parser.add_argument("--doc", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--report-only", action="store_true", help="Rewrite --doc from --json, measure nothing.")
    args = parser.parse_args()
    if args.report_only:
        SCRIPT.write(args.doc, markdown(json.loads(args.json.read_text(encoding="utf-8"))))
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from disambig.retrieval.dense import import_faiss

    faiss = import_faiss()

    faiss.omp_set_num_threads(args.faiss_threads)
    from disambig.settings import load_settings

    threads = load_settings().threads
    queries = questions(args.queries)
    results: dict[str, Any] = {"meta": {
        "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 1),
        "queries": len(queries), "faiss_threads": args.faiss_threads, "lucene_threads": threads,
        "command": SCRIPT.command(sys.argv[1:])}}
    with tempfile.TemporaryDirectory(prefix="disambig-bench-") as work:
        if args.skip_wiki and args.json.exists():
            results["wiki_slice"] = json.loads(args.json.read_text())["wiki_slice"]
        else:
            results["wiki_slice"] = wiki_slice(str(Path(work) / "cache"), queries)
        results["bm25"] = bm25_scaling(args.sizes, queries, threads, Path(work))
    results["faiss"] = faiss_scaling(args.sizes, len(queries), args.hnsw_max)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    SCRIPT.section(args.doc, markdown(json.loads(json.dumps(results))))


if __name__ == "__main__":
    main()
