"""The SpiderQA section of docs/RESULTS.md (the DFA paper's Table 5 shape) from stored count runs (no LM call).

    python -m bench.quality.spiderqa_table --runs bench/results/spiderqa                    # print the tables
    python -m bench.quality.spiderqa_table --runs bench/results/spiderqa --results docs/RESULTS.md

Every run folder under ``--runs`` holds a ``results.jsonl`` that `disambig eval` wrote for a count program on a
SpiderQA folder (``disambig data spiderqa``). Its stored predictions are scored again with today's metrics
(``disambig.metrics.count``: a failed question counts 0 and keeps no chunk) against the question file its
``params.json`` names: NACE mean and median, ACE mean and chunk recall (macro), then the cost per question (LM calls,
tokens, p50 seconds) and, for DFA, its LM calls by stage, judge batches and the cross-batch candidate pairs (CP),
averaged over its answered questions. Runs are compared
only on the questions they all answered (the table says how many). Each row also gets its difference in NACE mean
to the ``--reference`` run (default ``naive-rag-count-k5``: VanillaRAG does not count, Naive RAG at k = 5 is the
paper's retrieval baseline) with a 95% paired-bootstrap interval (``disambig.evaluation.paired``); NACE is an error,
so a negative difference is "better".
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from types import SimpleNamespace

from bench.harness import DELTA_NOTE, Script, delta_head, difference_cell
from bench.harness.runs import answers_code, params, raw_rows, row_costs

SCRIPT = Script.of(__file__)

PAPER_TABLE5 = (("LLM-only", 5.494, 0.600, 45.940, 0.0), ("Naive RAG (k = 5)", 0.666, 0.800, 9.895, 0.181),
                ("Naive RAG (k = 10, Table 7)", 0.670, 0.800, None, 0.364),
                ("Naive RAG (k = 20, Table 7)", 0.657, 0.800, None, 0.521),
                ("Naive RAG (k = 50, Table 7)", 0.672, 0.800, None, 0.403),
                ("DFA", 0.262, 0.143, 4.000, 0.891))
"""The paper's SpiderQA rows with GPT-4o-mini (Table 5, and Table 7 for the other k): NACE mean, median, ACE mean
(None: not reported), chunk recall."""

STAGES = ("disambig", "filter_plan", "filter_eval", "judge", "dedup")
REFERENCE = "naive-rag-count-k5"


def scored(run: Path) -> dict:
    """One run's per-question scores and costs, keyed by question id."""
    from disambig.data import load_dataset
    from disambig.metrics.aggregation import ace, nace
    from disambig.metrics.count import chunk_recall_metric, predicted_count

    run_params = params(run)
    gold = {str(ex.id): ex for ex in load_dataset(run_params["dataset"], split="all")}
    raw = raw_rows(run)
    per_question = {}
    for row in raw:
        example = gold[str(row["id"])]
        pred = SimpleNamespace(**((row.get("prediction") or {}) if row.get("error") is None else {}))
        count = predicted_count(pred)
        notes = (row.get("trace") or {}).get("notes") or {}
        per_question[str(row["id"])] = {
            "ace": ace(count, example.gold_count), "nace": nace(count, example.gold_count),
            "recall": chunk_recall_metric(example, pred), "failed": row.get("error") is not None,
            "stages": {s: notes.get(f"lc_{s}", 0) for s in STAGES} if "final_snapshot" in notes else None,
            "cp": notes.get("cp"), "batches": len(notes.get("batches") or []) if "batches" in notes else None,
            "row": row}
    return {"name": run.name, "params": run_params, "questions": per_question, "code": answers_code(run_params, raw)}


def summary(run: dict, ids: list[str], reference: dict | None = None) -> dict:
    """The table's row of one scored run on the questions ``ids``; ``delta`` is its difference in NACE mean to the
    ``reference`` run on them ("reference" for that run itself, "–" without one)."""
    rows = [run["questions"][i] for i in ids]
    scores = nace_scores(run, ids)
    against = scores if reference is run else None if reference is None else nace_scores(reference, ids)
    cost = row_costs([r["row"] for r in rows])
    out = {"name": run["name"], "n": len(rows), "failures": sum(r["failed"] for r in rows),
           "nace_mean": statistics.fmean(r["nace"] for r in rows),
           "nace_median": statistics.median(r["nace"] for r in rows),
           "ace_mean": statistics.fmean(r["ace"] for r in rows), "recall": statistics.fmean(r["recall"] for r in rows),
           "exact": sum(r["ace"] == 0 for r in rows), "lm_calls": cost["lm_calls_per_q"],
           "tokens": cost["tokens_per_q"], "p50": cost["latency_p50_s"], "code": run["code"],
           "delta": difference_cell(scores, against, "nace", higher_is_better=False)}
    staged = [r for r in rows if r["stages"] is not None]  # DFA's answered questions (a failure has no stages)
    if staged:
        out["stages"] = {s: statistics.fmean(r["stages"][s] for r in staged) for s in STAGES}
        out["cp"] = statistics.fmean(r["cp"] or 0 for r in staged)
        out["batches"] = statistics.fmean(r["batches"] or 0 for r in staged)
    return out


