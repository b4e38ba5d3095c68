"""The tables of docs/benchmarks.md's "Scale" section, made from the rows stored in bench/results/scale/ (nothing is
measured).

    python -m bench.scale.scale_table [--stored bench/results/scale] [--results docs/benchmarks.md]

Each table goes between the ``bench/scale/scale_table.py:NAME`` markers of ``--results``, with a line on the code (and
load average) its rows record ("not recorded" for rows older than those fields):

* ``generators``: ``generators.json`` (``bench/scale.py --check``), the real slice's first nprobe reaching
  recall@100 0.95 in bold;
* ``dense``: the dense index rows of ``bench/scale.py``, one file a size and generator (``8840.json`` the real
  slice, ``N-mixture.json``, ``N.json`` the Gaussian), real first, then the mixture's sizes, then the Gaussian's;
  an index is "(default)" where ``disambig index build`` would choose it for that many vectors, its default nprobe
  in bold;
* ``bm25``: ``bm25.json`` (``bench/bm25_scale.py``);
* ``passage-lookup``: ``passage-lookup.json`` (``bench/passage_lookup.py``);
* ``ndcg``: ``ndcg.json`` (``bench/scale_ndcg.py``), Δ against the same set's ``Flat`` row where a row lacks it.

The measuring scripts are retired, their rows kept (``git show a3f4048:bench/scale.py``; ``bm25_scale.py`` at
``9a09b47``, ``passage_lookup.py`` at ``812619c``, ``scale_ndcg.py`` at ``9c7c4e8``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import Script
from bench.harness.docs import generated
from disambig.evaluation.code_version import describe
from disambig.retrieval.faiss_index import default_factory, default_nprobe

SCRIPT = Script.of(__file__)
REAL_VECTORS = 8_840
"""The wiki slice's vectors: ``bench/scale.py`` writes their rows to ``8840.json``, unsuffixed like the Gaussian's."""
GENERATORS = ("real", "mixture", "gaussian")
HELD_OUT = 200
"""Real vectors ``bench/scale.py --check`` holds out as queries."""
TARGET = 0.95
"""Recall@100 the default nprobe aims at (docs/benchmarks.md, "Choosing nprobe")."""
DENSE_FILE = re.compile(r"(\d+)(?:-([a-z]+))?")


def size(n: int) -> str:
    """``1M``, ``100k`` for round sizes, else grouped (``8,840``)."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 10_000 and n % 1000 == 0 else f"{n:,}"


def millis(value: float) -> str:
    """Milliseconds: three decimals below 0.1, two below 10, one from 10 up (``0.025``, ``4.28``, ``138.2``)."""
    return f"{value:.3f}" if value < 0.1 else f"{value:.2f}" if value < 10 else f"{value:,.1f}"


def megabytes(value: float) -> str:
    """``2.4 MB`` below 10, ``252 MB`` from 10 up."""
    return f"{value:.1f} MB" if value < 10 else f"{value:,.0f} MB"


def line(cells: list[str]) -> str:
    """A Markdown table row; an empty cell is ``| |``."""
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def bold(text: str, on: bool) -> str:
    return f"**{text}**" if on else text


def cells(factory: str) -> int | None:
    """``nlist`` of an inverted-file factory string (``IVF226,SQ8`` -> 226), None for any other index."""
    found = re.search(r"IVF(\d+)", factory)
    return int(found.group(1)) if found else None


def stamp(row: dict, load: Callable[[Any], str] | None = None) -> str:
    """The code a row records (``describe``'s text, or the stamp itself) and, with ``load``, its load average."""
    code = row.get("code")
    text = f"`{describe(code) if isinstance(code, dict) else code}`" if code else "not recorded"
    if load is None:
        return f"code {text}"
    return f"code {text}, load {load(row['load1']) if row.get('load1') is not None else 'not recorded'}"


def grouped(labelled: list[tuple[str, str]], sep: str = "; ") -> str:
    """Each stamp after the labels of the rows that record it ("all rows" when they all record one)."""
    groups: dict[str, list[str]] = {}
    for label, text in labelled:
        groups.setdefault(text, []).append(label)
    if len(groups) == 1:
        return f"all rows {next(iter(groups))}"
    return sep.join(f"{', '.join(labels)} {text}" for text, labels in groups.items())


