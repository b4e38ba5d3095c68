"""Where a program's tokens go: prompt tokens computed, prompt tokens reused from the prompt cache, and reply tokens,
per LM step (signature), on the first dev questions.

    python -m bench.cost.per_call --lm local:qwen2.5-1.5b --program diva --limit 4 --threads 1 \\
        --out bench/results/per-call.jsonl
    python -m bench.cost.per_call --report bench/results/per-call.jsonl [--results docs/benchmarks.md]

One row per question is appended as it is answered (a stopped run resumes after its last question), holding each
call's step, prompt, reused and reply tokens as the engine counted them. The report leaves out the first question each
process answered, whose calls found the prompt cache empty, unless no other is stored: the others show what a run pays
a question once the instructions and demos are cached. The run's LM only: a ``--verifier-lm``'s calls are not in its
history, so the profile refuses to run with one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.harness import Rows, Script, cpu_name
from bench.harness.docs import generated

SCRIPT = Script.of(__file__)
KEY = ("lm", "program", "dataset", "threads", "id")


def run(spec: str, program: str, dataset: str, limit: int, threads: int, rows: Rows) -> None:
    import dspy

    from disambig.data.loaders import load_dataset
    from disambig.lm.runtime import build_lm, default_adapter
    from disambig.programs import build_program, retriever_kind
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    if os.environ.get("DISAMBIG_VERIFIER_LM", "").strip():
        raise SystemExit("DISAMBIG_VERIFIER_LM is set: a verifier LM's calls go to its own history, which this "
                         "profile does not read; unset it")
    settings = load_settings(lm=spec, threads=threads)
    kind = retriever_kind(program, None)
    module = build_program(program, build_retriever(kind, corpus="wiki-slice", settings=settings) if kind else None)
    steps = step_names(module)
    lm = build_lm(settings)
    cold = True  # the first question this process answers finds the prompt cache empty
    for number, example in enumerate(load_dataset(dataset, split="dev", limit=limit)):
        if rows.done(spec, program, dataset, threads, example.id):
            continue
        before = len(lm.history)
        with dspy.context(lm=lm, adapter=default_adapter(), cache=False):
            prediction = module(question=example.question)
        calls = [call_row(entry, steps) for entry in lm.history[before:]]
        rows.add({"lm": spec, "program": program, "dataset": dataset, "id": example.id, "threads": threads,
                  "order": number, "cold": cold, "seconds": round(prediction.trace["seconds"], 2), "calls": calls,
                  "load_avg": round(os.getloadavg()[0], 2), "cpu": cpu_name()})
        cold = False
        print(f"{number + 1}/{limit} {example.id}: {len(calls)} calls, {prediction.trace['seconds']:.0f} s",
              file=sys.stderr)


def step_names(module: Any) -> dict[str, str]:
    """Each predictor's instruction (whitespace normalised; the system message opens with it) -> its signature's
    name, longest instruction first so that one opening another cannot take its calls.

    Raises:
        SystemExit: two signatures of the program share an instruction, so their calls cannot be told apart.
    """
    import textwrap

    names: dict[str, str] = {}
    for _, predictor in module.named_predictors():
        instruction = " ".join(textwrap.dedent(predictor.signature.instructions).split())
        name = predictor.signature.__name__
        if names.get(instruction, name) != name:
            raise SystemExit(f"{names[instruction]} and {name} share their instruction; their calls cannot be told "
                             "apart")
        names[instruction] = name
    return dict(sorted(names.items(), key=lambda item: -len(item[0])))


def call_row(entry: dict[str, Any], steps: dict[str, str]) -> dict[str, Any]:
    """One call of DSPy's LM history as ``{step, prompt, reused, reply}`` (the engine's own token counts)."""
    messages = entry.get("messages") or []
    system = " ".join(str(messages[0].get("content", "")).split()) if messages else ""
    usage = entry.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    reused = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    step = next((name for opening, name in steps.items() if system.startswith(opening)), "other")
    return {"step": step, "prompt": prompt, "reused": reused,
            "reply": int(usage.get("completion_tokens") or 0)}


def report(path: Path) -> str:
    """Per setting and step: calls, computed and reused prompt tokens and reply tokens a question."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in Rows(path, key=KEY):
        groups[(row["lm"], row["program"], row["dataset"], row["threads"], row["code"]["commit"])].append(row)
    head = generated(SCRIPT.command(["--report", str(path)]), f"the rows of `{path}` (no LM call)")
    lines = [f"{head} {SCRIPT_NOTE}",
             "",
             "| LM | threads | program | step | questions | calls/q | prompt tokens computed/q | reused/q "
             "| reply tokens/q | code |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for (spec, program, _dataset, threads, commit), group in sorted(groups.items()):
        warm = [row for row in group if not row.get("cold", row["order"] == 0)] or group
        per_step: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for row in warm:
            for call in row["calls"]:
                totals = per_step[call["step"]]
                totals[0] += 1
                totals[1] += call["prompt"] - call["reused"]
                totals[2] += call["reused"]
                totals[3] += call["reply"]
        n = len(warm)
        for step, (calls, computed, reused, reply) in per_step.items():
            lines.append(f"| {spec} | {threads} | {program} | {step} | {n} | {calls / n:.1f} | {computed / n:.0f} "
                         f"| {reused / n:.0f} | {reply / n:.0f} | `{commit}` |")
        calls, computed, reused, reply = (sum(t[i] for t in per_step.values()) for i in range(4))
        lines.append(f"| {spec} | {threads} | {program} | all | {n} | {calls / n:.1f} | {computed / n:.0f} "
                     f"| {reused / n:.0f} | {reply / n:.0f} | `{commit}` |")
    return "\n".join(lines)


SCRIPT_NOTE = ("Tokens a question from the engine's counters; the first question of each process (an empty prompt "
               "cache) left out. A reply token costs about five computed prompt tokens on these CPUs (the 1.5B "
               "decodes ~11 and prefills ~56 tokens/s, docs/benchmarks.md).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", default="local:qwen2.5-1.5b")
    parser.add_argument("--program", default="diva")
    parser.add_argument("--dataset", default="asqa")
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/results/per-call.jsonl"))
    parser.add_argument("--report", type=Path, help="print the table of a results file and exit")
    parser.add_argument("--results", type=Path, help="with --report: also write the table into this file's section")
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(args.report))
        return
    run(args.lm, args.program, args.dataset, args.limit, args.threads, Rows(args.out, key=KEY))


if __name__ == "__main__":
    main()
