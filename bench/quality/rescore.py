"""Re-score stored per-question results with today's metrics: no LM call, only ``disambig score``'s engine.

    python -m bench.quality.rescore                                   # print the tables
    python -m bench.quality.rescore --results docs/RESULTS.md         # also write them into that file's section

Each run folder under ``--runs`` (default ``bench/results/suite``) holds a ``results.jsonl`` written by
``disambig eval``; its stored answers are scored again against the question set named in its ``params.json``
with the format's default metrics (plus MRecall@5 for programs that retrieved), so tables made with older
metric definitions can be compared with today's. The code that produced the answers is named per run:
the row stamps when present, else the commit its ``params.json`` recorded when the folder was claimed.

Each row also gets its difference to the reference run on the dataset's primary metric (ASQA's corpus ``dr``,
AmbigNQ's ``ambigqa-f1``) with a 95% paired-bootstrap interval (``disambig.evaluation.paired``): the reference is
the uncompiled ``vanilla-rag`` run of the table with the row's dataset and LM (and the row's retriever when the
table holds several), compared on the question ids both runs hold.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import DELTA_NOTE, Script, delta_head, difference_cell
from bench.harness.runs import answers_code, first_ids, params, raw_rows, row_costs, run_label, score_rows

SCRIPT = Script.of(__file__)
COSTS = {"lm_calls_per_q": "LM calls/q", "tokens_per_q": "tokens/q", "latency_p50_s": "p50 s",
         "latency_p95_s": "p95 s", "latency_p99_s": "p99 s"}
EXTRA = {"asqa": ["adf-rouge-l", "answer-f1"], "ambignq": ["answer-f1"]}
RETRIEVAL_EXTRA = {"asqa": ["ndcg@5", "recall@5", "adf-ndcg@5", "adf-recall@5"]}  # against the evidence passages
PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}
REFERENCE = "vanilla-rag"


def rescore(run: Path, first: int | None = None, skip: int = 0) -> dict:
    """``{program, dataset, questions, failures, code, metrics, cost, params, primary, per_question}`` for one run
    folder (``per_question``: each question's scores by id; ``primary``: the dataset's primary metric, or None);
    with ``first``, only its answers to the first ``first`` questions of the run's split (to compare runs of
    different lengths); with ``skip``, not its answers to the first ``skip`` (a later block of questions alone)."""
    from disambig.cli.score_cmd import load_questions

    run_params = params(run)
    raw = raw_rows(run, first_ids(run_params, first, skip) if first or skip else None)
    kind = load_questions(run_params["dataset"])[1]
    retrieved = any((r.get("prediction") or {}).get("passages") for r in raw)
    extra = EXTRA.get(kind, []) + (["mrecall@5", *RETRIEVAL_EXTRA.get(kind, [])] if retrieved else [])
    result = score_rows(raw, run_params["dataset"], [], extra)
    grades = [((r.get("trace") or {}).get("notes") or {}).get("grade") for r in raw]
    readings = [len((r.get("prediction") or {}).get("interpretations") or []) for r in raw]
    return {"program": run_label(run), "lm": run_params.get("lm_model") or run_params.get("lm", ""),
            "grades": grade_counts(grades), "readings_per_q": sum(readings) / len(readings) if readings else 0.0,
            "dataset": run_params["dataset"], "cost": row_costs(raw), "questions": result.questions,
            "failures": sum(r.get("error") is not None for r in raw), "code": answers_code(run_params, raw),
            "metrics": result.metrics, "params": run_params, "primary": PRIMARY.get(kind),
            "per_question": {q["id"]: q["scores"] for q in result.per_question}}


def grade_counts(grades: list[str | None]) -> str:
    """DIVA's retrieval grades as ``Useful/PartialUseful/Useless`` counts, or "–" for a program without them."""
    if not any(grades):
        return "–"
    return "/".join(str(grades.count(g)) for g in ("Useful", "PartialUseful", "Useless"))


