"""An engine change, off against on: the same program, model and questions, seconds and answers compared.

    python -m bench.cost.engine_ab --change lazy-grammar --model qwen2.5-1.5b --program diva --limit 10 \\
        --out bench/results/engine-ab.jsonl
    python -m bench.cost.engine_ab --report bench/results/engine-ab.jsonl [--results docs/benchmarks.md]

Two engines of one model, alike but for the change, answer each question in turn, the order alternating from one
question to the next so both see the same load. The changes:

- ``lazy-grammar``: off samples through llama-cpp-python's chain (the grammar checks the whole vocabulary at each
  token), on through ``disambig.lm.lazy_grammar`` without its quote repair; the replies must be the same token for
  token.
- ``repair-quotes``: on writes a double quote the model means as text inside a JSON string escaped
  (``disambig.lm.json_quotes``), off lets it end the string; replies differ only where such a quote was written.
- ``batch-calls``: on decodes a program's independent calls together (``disambig.lm.batch_decode``, up to 8 at
  once); off answers them one after another. Replies may differ where two tokens are nearly tied.
- ``state-copy``: off saves the prompt cache's states with the copy the engine made before ``eb91b7f``
  (``bench.cost.state_copy.old_save_state``, a list of one int a byte), on with today's one-copy ``save_kv_state``;
  both restore states with today's ``load_kv_state``. The states, so the replies, are the same byte for byte.

The table says how many answers were the same. One row per question is appended as it is answered, and a run
started again skips the questions its setting already has.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.cost.prompt_lookup import ratio_interval
from bench.harness import Rows, Script, cpu_name

SCRIPT = Script.of(__file__)
NAMES = ("off", "on")
KEY = ("change", "model", "program", "dataset", "threads", "id")  # one row per question of a setting
CHANGES = {"lazy-grammar": ({"lazy_grammar": False}, {"repair_quotes": False}),  # engine attributes of off, of on
           "repair-quotes": ({"repair_quotes": False}, {}),
           "batch-calls": ({}, {"batch_calls": True}),
           "state-copy": ({}, {})}  # the off engine's model gets the old state copy once loaded (``old_copy``)


def run(change: str, model: str, program: str, dataset: str, limit: int, threads: int, rows: Rows) -> None:
    import dspy

    from disambig.data.loaders import load_dataset
    from disambig.lm.runtime import default_adapter
    from disambig.lm.spec import make_lm
    from disambig.programs import build_program
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    settings = load_settings(lm=f"local:{model}", threads=threads)
    module = build_program(program, build_retriever("hybrid", corpus="wiki-slice", settings=settings))
    lms = {name: make_lm(f"local:{model}", threads=threads) for name in NAMES}
    for name, engine_args in zip(NAMES, CHANGES[change], strict=True):
        for key, value in engine_args.items():
            setattr(lms[name].engine, key, value)
    if change == "state-copy":
        old_copy(lms["off"].engine.llama)
    for number, example in enumerate(load_dataset(dataset, split="dev", limit=limit)):
        if rows.done(change, model, program, dataset, threads, example.id):
            continue
        answers, seconds, generated = {}, {}, {}
        before = _counts(lms["on"])
        for name in NAMES if number % 2 == 0 else NAMES[::-1]:
            with dspy.context(lm=lms[name], adapter=default_adapter(), cache=False):
                prediction = module(question=example.question)
            answers[name] = prediction.long_answer
            seconds[name] = round(prediction.trace["seconds"], 2)
            generated[name] = prediction.trace["output_tokens"]
        counts = {key: value - before[key] for key, value in _counts(lms["on"]).items()}
        rows.add({"change": change, "model": model, "program": program, "dataset": dataset, "threads": threads,
                  "id": example.id, "seconds": seconds, "generated": generated, "counts": counts,
                  "same": answers["on"] == answers["off"],
                  "load_avg": round(os.getloadavg()[0], 2), "cpu": cpu_name()})
        print(f"{number + 1}/{limit} {example.id}: {seconds} same={answers['on'] == answers['off']}", file=sys.stderr)


def old_copy(llama: Any) -> None:
    """Make the loaded ``llama`` save its prompt cache's states with the engine's copy of before ``eb91b7f``."""
    from functools import partial

    from bench.cost.state_copy import old_save_state

    if llama.cache is None or "save_state" not in vars(llama):
        raise SystemExit("the engine keeps no KV-only states (prompt cache off, or logits kept): nothing to compare")
    llama.save_state = partial(old_save_state, llama)


def _counts(lm: Any) -> dict[str, int]:
    """The engine's lazy-grammar counts and its batches so far (0 before its model loads)."""
    grammar, batcher = lm.engine.grammar_, lm.engine.batcher_
    tokens = (grammar.counts.tokens if grammar else 0) + (batcher.decoder.counts.tokens if batcher else 0)
    refused = (grammar.counts.refused if grammar else 0) + (batcher.decoder.counts.refused if batcher else 0)
    escaped = ((grammar.counts.quotes_escaped if grammar else 0)
               + (batcher.decoder.counts.quotes_escaped if batcher else 0))
    return {"tokens": tokens, "refused": refused, "quotes_escaped": escaped,
            "batches": len(batcher.batches) if batcher else 0,
            "batched_calls": sum(batcher.batches) if batcher else 0}


def report(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["change"], row["model"], row["program"], row["dataset"], row["threads"], row["code"]["commit"])
        groups.setdefault(key, []).append(row)
    lines = ["| change | model | program | dataset | threads | n | s/q off | s/q on | on/off [95% CI] | same answers "
             "| reply tokens sampled lazily | refused by the grammar | calls in batches | load avg | code |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for (change, model, program, dataset, threads, commit), group in sorted(groups.items()):
        off, on = [r["seconds"]["off"] for r in group], [r["seconds"]["on"] for r in group]
        tokens, refused = sum(r["counts"]["tokens"] for r in group), sum(r["counts"]["refused"] for r in group)
        batches = sum(r["counts"].get("batches", 0) for r in group)
        calls = sum(r["counts"].get("batched_calls", 0) for r in group)
        lines.append(
            f"| {change} | {model} | {program} | {dataset} | {threads} | {len(group)} | {statistics.mean(off):.1f} "
            f"| {statistics.mean(on):.1f} | {ratio_interval(off, on)} | {sum(r['same'] for r in group)}/{len(group)} "
            f"| {tokens} | {refused} ({refused / max(tokens, 1):.0%}) | {f'{calls} in {batches}' if batches else '–'} "
            f"| {statistics.mean(r['load_avg'] for r in group):.2f} | `{commit}` |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--change", choices=sorted(CHANGES), required=False, default="lazy-grammar")
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--program", default="diva")
    parser.add_argument("--dataset", default="asqa")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/engine-ab.jsonl"))
    parser.add_argument("--report", type=Path, help="print the table of a results file and exit")
    parser.add_argument("--results", type=Path, help="with --report: also write the table into this file's section")
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(args.report))
        return
    run(args.change, args.model, args.program, args.dataset, args.limit, args.threads, Rows(args.out, key=KEY))


if __name__ == "__main__":
    main()