def generators_table(check: dict) -> str:
    """``bench/scale.py --check``: neighbour scores and recall@100 by nprobe of the real slice and each generator."""
    probes = sorted(check["real"]["recall_at_100_by_nprobe"], key=int)
    head = (f"| {REAL_VECTORS - HELD_OUT:,} vectors, {HELD_OUT} queries | 1st neighbour | 10th | 100th | recall@100, "
            f"nprobe {' | '.join(probes)} (of {cells(check['real']['factory'])}) |")
    lines = [head, "| --- |" + " ---: |" * (3 + len(probes))]
    for name in GENERATORS:
        row = check[name]
        recalls = [row["recall_at_100_by_nprobe"][p] for p in probes]
        first = next((i for i, r in enumerate(recalls) if r >= TARGET), None) if name == "real" else None
        scores = [f"{row[f'score_at_{k}']:.3f}" for k in (1, 10, 100)]
        recall_cells = [bold(f"{r:.3f}", i == first) for i, r in enumerate(recalls)]
        lines.append(line(["real wiki slice" if name == "real" else name, *scores, *recall_cells]))
    return "\n".join([*lines, "", f"Rows of the check: {stamp(check)}."])


def dense_files(stored: Path) -> list[tuple[Path, str]]:
    """The dense index files of ``stored`` with their generator: real first, then the mixture's, then the Gaussian's,
    each by size."""
    found = []
    for path in stored.glob("*.json"):
        match = DENSE_FILE.fullmatch(path.stem)
        if match:
            n = int(match.group(1))
            found.append((path, match.group(2) or ("real" if n == REAL_VECTORS else "gaussian"), n))
    order = {name: i for i, name in enumerate(GENERATORS)}
    found.sort(key=lambda item: (order.get(item[1], len(order)), item[1], item[2]))
    return [(path, generator) for path, generator, _ in found]


def dense_rows(index: dict, generator: str) -> list[str]:
    """One line per nprobe of a stored index (ascending), the first carrying the size, build, memory and disk."""
    n, factory = index["vectors"], index["factory"]
    chosen = "default" if factory == default_factory(n) else "forced"
    first = [f"{size(n)} ({generator})", f"{factory} ({chosen})", f"{index['build_s']:,.1f}",
             f"{index['peak_build_rss_mb']:,.0f}", f"{index['disk_mb']:,.1f}"]
    lines = []
    for search in sorted(index["search"], key=lambda s: s["nprobe"] or 0):
        marked = search["default"] and search["nprobe"] is not None
        probe = "–" if search["nprobe"] is None else bold(f"{search['nprobe']} (default)" if marked else
                                                          str(search["nprobe"]), marked)
        measured = [probe, millis(search["p50_ms"]), millis(search["p95_ms"]),
                    bold(f"{search['recall_at_100']:.3f}", marked)]
        lines.append(line((first if not lines else [""] * len(first)) + measured))
    return lines


def span(pair: list[float]) -> str:
    return f"{pair[0]:.2f} → {pair[1]:.2f}"


def file_stamp(indexes: list[dict]) -> str:
    """The code of a file's rows and its load from the first build's start to the last search's end; each index's
    own when they differ in code."""
    if len({str(index.get("code")) for index in indexes}) > 1:
        return ", ".join(f"{index['factory']} {stamp(index, span)}" for index in indexes)
    loads = [index.get("load1") for index in indexes]
    return stamp({"code": indexes[0].get("code"), "load1": [loads[0][0], loads[-1][1]] if all(loads) else None}, span)


def dense_table(files: list[tuple[Path, str]]) -> str:
    """Every stored dense index, and the code and load average each file's rows record."""
    lines = ["| vectors | index | build s | peak MB | disk MB | nprobe | p50 ms | p95 ms | recall@100 |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    labelled = []
    for path, generator in files:
        indexes = json.loads(path.read_text(encoding="utf-8"))
        for index in indexes:
            lines += dense_rows(index, generator)
        labelled.append((f"`{path.name}`", file_stamp(indexes)))
    lead = "Code and 1-minute load average (at the start → the end of a file's builds and searches) the rows record"
    return "\n".join([*lines, "", f"{lead}: {grouped(labelled)}."])


def bm25_table(rows: list[dict]) -> str:
    """``bench/bm25_scale.py``: one line a corpus size."""
    lines = ["| passages | build s | peak MB | Lucene MB | passage store MB | k = 100 p50 / p95 ms | "
             "k = 10 p50 / p95 ms |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        lines.append(line([size(row["passages"]), f"{row['build_s']:,.1f}", f"{row['peak_rss_mb']:,.0f}",
                           f"{row['lucene_mb']:,.1f}", f"{row['store_mb']:,.1f}",
                           f"{millis(row['p50_ms'])} / {millis(row['p95_ms'])}",
                           f"{millis(row['p50_k10_ms'])} / {millis(row['p95_k10_ms'])}"]))
    labelled = [(size(row["passages"]), stamp(row, lambda load: f"{load:.2f}")) for row in rows]
    lead = "Code and 1-minute load average (at the end of each size's run) the rows record"
    return "\n".join([*lines, "", f"{lead}: {grouped(labelled)}."])


