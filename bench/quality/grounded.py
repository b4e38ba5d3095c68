"""VerDICt's Table 2 for stored runs: interpretation counts, grounded and ungrounded metrics from an LLM judge.

    python -m bench.quality.grounded --runs RUN [RUN ...] --judge-lm SPEC [--first N] [--proxy-top 20]
        [--proxy-retriever hybrid] [--corpus wiki-slice] [--results docs/RESULTS.md --section NAME]

Each RUN is a ``disambig eval`` run folder (``results.jsonl`` + ``params.json``); its stored answers are scored
again, without running the program, through ``disambig score``'s engine: |Q^| (before de-duplication),
G-Precision (per question, and micro), G-Recall (the released formula), G-F1 (harmonic mean of the mean G-P
and mean G-R, as all of Table 2's values are), ungrounded U-Precision and U-Recall, and Sufficient@1..3 (one
I_D call per question serves all three). With ``--proxy-top N`` an interpretation that cites no passage is
judged against U_q: the top N passages the proxy retriever returns for the question, retrieved once and shared
by every run; without it, against the run's own passages (then runs are judged on different evidence). The
U_q column is a fingerprint of the passage ids used, equal for runs judged on the same evidence.

Judged scores are appended per question to ``RUN/grounded.judged.jsonl`` as they come, so the script can be
stopped and restarted: a question already judged with the same judge LM, metrics and U_q costs no judge call.
The judge's unparsable replies are counted per run. Costs (retriever and LM calls, tokens, p50 latency) and the
code that made the answers come from the run's rows (``bench.harness.runs``). Each row also gets its difference in
G-F1 (percentage points) to the ``--reference`` run (default ``vanilla-rag``) with a 95% paired-bootstrap interval
that recomputes G-F1 from each resample's mean G-P and G-R (``disambig.evaluation.paired``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.harness import DELTA_NOTE, Script, delta_head, difference_cell
from bench.harness.runs import answers_code, first_ids, params, questions, raw_rows, row_costs, run_label

SCRIPT = Script.of(__file__)
METRICS = ["num-interpretations", "g-precision", "g-precision-micro", "g-recall", "g-f1", "u-precision", "u-recall",
           "sufficient@1", "sufficient@2", "sufficient@3"]
COLUMNS = {"num-interpretations": "\\|Q̂\\|", "g-precision": "G-P", "g-precision-micro": "G-P micro",
           "g-recall": "G-R", "g-f1": "G-F1", "u-precision": "U-P", "u-recall": "U-R", "sufficient@1": "Suff@1",
           "sufficient@2": "Suff@2", "sufficient@3": "Suff@3"}
COSTS = {"retrieval_calls_per_q": "retriever calls/q", "lm_calls_per_q": "LM calls/q", "tokens_per_q": "tokens/q",
         "latency_p50_s": "p50 s"}
LOG_FILE = "grounded.judged.jsonl"
PRIMARY = "g-f1"
REFERENCE = "vanilla-rag"


def grounded_row(run: Path, judge: Any, judge_lm: str, proxy: Any = None, first: int | None = None) -> dict[str, Any]:
    """Table 2's row of one run folder: its judged metrics, the judge's counts, costs and code.

    Args:
        run: a ``disambig eval`` run folder.
        judge: the ``Judge`` to ask (give each run its own: parse failures are counted per run).
        judge_lm: the judge's LM spec (stored with every judged score).
        proxy: an open ``SharedProxy`` (U_q shared by all runs), or None for each answer's own passages.
        first: score only the answers to the first ``first`` questions of the run's split.
    """
    from disambig.cli.score_cmd import (
        build_metrics,
        flatten_result,
        judged_scoring,
        judging_progress,
        shared_proxy_examples,
    )
    from disambig.evaluation.scoring import score_predictions

    run_params = params(run)
    raw = raw_rows(run, first_ids(run_params, first) if first else None)
    rows = [flatten_result(r) for r in raw]
    examples, kind = questions(run_params["dataset"])
    evidence = None
    if proxy is not None:
        examples, evidence = shared_proxy_examples(rows, examples, proxy)
    metrics = build_metrics(METRICS, kind, None, judge)
    judged = judged_scoring(metrics, judge, judge_lm, evidence, run / LOG_FILE)
    with judging_progress(run_label(run)) as advance:
        result = score_predictions(rows, examples, metrics, judged, on_row=advance)
    return {"program": run_label(run), "lm": run_params.get("lm_model") or run_params.get("lm", ""),
            "dataset": run_params["dataset"], "questions": result.questions,
            "failures": sum(r.get("error") is not None for r in raw), "metrics": result.metrics,
            "judge": result.judge, "proxy": evidence["fingerprint"] if evidence else "own passages",
            "cost": row_costs(raw), "code": answers_code(run_params, raw),
            "per_question": {q["id"]: q["scores"] for q in result.per_question}}


def table(rows: list[dict[str, Any]], reference: str = REFERENCE) -> str:
    """Table 2's columns (percentages, |Q̂| as a mean), the G-F1 difference to the ``reference`` run (by program
    name), then the judge's counts, costs and the answers' code."""
    head = ["program", "LM", "n", "fail", *COLUMNS.values(), delta_head(["G-F1 (points)"], reference), "unparsable",
            "judge calls/q", *COSTS.values(), "U_q", "answers made by"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    against = next((r.get("per_question") for r in rows if r["program"] == reference), None)
    for r in rows:
        cells = [r["program"], r["lm"], str(r["questions"]), str(r["failures"])]
        cells += ["–" if name not in r["metrics"] else f"{r['metrics'][name] * (1 if name == METRICS[0] else 100):.2f}"
                  for name in COLUMNS]
        cells += [difference_cell(r.get("per_question", {}), against, PRIMARY, digits=2, scale=100)]
        cells += [str(r["judge"]["parse_failures"]), f"{r['judge']['judge_calls'] / max(r['questions'], 1):.1f}"]
        cells += [f"{r['cost'][c]:.1f}" if c in r["cost"] else "–" for c in COSTS]
        lines.append("| " + " | ".join([*cells, f"`{r['proxy']}`", f"`{r['code']}`"]) + " |")
    return "\n".join(lines)


def section(command: str, rows: list[dict[str, Any]], judge: dict[str, Any], evidence: str,
            reference: str = REFERENCE) -> str:
    note = (f"Generated by `{SCRIPT.command(command)}` from the stored answers (no program run). Judge: "
            f"`{judge['judge_lm']}` ({judge['judge_model']}); U_q: {evidence}. Metrics in %, |Q̂| per question; "
            f"G-F1 = harmonic mean of mean G-P and mean G-R. {DELTA_NOTE} Reference: `{reference}`"
            + ("" if any(r["program"] == reference for r in rows) else " (not among these runs: no row has a Δ)")
            + "; primary metric: G-F1, in percentage points, recomputed from each resample's mean G-P and G-R.")
    parts = [note, ""]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        parts += [f"### {dataset}, judged", "", table([r for r in rows if r["dataset"] == dataset], reference), ""]
    return "\n".join(parts)


def main() -> None:
    from disambig.cli.score_cmd import judge_lm_spec, make_judge
    from disambig.evaluation.proxy import ProxySource, open_proxy
    from disambig.metrics import Judge

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="Run folders (results.jsonl + params).")
    parser.add_argument("--first", type=int, default=None, help="Only the first N questions of each run's split.")
    parser.add_argument("--judge-lm", default=None, help="Judge LM spec (default DISAMBIG_JUDGE_LM, else DISAMBIG_LM).")
    parser.add_argument("--proxy-top", type=int, default=None, help="U_q depth, shared by all runs (VerDICt: 20).")
    parser.add_argument("--proxy-retriever", default="hybrid", help="Retriever of U_q: bm25, dense or hybrid.")
    parser.add_argument("--corpus", default="wiki-slice", help="Corpus U_q is retrieved from.")
    parser.add_argument("--results", type=Path, default=None, help="Markdown file to write the table into.")
    parser.add_argument("--section", default="grounded", help="Name of the generated section in --results.")
    parser.add_argument("--reference", default=REFERENCE,
                        help="Run (by name without the dataset) every row's G-F1 difference is measured against.")
    args = parser.parse_args()
    missing = [str(r) for r in args.runs if not (r / "results.jsonl").is_file() or not (r / "params.json").is_file()]
    if missing:
        parser.error(f"not run folders (results.jsonl and params.json): {', '.join(missing)}")
    spec = judge_lm_spec(args.judge_lm)
    lm = make_judge(spec).lm
    proxy = open_proxy(ProxySource(args.proxy_top, args.proxy_retriever, args.corpus)) if args.proxy_top else None
    rows = [grounded_row(run, Judge(lm), spec, proxy, args.first) for run in args.runs]
    command = ["--runs", *map(str, args.runs), *(["--first", str(args.first)] if args.first else []),
               "--judge-lm", spec, *(["--proxy-top", str(args.proxy_top), "--proxy-retriever", args.proxy_retriever,
                                      "--corpus", args.corpus] if proxy else []),
               *(["--reference", args.reference] if args.reference != REFERENCE else [])]
    evidence = (f"the top {args.proxy_top} `{args.proxy_retriever}` passages of `{args.corpus}` for the question, "
                "shared by all runs" if proxy else "each run's own passages (not shared)")
    SCRIPT.section(args.results, section(" ".join(command), rows, rows[0]["judge"], evidence, args.reference),
                   args.section)


if __name__ == "__main__":
    main()
