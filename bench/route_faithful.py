"""Is composing stored answers faithful to running ``route``? An end-to-end run against its composition.

    python bench/route_faithful.py --run bench/results/route/asqa-dev/route-e2e-asqa-l0 --dataset asqa \
        --runs bench/results/route --metric dr [--results docs/RESULTS.md --section faithful-asqa]

``--run`` is a ``disambig eval route --artifact ...`` folder. For each question it answered, the composed answer is
the stored answer of the candidate the run chose (``RUNS/DATASET-dev/PROGRAM``). The table counts the questions
whose long answer and interpretations are identical, and compares the primary metric of the two with its 95%
paired-bootstrap interval ("tie" where it spans 0).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from route_table import load_rows, write_section


def same_answer(a: dict, b: dict) -> bool:
    """Whether two predictions carry the same long answer and the same interpretations (questions and answers)."""
    def readings(p: dict) -> list[tuple[str, str]]:
        return [(str(r.get("question")), str(r.get("answer"))) for r in p.get("interpretations") or []]

    return a.get("long_answer") == b.get("long_answer") and readings(a) == readings(b)


def compare(run: Path, runs: Path, dataset: str, metric: str) -> str:
    """The markdown table of the end-to-end run against its composition, and its notes."""
    from disambig.evaluation.paired import format_difference, paired_difference, statistic_for
    from disambig.optimizers.route_eval import corpus_score
    from disambig.optimizers.route_labels import Outcome

    e2e = load_rows(run)
    chosen = {i: row["prediction"].get("program") or "" for i, row in e2e.items()}
    stored = {p: load_rows(runs / f"{dataset}-dev" / p) for p in set(chosen.values()) if p}
    ids = [i for i in e2e if not chosen[i] or i in stored[chosen[i]]]
    if not ids:
        raise SystemExit(f"no question of {run} has a stored answer of its chosen candidate under {runs}")
    composed = {i: stored[chosen[i]][i] if chosen[i] else {"scores": {}, "prediction": {}, "trace": {}} for i in ids}
    names, statistic = statistic_for(metric, e2e[ids[0]]["scores"])

    def arrays(rows: dict[str, dict]) -> list[list[float]]:
        return [[float(rows[i]["scores"].get(n, 0.0)) for i in ids] for n in names]

    def calls(rows: dict[str, dict]) -> float:
        return sum(float((rows[i].get("trace") or {}).get("lm_calls", 0)) for i in ids) / len(ids)

    identical = sum(same_answer(e2e[i]["prediction"], composed[i]["prediction"]) for i in ids)
    diff = format_difference(paired_difference(arrays(e2e), arrays(composed), statistic))
    commits = sorted({str((e2e[i].get("code") or {}).get("commit", ""))[:7] for i in ids})
    lines = [f"| answers | {metric} | Δ vs composed [95% CI] | LM calls/q |", "|---|---|---|---|"]
    for label, rows, cell in (("route, end to end", e2e, diff), ("composed from stored candidate runs", composed,
                                                                  "reference")):
        value = corpus_score(metric, [Outcome(rows[i]["scores"], 0) for i in ids])
        lines.append(f"| {label} | {value:.3f} | {cell} | {calls(rows):.2f} |")
    mix = {p or "(no answer)": list(chosen[i] for i in ids).count(p) for p in sorted(set(chosen[i] for i in ids))}
    lines += ["", f"{len(ids)} dev questions answered end to end (code {', '.join(commits)}); chosen: {mix}; "
              f"identical long answer and interpretations on {identical} of {len(ids)}."]
    return "\n".join(lines)


def main() -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--runs", type=Path, default=Path("bench/results/route"))
    parser.add_argument("--metric", required=True)
    parser.add_argument("--results", type=Path)
    parser.add_argument("--section", default="")
    args = parser.parse_args()
    text = compare(args.run, args.runs, args.dataset, args.metric)
    print(text)
    if args.results:
        command = "python bench/route_faithful.py " + " ".join(sys.argv[1:])
        write_section(args.results, args.section or f"faithful-{args.dataset}", text, command,
                      script="bench/route_faithful.py")


if __name__ == "__main__":
    main()
