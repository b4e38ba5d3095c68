"""Re-score stored per-question results with today's metrics: no LM call, only ``disambig score``'s engine.

    python -m bench.quality.rescore                                   # print the tables
    python -m bench.quality.rescore --results docs/RESULTS.md   # also write them into that file's generated section

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
import json
from pathlib import Path

BEGIN, END = "<!-- bench/quality/rescore.py:begin -->", "<!-- bench/quality/rescore.py:end -->"
COSTS = {"lm_calls_per_q": "LM calls/q", "tokens_per_q": "tokens/q", "latency_p50_s": "p50 s",
         "latency_p95_s": "p95 s", "latency_p99_s": "p99 s"}
EXTRA = {"asqa": ["adf-rouge-l", "answer-f1"], "ambignq": ["answer-f1"]}
RETRIEVAL_EXTRA = {"asqa": ["ndcg@5", "recall@5", "adf-ndcg@5", "adf-recall@5"]}  # against the evidence passages
PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}
REFERENCE = "vanilla-rag"
DELTA_NOTE = ("Δ: the row's primary metric minus the reference run's, on the question ids both runs hold (\"on N\" "
              "when fewer than the row's; a failed question counts as its empty answer), with its 95% paired-bootstrap "
              "interval (questions resampled together; scipy, percentile, 9,999 resamples, fixed seed); \"tie\" when "
              "the interval spans 0.")


def rescore(run: Path, first: int | None = None) -> dict:
    """``{program, dataset, questions, failures, code, metrics, cost, params, primary, per_question}`` for one run
    folder (``per_question``: each question's scores by id; ``primary``: the dataset's primary metric, or None);
    with ``first``, only its answers to the first ``first`` questions of the run's split (to compare runs of
    different lengths)."""
    from disambig.cli.score_cmd import build_metrics, flatten_result, load_questions
    from disambig.evaluation.scoring import score_predictions

    params = json.loads((run / "params.json").read_text(encoding="utf-8"))
    raw = raw_rows(run, first_ids(params, first) if first else None)
    rows = [flatten_result(r) for r in raw]
    examples, kind = load_questions(params["dataset"])
    retrieved = any(r.get("passages") for r in rows)
    metrics = build_metrics([], kind, None, None)
    extra = EXTRA.get(kind, []) + (["mrecall@5", *RETRIEVAL_EXTRA.get(kind, [])] if retrieved else [])
    metrics |= build_metrics(extra, kind, None, None)
    result = score_predictions(rows, examples, metrics)
    code = answers_code(params, raw)
    grades = [((r.get("trace") or {}).get("notes") or {}).get("grade") for r in raw]
    readings = [len((r.get("prediction") or {}).get("interpretations") or []) for r in raw]
    cost = row_costs(raw)
    label = run_label(run)
    return {"program": label, "lm": params.get("lm_model") or params.get("lm", ""), "grades": grade_counts(grades),
            "readings_per_q": sum(readings) / len(readings) if readings else 0.0, "dataset": params["dataset"],
            "cost": cost, "questions": result.questions,
            "failures": sum(r.get("error") is not None for r in raw), "code": code, "metrics": result.metrics,
            "params": params, "primary": PRIMARY.get(kind),
            "per_question": {q["id"]: q["scores"] for q in result.per_question}}


def raw_rows(run: Path, keep: set[str] | None = None) -> list[dict]:
    """The rows of a run folder's ``results.jsonl`` as written (traces and code stamps included), those in
    ``keep`` only when given."""
    from disambig.data.jsonl import read_jsonl

    return [row for _, row in read_jsonl(run / "results.jsonl") if keep is None or str(row.get("id")) in keep]


def row_costs(raw: list[dict]) -> dict[str, float]:
    """LM calls, tokens and latency per question from the rows' traces, so a partial run has costs too."""
    from disambig.evaluation.report import efficiency

    return efficiency([r.get("trace") or {} for r in raw],
                      failures_without_trace=sum(r.get("error") is not None and not r.get("trace") for r in raw))


def answers_code(params: dict, raw: list[dict]) -> str:
    """The code that produced the answers: the rows' distinct stamps, else the commit ``params`` recorded when the
    folder was claimed (``code.commit``; ``commit`` in older folders)."""
    from disambig.evaluation.code_version import describe

    stamps = sorted({describe(r.get("code") or {}) for r in raw})
    if stamps != ["unknown code"]:
        return "; ".join(stamps)
    return params.get("commit") or (params.get("code") or {}).get("commit") or "?"


def first_ids(params: dict, n: int) -> set[str]:
    """Ids of the first ``n`` questions of the split a run folder's ``params`` name."""
    from disambig.data import load_dataset

    return {str(ex.id) for ex in load_dataset(params["dataset"], split=params.get("split", "dev"), limit=n)}


def run_label(run: Path) -> str:
    """The run folder's name without its dataset (``diva-calibrated-asqa`` -> ``diva-calibrated``)."""
    params = json.loads((run / "params.json").read_text(encoding="utf-8"))
    return run.name.removesuffix(f"-{Path(params['dataset']).stem}")


def grade_counts(grades: list[str | None]) -> str:
    """DIVA's retrieval grades as ``Useful/PartialUseful/Useless`` counts, or "–" for a program without them."""
    if not any(grades):
        return "–"
    return "/".join(str(grades.count(g)) for g in ("Useful", "PartialUseful", "Useless"))


