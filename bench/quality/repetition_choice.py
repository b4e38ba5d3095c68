"""Guard or repeat penalty: the stored unguarded answers, the guard computed on them, and measured runs side by side.

    python -m bench.quality.repetition_choice --stored bench/results/qwen/vanilla-rag-asqa \\
        --measured guard=bench/results/qwen/vanilla-rag-asqa-guard \\
        --measured "repeat penalty 1.1=bench/results/qwen/vanilla-rag-asqa-repeat-penalty" [--results docs/RESULTS.md]

Every row is scored on the questions all the given runs answered (a measured run may be partial), with the dataset's
metrics. The computed guard is ``disambig.lm.repetition.guarded`` on each stored long answer (no LM call). For a
measured run, the table adds how many LM replies its engine cut (by the repetition guard, by the token cap, from the
rows' traces) and on how many questions its long answer equals the computed cut (for a guarded run under greedy
decoding: all, unless the code or CPU backend changed other tokens) and, where the stored answer does not loop, the
stored answer.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.quality.rescore import difference_cell
from disambig.lm.repetition import guarded, loop_cut

METRICS = {"asqa": ["rouge-l", "d-f1", "dr"], "ambignq": ["ambigqa-f1", "d-f1"]}
PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}  # the metric each row's paired interval is computed on


def load_rows(run: Path) -> dict[str, dict]:
    """A run folder's result rows by question id."""
    from disambig.data.jsonl import read_jsonl

    return {row["id"]: row for _, row in read_jsonl(run / "results.jsonl")}


def long_answer(row: dict) -> str:
    return (row.get("prediction") or {}).get("long_answer") or ""


def score(rows: list[dict], dataset: str) -> tuple[dict[str, float], str, dict[str, dict[str, float]]]:
    """The dataset's metrics of ``rows`` (eval result rows), the dataset's kind, and each question's scores by id."""
    from disambig.cli.score_cmd import build_metrics, flatten_result, load_questions
    from disambig.evaluation.scoring import score_predictions

    examples, kind = load_questions(dataset)
    metrics = build_metrics([], kind, None, None)
    result = score_predictions([flatten_result(r) for r in rows], examples, metrics)
    return result.metrics, kind, {q["id"]: q["scores"] for q in result.per_question}


def summary(label: str, rows: list[dict], dataset: str, traced: bool) -> dict:
    """One table row: metrics, words per answer, looping answers, and the engine's cuts when ``traced``."""
    metrics, kind, per_question = score(rows, dataset)
    answers = [long_answer(r) for r in rows]
    cuts = None
    if traced:
        cuts = tuple(sum(int((r.get("trace") or {}).get(k, 0)) for r in rows)
                     for k in ("cut_by_repetition", "cut_by_length"))
    return {"label": label, "n": len(rows), "kind": kind, "metrics": metrics, "cuts": cuts, "scores": per_question,
            "words": sum(len(a.split()) for a in answers) / len(rows),
            "looping": sum(loop_cut(a) is not None for a in answers)}


def table(stored: Path, measured: dict[str, Path]) -> str:
    """The markdown table and the agreement lines of the guarded runs."""
    dataset = json.loads((stored / "params.json").read_text(encoding="utf-8"))["dataset"]
    base = load_rows(stored)
    runs = {label: load_rows(path) for label, path in measured.items()}
    ids = [i for i in base if all(i in rows for rows in runs.values())]
    cut_rows = [{**base[i], "prediction": {**(base[i].get("prediction") or {}),
                                           "long_answer": guarded(long_answer(base[i]))}} for i in ids]
    rows = [summary("unguarded (stored run)", [base[i] for i in ids], dataset, traced=False),
            summary("guard 6x3, computed on the stored answers", cut_rows, dataset, traced=False)]
    rows += [summary(f"{label} (measured)", [run[i] for i in ids], dataset, traced=True)
             for label, run in runs.items()]
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
    import shlex
    import sys

    from bench.quality.route_table import write_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=Path, required=True, help="The unguarded run folder.")
    parser.add_argument("--measured", action="append", default=[], metavar="LABEL=FOLDER",
                        help="A measured run (repeatable), labelled LABEL in the table.")
    parser.add_argument("--results", type=Path)
    parser.add_argument("--section", default="choice", help="The generated section's name in --results.")
    args = parser.parse_args()
    measured = {}
    for item in args.measured:
        label, sep, folder = item.partition("=")
        if not sep:
            parser.error(f"--measured {item!r} is not LABEL=FOLDER")
        measured[label] = Path(folder)
    text = table(args.stored, measured)
    print(text)
    if args.results:
        write_section(args.results, args.section, text,
                      "python -m bench.quality.repetition_choice " + shlex.join(sys.argv[1:]),
                      "bench/quality/repetition_choice.py")


if __name__ == "__main__":
    main()
