"""Long answers that loop, from stored answers (no LM call):

    python -m bench.quality.repetition loops --runs bench/results/qwen [--ngram 6 --repeats 3] [--results FILE]
    python -m bench.quality.repetition choice --stored bench/results/qwen/vanilla-rag-asqa \
        --measured "repeat penalty 1.1=bench/results/qwen/vanilla-rag-asqa-repeat-penalty" [--results FILE]

``loops``: how often stored long answers loop, and what an n-gram stop guard would have made of them. A long answer
*loops* when some run of ``--ngram`` words occurs ``--repeats`` times. Under greedy decoding a guard that stops
generation as soon as that happens produces exactly the prefix of the unguarded answer up to that point, so its effect
can be computed from the stored answers: each looping answer is cut where the n-gram's second occurrence starts, then
back to its last whole sentence (``disambig.lm.repetition.guarded``), and re-scored with the dataset's metrics. (A
guard that changes the sampling distribution, such as llama.cpp's repetition penalty, needs new runs.)

``choice``: guard or repeat penalty, side by side: the stored unguarded answers, the guard computed on them, and
measured runs, every row scored on the questions all the given runs answered. For a measured run the table adds how
many LM replies its engine cut (by the guard, by the token cap, from the rows' traces) and on how many questions its
long answer equals the computed cut (for a guarded run under greedy decoding: all, unless the code or CPU backend
changed other tokens) and, where the stored answer does not loop, the stored answer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.harness import Script, difference_cell
from bench.harness.runs import by_id, params, questions, raw_rows, rows_by_id, score_rows
from disambig.lm.repetition import guarded, loop_cut

SCRIPT = Script.of(__file__)
METRICS = {"asqa": ["rouge-l", "d-f1", "dr"], "ambignq": ["ambigqa-f1", "d-f1"]}
PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}  # the metric of each row's paired interval


def long_answer(row: dict) -> str:
    return (row.get("prediction") or {}).get("long_answer") or ""


def with_long_answer(row: dict, text: str) -> dict:
    return {**row, "prediction": {**(row.get("prediction") or {}), "long_answer": text}}


def loops_row(run: Path, ngram: int, repeats: int) -> dict:
    """One run's looping share and its metrics with and without the guard."""
    dataset = params(run)["dataset"]
    rows = raw_rows(run)
    cut = [with_long_answer(r, guarded(long_answer(r), ngram, repeats)) for r in rows]
    before, after = (score_rows(rs, dataset) for rs in (rows, cut))
    kind = questions(dataset)[1]
    return {"run": run.name, "dataset": kind, "n": len(rows), "looping": sum(
        loop_cut(long_answer(r), ngram, repeats) is not None for r in rows),
        "words": sum(len(long_answer(r).split()) for r in rows) / len(rows),
        "words_guarded": sum(len(long_answer(r).split()) for r in cut) / len(rows),
        "before": before.metrics, "after": after.metrics,
        "delta": f"{PRIMARY[kind]} " + difference_cell(by_id(after.per_question), by_id(before.per_question),
                                                       PRIMARY[kind])}


def loops(rows: list[dict], ngram: int, repeats: int) -> str:
    lines = [f"Loop: a run of {ngram} words occurring {repeats} times in the long answer.", "",
             "| run | n | looping | words/answer (guarded) | metrics before → guarded | Δ guarded − before [95% CI] |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        shown = ", ".join(f"{m} {r['before'][m]:.3f} → {r['after'][m]:.3f}" for m in METRICS[r["dataset"]]
                          if m in r["before"])
        lines.append(f"| {r['run']} | {r['n']} | {r['looping']} | {r['words']:.0f} ({r['words_guarded']:.0f}) | "
                     f"{shown} | {r['delta']} |")
    return "\n".join(lines)


def summary(label: str, rows: list[dict], dataset: str, traced: bool) -> dict:
    """One row of ``choice``: metrics, words per answer, looping answers, and the engine's cuts when ``traced``."""
    result = score_rows(rows, dataset)
    answers = [long_answer(r) for r in rows]
    cuts = tuple(sum(int((r.get("trace") or {}).get(k, 0)) for r in rows)
                 for k in ("cut_by_repetition", "cut_by_length")) if traced else None
    return {"label": label, "kind": questions(dataset)[1], "metrics": result.metrics, "cuts": cuts,
            "scores": by_id(result.per_question), "words": sum(len(a.split()) for a in answers) / len(rows),
            "looping": sum(loop_cut(a) is not None for a in answers)}


