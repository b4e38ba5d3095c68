"""BM25 at scale (Lucene through pyserini): build time, peak memory, size on disk, p50/p95 latency at k = 100.

Corpus: SYNTHETIC passages of 100 words (like DPR's Wikipedia passages), each word drawn independently from the wiki
slice's own word frequencies (lower-cased ``\\w+`` tokens of its titles and texts, ~9,000 passages), so posting
lists have the slice's Zipf shape; a passage's title is one more such word. Word order and co-occurrence are not
real, which matters little to BM25's cost: that is the length of the query terms' posting lists. Queries: the first
200 ASQA dev questions (real query terms).

Each size is built through the real build path (``ensure_index("bm25", FILE)``: corpus shards, the SQLite passage
store, Lucene with ONE indexing thread) and searched one query at a time at k = 100 (then at k = 10), each in a
fresh worker process whose peak resident memory (``VmHWM``, Python and the JVM together) is reported; 20 queries are
searched first to warm the JVM.
The corpus is written 50k passages at a time; nothing above 5M passages (~3.5 GB of JSONL, plus the store and index).

    python bench/bm25_scale.py --sizes 100000 1000000 --out bench/results/scale
    python bench/bm25_scale.py --sizes 5000000 --out bench/results/scale
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from disambig.evaluation.code_version import code_stamp, describe

MAX_PASSAGES = 5_000_000
WORDS = 100
QUERIES = 200
WARM = 20
K = 100
CHUNK = 50_000


def data_root() -> Path:
    return Path(os.environ.get("DISAMBIG_DATA_DIR", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def vocabulary() -> tuple[np.ndarray, np.ndarray]:
    """The wiki slice's words and their relative frequencies."""
    counts: Counter[str] = Counter()
    with (data_root() / "corpus" / "wiki-slice.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            counts.update(re.findall(r"\w+", f"{row.get('title', '')} {row['text']}".lower()))
    words, freq = zip(*counts.most_common(), strict=True)
    return np.array(words, dtype=object), np.array(freq, dtype=np.float64) / sum(freq)


def write_corpus(path: Path, n: int, seed: int = 0) -> None:
    """``n`` synthetic passages as JSONL ``{id, title, text}`` (kept when the file exists)."""
    if path.exists():
        return
    words, p = vocabulary()
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for start in range(0, n, CHUNK):
            rows = min(CHUNK, n - start)
            drawn = words[rng.choice(len(words), (rows, WORDS + 1), p=p)]
            out.writelines(json.dumps({"id": f"s{start + i}", "title": str(row[0]), "text": " ".join(row[1:])}) + "\n"
                           for i, row in enumerate(drawn))
    tmp.replace(path)


def questions() -> list[str]:
    with (data_root() / "asqa" / "dev.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["question"] for _, line in zip(range(QUERIES), handle, strict=False)]


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def peak_mb() -> float:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM")) / 1024


def worker(corpus: Path, cache: Path) -> dict[str, Any]:
    """Build the BM25 index of ``corpus`` in ``cache`` with one thread, then search the questions: one JSON row."""
    from disambig.retrieval.factory import build_retriever, ensure_index
    from disambig.settings import Settings

    start = time.perf_counter()
    folder = ensure_index("bm25", str(corpus), cache, threads=1, progress=lambda done, total: None)
    build_s = time.perf_counter() - start
    retriever = build_retriever("bm25", str(corpus), Settings(cache_dir=str(cache), threads=1), auto_build=False)
    asked = questions()
    for question in asked[:WARM]:
        retriever.search(question, K)
    row = {"passages": retriever.size, "build_s": build_s, "peak_rss_mb": peak_mb(),
           "lucene_mb": folder_mb(folder / "lucene"), "store_mb": (folder / "passages.sqlite").stat().st_size / 2**20,
           "corpus_mb": corpus.stat().st_size / 2**20, "queries": len(asked)}
    for k, suffix in ((K, ""), (10, "_k10")):
        times = []
        for question in asked:
            t = time.perf_counter()
            retriever.search(question, k)
            times.append(1000 * (time.perf_counter() - t))
        row |= {f"p50{suffix}_ms": float(np.percentile(times, 50)), f"p95{suffix}_ms": float(np.percentile(times, 95))}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--work", default="/tmp/disambig-bm25-scale", help="corpora and indexes (large)")
    parser.add_argument("--out", default="bench/results/scale")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(Path(args.worker), Path(args.cache))))
        return
    if max(args.sizes) > MAX_PASSAGES:
        raise SystemExit(f"--sizes {max(args.sizes):,} is above {MAX_PASSAGES:,}: other engineers' LM jobs share this "
                         "machine and its disk; extrapolate larger sizes (docs/benchmarks.md, Scale)")
    work, rows = Path(args.work), []
    work.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        corpus = work / f"synthetic-{n}.jsonl"
        write_corpus(corpus, n)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
        done = subprocess.run([sys.executable, __file__, "--worker", str(corpus), "--cache", str(work / f"cache-{n}")],
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(f"worker for {n:,} passages failed:\n{done.stderr[-2000:]}")
        rows.append({**json.loads(done.stdout.strip().splitlines()[-1]), "code": describe(code_stamp()),
                     "load1": round(os.getloadavg()[0], 2)})
        row = rows[-1]
        print(f"{n:>9,} passages  build {row['build_s']:7.1f} s  peak {row['peak_rss_mb']:6.0f} MB  lucene "
              f"{row['lucene_mb']:7.1f} MB  store {row['store_mb']:7.1f} MB  p50 {row['p50_ms']:6.2f} ms  p95 "
              f"{row['p95_ms']:6.2f} ms (k = 10: {row['p50_k10_ms']:.2f} / {row['p95_k10_ms']:.2f} ms)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "bm25.json"  # rows of other sizes are kept: one file holds every size measured
    kept = {r["passages"]: r for r in (json.loads(path.read_text(encoding="utf-8")) if path.exists() else [])}
    kept.update({r["passages"]: r for r in rows})
    path.write_text(json.dumps([kept[n] for n in sorted(kept)], indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
