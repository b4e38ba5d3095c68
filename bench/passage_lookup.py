"""Passage lookup: the SQLite store (``passages.sqlite``) against the in-memory list it replaced.

For each store: build time, resident memory it adds (the list) or its size on disk (SQLite), and the p50/p95 time
to fetch the 100 passages of one search hit list by row (what dense search does) and by id (what BM25 does),
over 200 random hit lists. Corpora: the real wiki slice (8,840 passages), then synthetic passages of its mean length
(``--sizes``). One thread; nothing above 1M passages.

    python bench/passage_lookup.py --sizes 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

MAX = 1_000_000
HITS = 100
LOOKUPS = 200


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096 / 2**20


def synthetic(n: int, length: int) -> list[dict[str, str]]:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    text = " ".join(rng.choice(words) for _ in range(length // 5 + 1))
    return [{"id": f"doc{i}", "title": f"Title {i % 977}", "text": text[: length - (i % 50)]} for i in range(n)]


def timed(fetch, keys: list[list]) -> tuple[float, float]:
    times = []
    for hit_list in keys:
        start = time.perf_counter()
        fetch(hit_list)
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    return statistics.median(times), times[int(0.95 * len(times)) - 1]


def measure(name: str, passages: list[dict[str, str]]) -> list[dict]:
    from disambig.retrieval.passage_store import MemoryPassages, PassageWriter, SqlitePassages

    n = len(passages)
    rng = random.Random(1)
    rows = [rng.sample(range(n), HITS) for _ in range(LOOKUPS)]
    ids = [[passages[r]["id"] for r in hit_list] for hit_list in rows]
    out = []
    before = rss_mb()
    start = time.perf_counter()
    memory = MemoryPassages([dict(p) for p in passages])
    memory.rows_of(["warm"])  # the id -> row map the list path builds on first use
    build = time.perf_counter() - start
    out.append({"corpus": name, "passages": n, "store": "list (in memory)", "build_s": build,
                "memory_mb": rss_mb() - before, "disk_mb": 0.0,
                "by_row_ms": timed(memory.rows, rows), "by_id_ms": timed(memory.by_ids, ids)})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "passages.sqlite"
        start = time.perf_counter()
        writer = PassageWriter(path, name)
        for number, first in enumerate(range(0, n, 10_240)):
            writer.add(number, first, passages[first : first + 10_240])
        writer.close()
        build = time.perf_counter() - start
        before = rss_mb()
        store = SqlitePassages(path)
        out.append({"corpus": name, "passages": n, "store": "SQLite (on disk)", "build_s": build,
                    "memory_mb": rss_mb() - before, "disk_mb": path.stat().st_size / 2**20,
                    "by_row_ms": timed(store.rows, rows), "by_id_ms": timed(store.by_ids, ids)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--out", default="bench/results/scale/passage-lookup.json")
    args = parser.parse_args()
    if args.sizes and max(args.sizes) > MAX:
        raise SystemExit(f"at most {MAX:,} passages here")
    from disambig.data.corpus import load_corpus

    real = load_corpus("wiki-slice")
    length = round(statistics.mean(len(p["text"]) for p in real))
    rows = measure("wiki-slice", real)
    for n in args.sizes:
        rows += measure(f"synthetic ({length} chars)", synthetic(n, length))
    from disambig.evaluation.code_version import code_stamp, describe

    stamp = {"code": describe(code_stamp()), "load1": round(os.getloadavg()[0], 2)}
    rows = [row | stamp for row in rows]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    for r in rows:
        print(f"{r['corpus']:<24} {r['passages']:>9,} {r['store']:<18} build {r['build_s']:6.1f} s  memory "
              f"{r['memory_mb']:7.1f} MB  disk {r['disk_mb']:7.1f} MB  by row p50/p95 {r['by_row_ms'][0]:.3f}/"
              f"{r['by_row_ms'][1]:.3f} ms  by id {r['by_id_ms'][0]:.3f}/{r['by_id_ms'][1]:.3f} ms")


if __name__ == "__main__":
    main()
