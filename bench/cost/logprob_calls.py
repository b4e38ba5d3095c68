"""What a call that records log-probabilities costs with the library's grammar sampling against the lazy one.

    python -m bench.cost.logprob_calls --model qwen2.5-1.5b --threads 1 [--calls 8]
    python -m bench.cost.logprob_calls --report [--results docs/benchmarks.md]

DIVA's verification asks for log-probabilities (P(Yes) of its verdict). The engine records them with a logits
processor that masks the logits with its own copy of the response grammar (``disambig.lm.token_logprobs``); before,
such a call also went through the library's sampling chain, whose grammar step checks the whole vocabulary again at
every token. Now the lazy grammar (``disambig.lm.lazy_grammar``) picks the token, asking the grammar about the best
token only. Two engines of one model, the library's and the lazy one, answer the same Yes/No calls in turn (each
call's prompt new to both, so both prefill it; one untimed call each first loads the model); a row per call: seconds,
the tokens whose log-probabilities were recorded (every reply token but the last), and whether reply, tokens, top
alternatives and log-probabilities are the same.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import Rows, Script, cpu_name
from bench.harness.docs import generated
from bench.harness.machine import load1

SCRIPT = Script.of(__file__)
OUT = Path("bench/results/logprob-calls.jsonl")
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["Yes", "No"]},
                                           "reason": {"type": "string"}}, "required": ["verdict", "reason"]}
QUESTIONS = ["Who has scored the most goals in men's World Cup matches?", "When did Virginia open its state parks?",
             "Which river flows through the capital of Hungary?", "Who wrote the novel about a white whale?",
             "How many players does a rugby union side field?", "What is the tallest mountain in Africa?",
             "Who painted the ceiling of the Sistine Chapel?", "In what year did the Berlin Wall fall?",
             "Which element has the chemical symbol Fe?", "Who was the first woman to win a Nobel Prize?"]
PASSAGE = ("Miroslav Klose scored 16 goals at four World Cups, the most in the men's tournament; Marta holds the "
           "record in the women's World Cup with 17. Virginia opened its six-park system on June 15, 1936.")


def prompt(question: str) -> str:
    return (f"Passage: {PASSAGE}\nQuestion: {question}\nDoes the passage answer the question? Reply in JSON with "
            "a verdict (Yes or No) and a one-sentence reason.")


def call(lm: Any, question: str) -> tuple[float, dict]:
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}}
    start = time.perf_counter()
    reply = lm(prompt(question), response_format=fmt, logprobs=True, top_logprobs=5, temperature=0.0)[0]
    return time.perf_counter() - start, reply


def entries(reply: dict) -> list[dict]:
    """The reply's per-token log-probabilities; a reply without them is refused (the engine must record them)."""
    content = (reply.get("logprobs") or {}).get("content")
    if not content:
        raise SystemExit(f"a reply came back without log-probabilities: {reply.get('text')!r}")
    return content


def same(a: dict, b: dict) -> bool:
    """The same text, the same tokens and top alternatives, and their log-probabilities equal to 1e-6."""
    def close(p: dict, q: dict) -> bool:
        return p["token"] == q["token"] and abs(p["logprob"] - q["logprob"]) < 1e-6

    x, y = entries(a), entries(b)
    return a["text"] == b["text"] and len(x) == len(y) and all(
        close(p, q) and len(p["top_logprobs"]) == len(q["top_logprobs"])
        and all(close(u, v) for u, v in zip(p["top_logprobs"], q["top_logprobs"], strict=True))
        for p, q in zip(x, y, strict=True))


def measure(model: str, threads: int, calls: int, rows: Rows) -> None:
    from disambig.lm import make_lm

    library, lazy = (make_lm(f"local:{model}", threads=threads, max_tokens=48) for _ in range(2))
    library.engine.lazy_grammar = False
    for lm in (library, lazy):  # load the model and warm the caches outside the timings
        call(lm, "Is this a warm-up?")
    for i, question in enumerate((QUESTIONS * (calls // len(QUESTIONS) + 1))[:calls]):
        question = f"{question} (call {i})"  # a prompt neither engine's cache holds
        order = [("library", library), ("lazy", lazy)] if i % 2 == 0 else [("lazy", lazy), ("library", library)]
        timed = {name: call(lm, question) for name, lm in order}
        tokens = len(entries(timed["lazy"][1]))  # the recorded tokens: all but the reply's last
        row = {"model": model, "threads": threads, "call": i, "when": time.time(), "cpu": cpu_name(), "load": load1(),
               "library_s": timed["library"][0], "lazy_s": timed["lazy"][0], "tokens": tokens,
               "same": same(timed["library"][1], timed["lazy"][1])}
        print(row, file=sys.stderr, flush=True)
        rows.add(row)
    for lm in (library, lazy):
        lm.engine.close()


def report(path: Path) -> str:
    """One line a model and thread count: calls, tokens, seconds a call each way, the ratio, the same replies."""
    from bench.cost.prompt_lookup import ratio_interval

    groups: dict[tuple, list[dict]] = {}
    for row in Rows(path, key=("model", "call", "when")):
        groups.setdefault((row["model"], row["threads"], row["code"]["commit"]), []).append(row)
    lines = [generated(SCRIPT.command(["--report"]), f"the rows of `{path}` (no LM call)"), "",
             "| model | threads | calls | recorded tokens/call | library s/call | lazy s/call | lazy/library [95% CI] "
             "| saved ms/token | same replies and log-probabilities | load avg | CPU | code |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | --- | --- |"]
    for (model, threads, commit), group in groups.items():
        off, on = [r["library_s"] for r in group], [r["lazy_s"] for r in group]
        saved = 1000 * (sum(off) - sum(on)) / max(sum(r["tokens"] for r in group), 1)
        loads = [r["load"] for r in group]
        lines.append(f"| {model} | {threads} | {len(group)} | {statistics.mean(r['tokens'] for r in group):.0f} "
                     f"| {statistics.mean(off):.2f} | {statistics.mean(on):.2f} | {ratio_interval(off, on)} "
                     f"| {saved:.0f} | {sum(r['same'] for r in group)}/{len(group)} | {min(loads)}-{max(loads)} "
                     f"| {group[0]['cpu']} | `{commit}` |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=8)
    SCRIPT.add_report_options(parser)
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(OUT))
        return
    measure(args.model, args.threads, args.calls, Rows(OUT, key=("model", "call", "when")))


if __name__ == "__main__":
    main()