def choice(stored: Path, measured: dict[str, Path]) -> str:
    """The markdown table of ``choice`` and the agreement lines of the measured runs."""
    dataset = params(stored)["dataset"]
    base = rows_by_id(stored)
    runs = {label: rows_by_id(path) for label, path in measured.items()}
    ids = [i for i in base if all(i in rows for rows in runs.values())]
    rows = [summary("unguarded (stored run)", [base[i] for i in ids], dataset, traced=False),
            summary("guard 6x3, computed on the stored answers",
                    [with_long_answer(base[i], guarded(long_answer(base[i]))) for i in ids], dataset, traced=False)]
    rows += [summary(f"{label} (measured)", [run[i] for i in ids], dataset, traced=True) for label, run in runs.items()]
    names, primary = METRICS[rows[0]["kind"]], PRIMARY[rows[0]["kind"]]
    lines = [f"{len(ids)} questions answered by every run below; loop: a run of 6 words occurring 3 times.", "",
             "| answers | looping | replies cut (guard / cap) | words/answer | " + " | ".join(names) +
             f" | Δ {primary} vs stored [95% CI] |", "|---|---|---|---|" + "---|" * (len(names) + 1)]
    for r in rows:
        cuts = "-" if r["cuts"] is None else f"{r['cuts'][0]} / {r['cuts'][1]}"
        values = " | ".join(f"{r['metrics'][m]:.3f}" for m in names)
        delta = difference_cell(r["scores"], rows[0]["scores"], primary)
        lines.append(f"| {r['label']} | {r['looping']} | {cuts} | {r['words']:.0f} | {values} | {delta} |")
    steady = [i for i in ids if loop_cut(long_answer(base[i])) is None]
    for label, run in runs.items():
        same = sum(long_answer(run[i]) == guarded(long_answer(base[i])) for i in ids)
        kept = sum(long_answer(run[i]) == long_answer(base[i]) for i in steady)
        lines.append(f"\n{label}: long answer equal to the computed cut of the stored one on {same} of {len(ids)} "
                     f"questions; equal to the stored one on {kept} of the {len(steady)} whose stored answer does not "
                     "loop.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    looping = commands.add_parser("loops", help="looping answers per run, and the guard computed on them")
    looping.add_argument("--runs", type=Path, default=Path("bench/results/qwen"))
    looping.add_argument("--only", nargs="*", default=None, help="Run folder names to include (default: all).")
    looping.add_argument("--ngram", type=int, default=6)
    looping.add_argument("--repeats", type=int, default=3)
    chosen = commands.add_parser("choice", help="the guard against measured runs (repeat penalty, guarded)")
    chosen.add_argument("--stored", type=Path, required=True, help="The unguarded run folder.")
    chosen.add_argument("--measured", action="append", default=[], metavar="LABEL=FOLDER",
                        help="A measured run (repeatable), labelled LABEL in the table.")
    for sub, section in ((looping, "repetition"), (chosen, "choice")):
        sub.add_argument("--results", type=Path)
        sub.add_argument("--section", default=section, help="The generated section's name in --results.")
    args = parser.parse_args()
    if args.command == "loops":
        folders = [p.parent for p in sorted(args.runs.glob("*/results.jsonl"))
                   if args.only is None or p.parent.name in args.only]
        text = loops([loops_row(f, args.ngram, args.repeats) for f in folders], args.ngram, args.repeats)
    else:
        measured = {}
        for item in args.measured:
            label, sep, folder = item.partition("=")
            if not sep:
                parser.error(f"--measured {item!r} is not LABEL=FOLDER")
            measured[label] = Path(folder)
        text = choice(args.stored, measured)
    SCRIPT.section(args.results, f"Generated by `{SCRIPT.command(sys.argv[1:])}` from the stored answers (no LM "
                   f"call).\n\n{text}", args.section)


if __name__ == "__main__":
    main()
