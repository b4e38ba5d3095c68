"""Prompt-prefix reuse in the in-process engine, measured on DIVA questions.

    python -m bench.cost.lm_engine --models smollm2 qwen2.5-0.5b --modes none last ram --limit 3 --out FILE
    python -m bench.cost.lm_engine --report FILE [--results docs/benchmarks.md]

Runs DIVA (uncompiled, or the compiled state given with ``--artifact``; hybrid retrieval over the wiki
slice) on the first ASQA dev questions once per model and reuse mode, and writes per-question prompt tokens,
tokens actually prefilled, reused tokens, LM calls and seconds to ``--out`` (JSON):

- ``none``: every call starts from an empty KV cache (``Llama.reset()`` before each call): everything prefilled;
- ``last``: the default, llama.cpp reuses the prefix a prompt shares with the previous call;
- ``ram``:  also the project's prompt cache (``disambig.lm.prompt_cache``: KV states of earlier calls, 1 GiB),
  resuming each call from the longest prefix it shares with any earlier one.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench.harness import Script

SCRIPT = Script.of(__file__)


def run(model: str, mode: str, limit: int, artifact: str = "") -> list[dict]:
    import dspy

    from disambig.data import load_dataset
    from disambig.evaluation.code_version import code_stamp
    from disambig.lm.runtime import build_lm, default_adapter
    from disambig.optimizers.loading import load
    from disambig.programs import build_program
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    settings = load_settings(lm=f"local:{model}")
    if artifact:
        program = load(artifact, settings=settings)
    else:
        program = build_program("diva", retriever=build_retriever("hybrid", corpus="wiki-slice", settings=settings))
    lm = build_lm(settings)
    engine = lm.engine
    engine.prompt_cache_mb = 1024 if mode == "ram" else 0
    if mode == "none":
        llama = engine.llama
        complete = llama.create_chat_completion

        def from_scratch(**kwargs):
            llama.reset()
            return complete(**kwargs)

        llama.create_chat_completion = from_scratch
    rows = []
    with dspy.context(lm=lm, adapter=default_adapter()):
        for example in load_dataset("asqa", split="dev", limit=limit):
            start = time.perf_counter()
            trace = program(**example.inputs()).trace
            rows.append({"model": model, "mode": mode, "id": example.id, "lm_calls": trace["lm_calls"],
                         "input_tokens": trace["input_tokens"], "reused": trace["reused_prompt_tokens"],
                         "prefilled": trace["input_tokens"] - trace["reused_prompt_tokens"],
                         "output_tokens": trace["output_tokens"], "seconds": round(time.perf_counter() - start, 2),
                         "load_avg": round(os.getloadavg()[0], 2), "code": code_stamp()})
            print(json.dumps(rows[-1]), flush=True)
    engine.close()
    return rows


def report(rows: list[dict]) -> str:
    """Per model and reuse mode: calls, prompt tokens, prefilled and reused tokens, seconds per question."""
    lines = ["| model | reuse | questions | LM calls/q | prompt tokens/q | prefilled/q | reused/q | s/q | load avg "
             "| code |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["model"], row["mode"]), []).append(row)
    for (model, mode), group in groups.items():
        n = len(group)

        def mean(key: str, group: list[dict] = group, n: int = n) -> float:
            return sum(r[key] for r in group) / n

        loads = [r["load_avg"] for r in group if "load_avg" in r]
        codes = sorted({r["code"]["commit"] for r in group if "code" in r}) or ["not recorded"]
        reused = mean("reused")
        lines.append(f"| {model} | {mode} | {n} | {mean('lm_calls'):.1f} | {mean('input_tokens'):,.0f} "
                     f"| {mean('prefilled'):,.0f} | {reused:,.0f} ({reused / max(1.0, mean('input_tokens')):.0%}) "
                     f"| {mean('seconds'):.1f} | {f'{min(loads)}-{max(loads)}' if loads else '–'} "
                     f"| {', '.join(f'`{c}`' for c in codes)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["smollm2", "qwen2.5-0.5b"])
    parser.add_argument("--modes", nargs="+", default=["none", "last", "ram"], choices=["none", "last", "ram"])
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--artifact", default="", help="A compiled DIVA state (default: the uncompiled program).")
    parser.add_argument("--out", type=Path, default=Path("bench/results/lm-engine.json"))
    parser.add_argument("--report", type=Path, help="print the table of a results file and exit")
    parser.add_argument("--results", type=Path, help="with --report: also write the table into this file's section")
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(json.loads(args.report.read_text(encoding="utf-8"))))
        return
    rows = [row for model in args.models for mode in args.modes for row in run(model, mode, args.limit, args.artifact)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