def reference_of(row: dict, rows: list[dict]) -> dict | None:
    """The uncompiled ``vanilla-rag`` run among ``rows`` with ``row``'s dataset and LM spec; where there are several,
    the one with ``row``'s retriever; None when there is none (or no single one)."""
    mine = row.get("params") or {}

    def same(other: dict, key: str) -> bool:
        return (other.get("params") or {}).get(key) == mine.get(key)

    found = [r for r in rows if (r.get("params") or {}).get("program") == REFERENCE
             and not r["params"].get("artifact") and same(r, "dataset") and same(r, "lm")]
    if len(found) > 1:
        found = [r for r in found if same(r, "retriever")]
    return found[0] if len(found) == 1 else None


def table(rows: list[dict]) -> str:
    names = list(dict.fromkeys(name for r in rows for name in r["metrics"]))
    delta = delta_head([r["primary"] for r in rows if r.get("primary")], REFERENCE)
    head = ["program", "LM", "n", "fail", *names, delta, "readings/q", "grades U/P/L", *COSTS.values(),
            "answers made by"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        reference = reference_of(r, rows)
        cells = [r["program"], r["lm"], str(r["questions"]), str(r["failures"])]
        cells += [f"{r['metrics'][n]:.3f}" if n in r["metrics"] else "–" for n in names]
        cells += [difference_cell(r.get("per_question", {}), reference and reference.get("per_question"),
                                  r.get("primary"))]
        cells += [f"{r.get('readings_per_q', 0.0):.1f}", r.get("grades", "–")]
        cells += [f"{r['cost'][c]:.1f}" if c in r.get("cost", {}) else "–" for c in COSTS]
        lines.append("| " + " | ".join([*cells, f"`{r['code']}`"]) + " |")
    return "\n".join(lines)


def section(runs: str, by_dataset: dict[str, list[dict]]) -> str:
    parts = [f"Generated by `{SCRIPT.command('--runs ' + runs)}` from the stored answers (no LM call). {DELTA_NOTE} "
             f"Reference: the uncompiled `{REFERENCE}` run with the row's dataset and LM (and its retriever where the "
             "table holds several); primary metric: ASQA's corpus `dr` (the bootstrap recomputes it from each "
             "resample's mean D-F1 and ROUGE-L), AmbigNQ's `ambigqa-f1`.", ""]
    for dataset, rows in by_dataset.items():
        parts += [f"### {dataset}, re-scored", "", table(rows), ""]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", default=[Path("bench/results/suite")],
                        help="Folders of run folders (each run folder holds results.jsonl and params.json).")
    parser.add_argument("--results", type=Path, default=None, help="Markdown file to write the tables into.")
    parser.add_argument("--section", default="suite", help="Name of the generated section in --results.")
    parser.add_argument("--datasets", nargs="+", default=None, help="Keep only runs on these datasets (e.g. asqa).")
    parser.add_argument("--only", nargs="+", default=None,
                        help="Run folders to include, by name without the dataset (e.g. diva vanilla-rag).")
    parser.add_argument("--first", type=int, default=None,
                        help="Score only the answers to the first N questions of each run's split.")
    parser.add_argument("--skip", type=int, default=0,
                        help="Leave out the answers to the first N questions of each run's split (with --first 150, "
                             "--skip 80 scores questions 81-150).")
    args = parser.parse_args()
    if args.skip < 0 or (args.first is not None and args.skip >= args.first):
        parser.error(f"--skip {args.skip} leaves no questions: give 0 <= --skip < --first")
    by_dataset: dict[str, list[dict]] = {}
    for run in sorted(p.parent for runs in args.runs for p in runs.glob("*/results.jsonl")):
        if args.only and run_label(run) not in args.only:
            continue
        if args.datasets and Path(params(run)["dataset"]).stem not in args.datasets:
            continue
        row = rescore(run, args.first, args.skip)
        by_dataset.setdefault(row["dataset"], []).append(row)
    only = (f" --datasets {' '.join(args.datasets)}" if args.datasets else "") + (
        f" --only {' '.join(args.only)}" if args.only else "") + (f" --first {args.first}" if args.first else "") + (
        f" --skip {args.skip}" if args.skip else "")
    text = section(" ".join(str(r) for r in args.runs) + only, by_dataset)
    SCRIPT.section(args.results, text, "" if args.section == "suite" else args.section)


if __name__ == "__main__":
    main()
