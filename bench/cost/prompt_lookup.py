"""Prompt-lookup decoding, off against on: the same program, model and questions, answers compared.

    python -m bench.cost.prompt_lookup --model qwen2.5-1.5b --program diva --limit 10 --draft 4 [--control] \\
        --out bench/results/prompt-lookup.jsonl
    python -m bench.cost.prompt_lookup --report bench/results/prompt-lookup.jsonl [--results docs/benchmarks.md]

Two engines of one model answer each question in turn, the order alternating from one question to the next, so
both see the same load; each keeps its own prompt cache, which holds the same calls as long as the answers agree.
``--control`` adds a third engine, also without drafts, answering in the same turns: answers that differ between
the two engines without drafts come from the cache and the order, not from drafting. One row per question is
appended as it is answered (a stopped run leaves its rows; the report reads every row of a setting).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness import Rows, Script, cpu_name

SCRIPT = Script.of(__file__)


def run(model: str, program: str, dataset: str, limit: int, draft: int, threads: int, control: bool,
        rows: Rows) -> None:
    import os

    import dspy

    from disambig.data.loaders import load_dataset
    from disambig.lm.runtime import default_adapter
    from disambig.lm.spec import make_lm
    from disambig.programs import build_program
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    settings = load_settings(lm=f"local:{model}", threads=threads)
    module = build_program(program, build_retriever("hybrid", corpus="wiki-slice", settings=settings))
    names = ["off", "on", *(["control"] if control else [])]
    lms = {name: make_lm(f"local:{model}", threads=threads, prompt_lookup=draft if name == "on" else 0)
           for name in names}
    for number, example in enumerate(load_dataset(dataset, split="dev", limit=limit)):
        order = names if number % 2 == 0 else names[::-1]
        answers, seconds, generated = {}, {}, {}
        before = _counts(lms["on"])
        for name in order:
            with dspy.context(lm=lms[name], adapter=default_adapter(), cache=False):
                prediction = module(question=example.question)
            answers[name] = prediction.long_answer
            seconds[name] = round(prediction.trace["seconds"], 2)
            generated[name] = prediction.trace["output_tokens"]
        drafting = {key: value - before[key] for key, value in _counts(lms["on"]).items()}
        rows.add({"model": model, "program": program, "dataset": dataset, "draft": draft, "threads": threads,
                  "id": example.id, "seconds": seconds, "generated": generated, "drafting": drafting,
                  "same": answers["on"] == answers["off"],
                  "control_same": answers["control"] == answers["off"] if control else None,
                  "load_avg": round(os.getloadavg()[0], 2), "cpu": cpu_name()})
        print(f"{number + 1}/{limit} {example.id}: {seconds} same={answers['on'] == answers['off']}", file=sys.stderr)


def _counts(lm: Any) -> dict[str, int]:
    """The drafting engine's counts so far (all 0 before its model loads)."""
    from dataclasses import asdict

    lookup = lm.engine.lookup_
    return asdict(lookup.counts) if lookup is not None else {"calls": 0, "generated": 0, "steps": 0, "drafted": 0}


def report(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["model"], row["program"], row["dataset"], row["draft"], row["threads"],
                           row["code"]["commit"]), []).append(row)
    lines = ["| model | program | dataset | draft | threads | n | s/q off | s/q on | on/off [95% CI] | same answers "
             "| control same | reply tokens from kept drafts / of calls drafting | load avg | code |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | ---: | --- |"]
    for (model, program, dataset, draft, threads, commit), group in sorted(groups.items()):
        off = [r["seconds"]["off"] for r in group]
        on = [r["seconds"]["on"] for r in group]
        kept = sum(max(r["drafting"]["generated"] - r["drafting"]["steps"], 0) for r in group)
        drafted_calls = sum(r["drafting"]["generated"] for r in group)
        controls = [r["control_same"] for r in group if r["control_same"] is not None]
        lines.append(
            f"| {model} | {program} | {dataset} | {draft} | {threads} | {len(group)} | {statistics.mean(off):.1f} "
            f"| {statistics.mean(on):.1f} | {ratio_interval(off, on)} | {sum(r['same'] for r in group)}/{len(group)} "
            f"| {f'{sum(controls)}/{len(controls)}' if controls else '–'} "
            f"| {kept}/{drafted_calls} "
            f"| {statistics.mean(r['load_avg'] for r in group):.2f} | `{commit}` |")
    return "\n".join(lines)


def ratio_interval(off: list[float], on: list[float], resamples: int = 9999, seed: int = 0) -> str:
    """Total seconds on over total seconds off, with a 95% bootstrap interval over questions (paired)."""
    import numpy as np

    a, b = np.asarray(off), np.asarray(on)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), size=(resamples, len(a)))
    ratios = b[picks].sum(axis=1) / a[picks].sum(axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return f"{b.sum() / a.sum():.2f} [{low:.2f}, {high:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--program", default="diva")
    parser.add_argument("--dataset", default="asqa")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--draft", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--control", action="store_true", help="a third engine without drafts, as a control")
    parser.add_argument("--out", type=Path, default=Path("bench/results/prompt-lookup.jsonl"))
    parser.add_argument("--report", type=Path, help="print the table of a results file and exit")
    parser.add_argument("--results", type=Path, help="with --report: also write the table into this file's section")
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(args.report))
        return
    run(args.model, args.program, args.dataset, args.limit, args.draft, args.threads, args.control, Rows(args.out))


if __name__ == "__main__":
    main()