def passage_lookup_table(rows: list[dict]) -> str:
    """``bench/passage_lookup.py``: one line a corpus and store; no RAM held shows as 0, no file on disk as "–"."""
    lines = ["| passages | store | build s | RAM held | disk | by row p50 / p95 ms | by id p50 / p95 ms |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    labelled = []
    for row in rows:
        held = megabytes(row["memory_mb"]) if row["memory_mb"] else "0"
        disk = megabytes(row["disk_mb"]) if row["disk_mb"] else "–"
        by_row, by_id = (" / ".join(map(millis, row[key])) for key in ("by_row_ms", "by_id_ms"))
        lines.append(line([f"{size(row['passages'])} {row['corpus']}", row["store"], f"{row['build_s']:,.1f}",
                           held, disk, by_row, by_id]))
        labelled.append((f"{size(row['passages'])} {row['store']}", stamp(row, lambda load: f"{load:.2f}")))
    lead = "Code and 1-minute load average (at the end of the run) the rows record"
    return "\n".join([*lines, "", f"{lead}: {grouped(labelled)}."])


def ndcg_table(rows: list[dict]) -> str:
    """``bench/scale_ndcg.py``: one line a set and index, in the stored order; the default nprobe in bold."""
    lines = ["| set (queries) | index | nprobe | nDCG@10 | Δ vs exact | Recall@100 | MRR@10 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    exact = {row["set"]: row["ndcg@10"] for row in rows if row["factory"] == "Flat"}
    by_set: dict[str, list[tuple[str, str]]] = {}
    last = (None, None)
    for row in rows:
        nlist = cells(row["factory"])
        marked = nlist is not None and row["nprobe"] == default_nprobe(nlist)
        probe = "–" if row["nprobe"] is None else bold(f"{row['nprobe']} (default)" if marked else
                                                       str(row["nprobe"]), marked)
        delta = row.get("delta_vs_exact")
        if delta is None and row["factory"] != "Flat" and row["set"] in exact:
            delta = round(row["ndcg@10"] - exact[row["set"]], 4)
        delta_cell = "" if delta is None else bold(f"{delta:+.4f}".replace("-", "−"), marked)
        shown = [f"{row['set']} ({row['queries']})" if row["set"] != last[0] else "",
                 row["factory"] if (row["set"], row["factory"]) != last else ""]
        lines.append(line([*shown, probe, f"{row['ndcg@10']:.4f}", delta_cell, f"{row['recall@100']:.3f}",
                           f"{row['mrr@10']:.3f}"]))
        by_set.setdefault(row["set"], []).append((f"nprobe {row['nprobe']}" if row["nprobe"] else row["factory"],
                                                   stamp(row)))
        last = (row["set"], row["factory"])
    codes = "; ".join(f"{name}: {grouped(labelled, ', ')}" for name, labelled in by_set.items())
    return "\n".join([*lines, "", f"Code the rows record, by set: {codes}."])


STORED = {  # section: (stored file, table), in the order of the doc
    "generators": ("generators.json", generators_table),
    "dense": (None, dense_table),
    "bm25": ("bm25.json", bm25_table),
    "passage-lookup": ("passage-lookup.json", passage_lookup_table),
    "ndcg": ("ndcg.json", ndcg_table),
}


def tables(stored: Path) -> dict[str, tuple[str, list[Path]]]:
    """Each section's table and the files it was made from; a section whose files are missing is left out."""
    made = {}
    for section, (name, table) in STORED.items():
        if name is None:
            files = dense_files(stored)
            if files:
                made[section] = (table(files), [path for path, _ in files])
        elif (stored / name).exists():
            made[section] = (table(json.loads((stored / name).read_text(encoding="utf-8"))), [stored / name])
    return made


def write_tables(stored: Path, results: Path | None, command: str) -> None:
    """Print every table; with ``results``, write each between its markers there."""
    made = tables(stored)
    if not made:
        raise SystemExit(f"no stored scale rows in {stored}; the scripts that measured them are retired (docstring)")
    for section, (text, paths) in made.items():
        source = f"{', '.join(f'`{path.name}`' for path in paths)} in `{stored}` (nothing measured)"
        print(f"{section}:")
        SCRIPT.section(results, f"{generated(command, source)}\n\n{text}", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stored", type=Path, default=Path("bench/results/scale"), help="folder of stored rows")
    parser.add_argument("--results", type=Path, default=None, help="Markdown file to write the tables into")
    args = parser.parse_args()
    write_tables(args.stored, args.results, SCRIPT.command(sys.argv[1:]))


if __name__ == "__main__":
    main()