def nace_scores(run: dict, ids: list[str]) -> dict[str, dict[str, float]]:
    """A scored run's NACE on the questions ``ids``, as ``{id: {"nace": value}}``."""
    return {i: {"nace": run["questions"][i]["nace"]} for i in ids}


def reference_note(reference: str, found: bool) -> str:
    """What the Δ column is measured against, for the section's note."""
    if not found:
        return f"Reference: `{reference}` is not among these runs, so no row has a Δ."
    why = " (Naive RAG at k = 5, the paper's retrieval baseline: VanillaRAG does not count)"
    why = why if reference == REFERENCE else ""
    return f"Reference: `{reference}`{why}; NACE is an error, so a negative Δ is \"better\"."


def main_table(rows: list[dict], reference: str = REFERENCE) -> str:
    head = (f"| program | n | fail | NACE mean | NACE median | ACE mean | exact | chunk recall | "
            f"{delta_head(['NACE mean'], reference)} | LM calls/q | tokens/q | p50 s | code |")
    lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| `{r['name']}` | {r['n']} | {r['failures']} | {r['nace_mean']:.3f} | {r['nace_median']:.3f} | "
                     f"{r['ace_mean']:.3f} | {r['exact']} | {r['recall']:.3f} | {r['delta']} | {r['lm_calls']:.1f} | "
                     f"{r['tokens']:,.0f} | {r['p50']:.1f} | `{r['code']}` |")
    return "\n".join(lines)


def stage_table(rows: list[dict]) -> str:
    lines = ["| program | " + " | ".join(f"LC {s}" for s in STAGES) + " | judge batches | CP |",
             "| --- |" + " ---: |" * (len(STAGES) + 2)]
    for r in rows:
        if "stages" in r:
            lines.append(f"| `{r['name']}` | " + " | ".join(f"{r['stages'][s]:.2f}" for s in STAGES)
                         + f" | {r['batches']:.2f} | {r['cp']:.1f} |")
    return "\n".join(lines)


def paper_table() -> str:
    lines = ["| paper (GPT-4o-mini) | NACE mean | NACE median | ACE mean | chunk recall |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, mean, median, ace_mean, recall in PAPER_TABLE5:
        lines.append(f"| {name} | {mean:.3f} | {median:.3f} | {'' if ace_mean is None else f'{ace_mean:.3f}'} | "
                     f"{recall:.3f} |")
    return "\n".join(lines)


def section(label: str, runs: list[dict], paper: bool = True, reference: str = REFERENCE) -> str:
    common = sorted(set.intersection(*(set(r["questions"]) for r in runs)))
    if not common:
        raise SystemExit(f"the runs {', '.join(r['name'] for r in runs)} share no answered question")
    against = next((r for r in runs if r["name"] == reference), None)
    rows = [summary(r, common, against) for r in runs]
    datasets = sorted({r["params"]["dataset"] for r in runs})
    lms = sorted({str(r["params"].get("lm_model") or r["params"].get("lm")) for r in runs})
    parts = [f"Generated by `{SCRIPT.command('--runs ' + label)}` from the stored answers (no LM "
             f"call): {len(common)} questions every run answered; LM {', '.join(lms)}; dataset "
             f"{', '.join(Path(d).name for d in datasets)}. {DELTA_NOTE} "
             + reference_note(reference, against is not None),
             "", main_table(rows, reference), ""]
    if any("stages" in r for r in rows):
        parts += ["LM calls per question by DFA stage, judge batches and cross-batch candidate pairs (CP):", "",
                  stage_table(rows), ""]
    if paper:
        parts += ["The paper's figures on its SpiderQA (Table 5; other k from Table 7):", "", paper_table()]
    return "\n".join(parts).removesuffix("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", default=[Path("bench/results/spiderqa")])
    parser.add_argument("--only", nargs="*", help="run folder names to include, in this order")
    parser.add_argument("--results", type=Path, help="write the section into this Markdown file")
    parser.add_argument("--section", default="spiderqa-table5", help="name of the generated section")
    parser.add_argument("--no-paper", action="store_true", help="leave out the paper's figures")
    parser.add_argument("--reference", default=REFERENCE, help="run folder name every row's Δ NACE is measured against")
    args = parser.parse_args()
    folders = [p for root in args.runs for p in sorted(root.iterdir()) if (p / "results.jsonl").is_file()]
    if args.only:
        by_name = {p.name: p for p in folders}
        missing = [n for n in args.only if n not in by_name]
        if missing:
            raise SystemExit(f"no run folder named {', '.join(missing)} under {', '.join(map(str, args.runs))}")
        folders = [by_name[n] for n in args.only]
    if not folders:
        raise SystemExit(f"no run folders with results.jsonl under {', '.join(map(str, args.runs))}")
    label = " ".join(map(str, args.runs)) + (f" --only {' '.join(args.only)}" if args.only else "") + (
        f" --reference {args.reference}" if args.reference != REFERENCE else "")
    text = section(label, [scored(p) for p in folders], paper=not args.no_paper, reference=args.reference)
    SCRIPT.section(args.results, text, args.section)


if __name__ == "__main__":
    main()