def reference_of(row: dict, rows: list[dict]) -> dict | None:
    """The uncompiled ``vanilla-rag`` run among ``rows`` with ``row``'s dataset and LM spec; where there are several,
    the one with ``row``'s retriever; None when there is none (or no single one)."""
    params = row.get("params") or {}

    def same(other: dict, key: str) -> bool:
        return (other.get("params") or {}).get(key) == params.get(key)

    found = [r for r in rows if (r.get("params") or {}).get("program") == REFERENCE
             and not r["params"].get("artifact") and same(r, "dataset") and same(r, "lm")]
    if len(found) > 1:
        found = [r for r in found if same(r, "retriever")]
    return found[0] if len(found) == 1 else None


def difference_cell(scores: dict[str, dict[str, float]], reference: dict[str, dict[str, float]] | None,
                    metric: str | None, higher_is_better: bool = True, digits: int = 3, scale: float = 1.0) -> str:
    """The Δ column's cell: "reference" for the reference's own scores, "–" without a reference or metric, else the
    paired-bootstrap difference on the shared questions (``scores``: each question's scores by question id)."""
    from disambig.evaluation.paired import format_difference, paired_difference, paired_scores, statistic_for

    if reference is None or metric is None:
        return "–"
    if reference is scores:
        return "reference"
    names, statistic = statistic_for(metric, {name for s in scores.values() for name in s})
    result = paired_difference(*paired_scores(scores, reference, names), statistic, higher_is_better=higher_is_better)
    cell = format_difference(result, digits, scale)
    return cell if result.n == len(scores) else f"{cell} on {result.n}"


def delta_head(metrics: list[str], reference: str = REFERENCE) -> str:
    """The Δ column's header, naming the primary metric(s) and the reference."""
    return f"Δ {' / '.join(dict.fromkeys(metrics)) or 'primary'} vs {reference} [95% CI]"


def table(rows: list[dict]) -> str:
    names = list(dict.fromkeys(name for r in rows for name in r["metrics"]))
    delta = delta_head([r["primary"] for r in rows if r.get("primary")])
    head = ["program", "LM", "n", "fail", *names, delta, "readings/q", "grades U/P/L", *COSTS.values(),
            "answers made by"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["program"], r["lm"], str(r["questions"]), str(r["failures"])]
        cells += [f"{r['metrics'][n]:.3f}" if n in r["metrics"] else "–" for n in names]
        reference = reference_of(r, rows)
        cells += [difference_cell(r.get("per_question", {}), reference and reference.get("per_question"),
                                  r.get("primary"))]
        cells += [f"{r.get('readings_per_q', 0.0):.1f}", r.get("grades", "–")]
        cells += [f"{r['cost'][c]:.1f}" if c in r.get("cost", {}) else "–" for c in COSTS]
        lines.append("| " + " | ".join([*cells, f"`{r['code']}`"]) + " |")
    return "\n".join(lines)


def markers(name: str, script: str = "bench/quality/rescore.py") -> tuple[str, str]:
    """The begin/end markers of a section ``script`` generates (rescore's ``suite`` is the original, unnamed one)."""
    if name == "suite" and script == "bench/quality/rescore.py":
        return BEGIN, END
    return f"<!-- {script}:{name}:begin -->", f"<!-- {script}:{name}:end -->"


def section(runs: str, by_dataset: dict[str, list[dict]], name: str = "suite") -> str:
    begin, end = markers(name)
    parts = [begin, f"Generated by `python -m bench.quality.rescore --runs {runs}` from the stored answers (no LM "
             "call). "
             f"{DELTA_NOTE} Reference: the uncompiled `{REFERENCE}` run with the row's dataset and LM (and its "
             "retriever where the table holds several); primary metric: ASQA's corpus `dr` (the bootstrap "
             "recomputes it from each resample's mean D-F1 and ROUGE-L), AmbigNQ's `ambigqa-f1`.", ""]
    for dataset, rows in by_dataset.items():
        parts += [f"### {dataset}, re-scored", "", table(rows), ""]
    return "\n".join([*parts, end])


def replace_section(path: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Put ``text`` (which starts with ``begin`` and ends with ``end``) in place of the marked section of
    ``path``, appended at the end the first time."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin not in old or end not in old:
        path.write_text(f"{old.rstrip()}\n\n{text}\n", encoding="utf-8")
        return
    head, _, rest = old.partition(begin)
    path.write_text(head + text + rest.partition(end)[2], encoding="utf-8")


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
    args = parser.parse_args()
    by_dataset: dict[str, list[dict]] = {}
    for run in sorted(p.parent for runs in args.runs for p in runs.glob("*/results.jsonl")):
        if args.only and run_label(run) not in args.only:
            continue
        if args.datasets and Path(json.loads((run / "params.json").read_text())["dataset"]).stem not in args.datasets:
            continue
        row = rescore(run, args.first)
        by_dataset.setdefault(row["dataset"], []).append(row)
    only = (f" --datasets {' '.join(args.datasets)}" if args.datasets else "") + (
        f" --only {' '.join(args.only)}" if args.only else "") + (f" --first {args.first}" if args.first else "")
    text = section(" ".join(str(r) for r in args.runs) + only, by_dataset, args.section)
    print(text)
    if args.results is not None:
        replace_section(args.results, text, *markers(args.section))


if __name__ == "__main__":
    main()
