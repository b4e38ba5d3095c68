"""Seconds, calls and tokens per question of the runs of ``bench/cost/speed.toml``, one row a run: no LM call.

    python -m bench.run bench/cost/speed.toml                     # the runs (idle cores, 2 threads)
    python -m bench.cost.speed_table --runs bench/results/speed [--results docs/benchmarks.md]
    python -m bench.run bench/cost/speed.toml --out bench/results/speed-after   # the same runs at newer code
    python -m bench.cost.speed_table --runs bench/results/speed bench/results/speed-after

A row: the model, the program, the questions answered, the mean seconds a question with its 95% bootstrap interval,
the median, LM calls, prompt tokens (and how many of them were reused from the prompt cache rather than prefilled),
generated tokens, the dataset's primary metric, the code that answered and the CPU(s) its sittings ran on ("–" for a
run made before ``bench.run`` recorded them in the run folder's ``machine.jsonl``). The first question of a run
also pays for loading the model and opening the indexes; the column "s/q without the first" leaves it out. Given several
folders, a run of a later folder is set beside the first folder's run of the same model, program and dataset: its
total seconds over the earlier run's on the questions both answered (paired bootstrap over questions), and how many
of those questions got the same long answer.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench.harness import Script
from bench.harness.machine import sitting_cpus
from bench.harness.runs import answers_code, params, raw_rows, score_rows

SCRIPT = Script.of(__file__)


def measure(run: Path) -> dict:
    """One run folder's row."""
    from disambig.evaluation.paired import paired_difference
    from disambig.metrics.defaults import PRIMARY_METRICS

    run_params, raw = params(run), raw_rows(run)
    traces = [r.get("trace") or {} for r in raw]
    seconds = [float(t.get("seconds") or 0.0) for t in traces]
    interval = paired_difference(seconds, [0.0] * len(seconds)) if len(seconds) > 1 else None

    def mean(key: str) -> float:
        return statistics.fmean(float(t.get(key) or 0) for t in traces) if traces else 0.0

    primary = PRIMARY_METRICS.get(run_params["dataset"])  # a named dataset (asqa, ambignq) is its own kind
    value = score_rows(raw, run_params["dataset"]).metrics.get(primary) if primary else None
    answers = [None if r.get("error") else ((r.get("prediction") or {}).get("long_answer") or "") for r in raw]
    return {"ids": [str(r["id"]) for r in raw], "seconds": seconds, "answers": answers,
            "dataset": run_params["dataset"], "model": run_params.get("lm", ""), "program": run_params["program"],
            "n": len(raw),
            "mean": statistics.fmean(seconds) if seconds else 0.0, "interval": interval,
            "rest": statistics.fmean(seconds[1:]) if len(seconds) > 1 else None,
            "median": statistics.median(seconds) if seconds else 0.0, "calls": mean("lm_calls"),
            "prompt": mean("input_tokens"), "reused": mean("reused_prompt_tokens"), "generated": mean("output_tokens"),
            "primary": primary, "value": value, "code": answers_code(run_params, raw),
            "cpu": ", ".join(sitting_cpus(run)) or "–"}


def against(row: dict, earlier: dict) -> str:
    """The row's time over an earlier run's on the questions both answered (a failed one left out), and how many
    answers stayed the same."""
    from bench.cost.prompt_lookup import ratio_interval

    before = dict(zip(earlier["ids"], zip(earlier["seconds"], earlier["answers"], strict=True), strict=True))
    common = [(before[i][0], s, before[i][1] == a)
              for i, s, a in zip(row["ids"], row["seconds"], row["answers"], strict=True)
              if i in before and a is not None and before[i][1] is not None]
    if len(common) < 2:
        return "–"
    ratio = ratio_interval([c[0] for c in common], [c[1] for c in common])
    return f"{ratio} of `{earlier['code']}`, {sum(c[2] for c in common)}/{len(common)} same answers"


def key(row: dict) -> tuple[str, str, str]:
    return row["model"], row["program"], row["dataset"]


def table(rows: list[dict], earlier: dict[tuple[str, str, str], dict] | None = None) -> str:
    """One line a run; with ``earlier`` (runs by model, program and dataset), each run's time against its earlier
    run."""
    earlier = earlier or {}
    head = ("| model | program | n | s/q [95% CI] | s/q without the first | median s | LM calls/q | prompt tokens/q "
            "(reused) | generated tokens/q | primary metric | code | CPU | time vs earlier code [95% CI] |\n"
            "| --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | --- | --- | --- | --- |")
    lines = []
    for r in rows:
        before = earlier.get(key(r))
        versus = against(r, before) if before is not None and before is not r else "–"
        ci = f" [{r['interval'].low:.1f}, {r['interval'].high:.1f}]" if r["interval"] else ""
        rest = "–" if r["rest"] is None else f"{r['rest']:.1f}"
        value = "–" if r["value"] is None else f"{r['primary']} {r['value']:.3f}"
        lines.append(f"| {r['model']} | {r['program']} | {r['n']} | {r['mean']:.1f}{ci} | {rest} | {r['median']:.1f} | "
                     f"{r['calls']:.1f} | {r['prompt']:,.0f} ({r['reused']:,.0f}) | {r['generated']:.0f} | {value} | "
                     f"`{r['code']}` | {r['cpu']} | {versus} |")
    return "\n".join([head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", default=[Path("bench/results/speed")],
                        help="folders of run folders, earliest code first")
    SCRIPT.add_section_options(parser)
    args = parser.parse_args()
    rows, earlier = [], {}
    for n, folder in enumerate(args.runs):
        if not folder.is_dir():
            raise SystemExit(f"{folder} is not a folder of run folders")
        runs = (p for p in folder.iterdir() if (p / "results.jsonl").is_file() and (p / "params.json").is_file())
        for run in sorted(runs):
            rows.append(measure(run))
            if n == 0:  # the earlier code is the first folder's
                earlier.setdefault(key(rows[-1]), rows[-1])
    folders = [str(folder) for folder in args.runs]
    command = SCRIPT.command(["--runs", *folders] + (["--section", args.section] if args.section else []))
    body = f"Generated by `{command}` from the stored runs (no LM call).\n\n{table(rows, earlier)}"
    SCRIPT.section(args.results, body, args.section)


if __name__ == "__main__":
    main()
