"""Prefill and decode tokens/s of the embedded models, per llama.cpp build and thread count.

Run once per Python environment (each has its own llama-cpp-python build); every run appends its rows to
``--out`` and the table is rendered from all of them:

    python -m bench.cost.lm_speed --models smollm2 qwen2.5-0.5b --threads 1 2 --repeats 3 \\
        --out bench/results/lm-speed.jsonl
    /other/venv/bin/python -m bench.cost.lm_speed ... --out bench/results/lm-speed.jsonl
    python -m bench.cost.lm_speed --report bench/results/lm-speed.jsonl [--results docs/benchmarks.md]

Three pairs of rates a row, each from a fresh context:
- engine: llama.cpp's own counters inside the engine, a ~200-token prompt completed by one token and a chat reply
  of up to 64 tokens (``disambig.lm.check``);
- ceiling: llama-bench's pp512 and tg128 through the C API, nothing between tokens (``bench.cost.ceiling``);
- in DSPy: wall-clock rates of whole ``dspy.Predict`` calls (adapter, grammar, guard; ``bench.cost.ceiling``).
Rows written before the ceiling was measured show "–" there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

from bench.harness import Rows, Script, cpu_name

SCRIPT = Script.of(__file__)


def build_name(maps: Path = Path("/proc/self/maps")) -> str:
    """``portable`` for a build with its CPU backend built in, ``dispatch`` for one loading a backend per CPU,
    with the backend this process loaded where it can tell (``dispatch (cascadelake)``; call it after a model
    loaded)."""
    import llama_cpp

    from disambig.lm.llama_engine import cpu_backend_dir

    if not cpu_backend_dir(Path(llama_cpp.__file__).parent):
        return "portable"
    loaded = loaded_backend(maps)
    return "dispatch" if loaded is None else f"dispatch ({loaded})"


def loaded_backend(maps: Path = Path("/proc/self/maps")) -> str | None:
    """The CPU variant whose ``libggml-cpu-<variant>.so`` this process has mapped (Linux), or None."""
    try:
        text = maps.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = sorted(set(re.findall(r"libggml-cpu-([a-z0-9_]+)\.so", text)))
    return found[0] if len(found) == 1 else None


def measure(model: str, threads: int, repeats: int) -> dict:
    from bench.cost.ceiling import ceiling, in_dspy
    from disambig.lm.check import _speeds
    from disambig.lm.spec import make_lm

    lm = make_lm(f"local:{model}", threads=threads, ctx=2048, prompt_cache_mb=0)
    llama = lm.engine.llama
    load = os.getloadavg()[0]
    rates = [_speeds(llama) for _ in range(repeats)]
    ceilings = [ceiling(llama, seed=i) for i in range(repeats)]
    calls = [in_dspy(lm) for _ in range(repeats)]
    return {
        "model": model, "build": build_name(), "threads": threads,
        "prefill": _rounded(p for p, _ in rates), "decode": _rounded(d for _, d in rates),
        "ceiling_prefill": _rounded(p for p, _ in ceilings), "ceiling_decode": _rounded(d for _, d in ceilings),
        "dspy_prefill": _rounded(p for p, _ in calls), "dspy_decode": _rounded(d for _, d in calls),
        "load_avg": round(max(load, os.getloadavg()[0]), 2), "cpu": cpu_name(),
    }


def _rounded(rates) -> list[float]:
    return [round(r, 1) for r in rates]


def report(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = ["| model | build | threads | CPU | load avg | prefill tok/s (median of runs) | decode tok/s "
             "| ceiling prefill / decode (pp512, tg128) | in DSPy calls prefill / decode | code |",
             "| --- | --- | ---: | --- | ---: | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: (r["model"], r["threads"], r["build"])):
        lines.append(
            f"| {r['model']} | {r['build']} | {r['threads']} | {_cpu(r)} | {r['load_avg']} "
            f"| {_median(r['prefill'])} ({', '.join(map(str, r['prefill']))}) "
            f"| {_median(r['decode'])} ({', '.join(map(str, r['decode']))}) "
            f"| {_pair(r, 'ceiling')} | {_pair(r, 'dspy')} | `{r['code']['commit']}` |")
    return "\n".join(lines)


def _median(rates: list[float]) -> str:
    return f"{statistics.median(rates):.1f}"


def _pair(row: dict, kind: str) -> str:
    """``prefill / decode`` medians of one kind of measurement, "–" for a row from before it was measured."""
    if f"{kind}_prefill" not in row:
        return "–"
    return f"{_median(row[f'{kind}_prefill'])} / {_median(row[f'{kind}_decode'])}"


def _cpu(row: dict) -> str:
    """The row's CPU model; rows written before it was recorded say only ``x86_64``."""
    return "not recorded" if row.get("cpu") in ("x86_64", "", None) else row["cpu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2", "qwen2.5-0.5b"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/lm-speed.jsonl"))
    parser.add_argument("--report", type=Path, help="print the table of a results file and exit")
    parser.add_argument("--results", type=Path, help="with --report: also write the table into this file's section")
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(args.report))
        return
    rows = Rows(args.out)  # every run appends: one file holds the rows of every build measured
    for model in args.models:
        for threads in args.threads:
            print(json.dumps(rows.add(measure(model, threads, args.repeats))), file=sys.stderr)


if __name__ == "__main__":
    main()
