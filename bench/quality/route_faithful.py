"""Is composing stored answers faithful to running ``route``? An end-to-end run against its composition.

    python -m bench.quality.route_faithful --run bench/results/route/asqa-dev/route-e2e-asqa-l0 --dataset asqa \
        --decisions bench/results/route/asqa-dev-decisions-asqa-l0.jsonl --runs bench/results/route --metric dr \
        [--results docs/RESULTS.md --section faithful-asqa]

``--run`` is a ``disambig eval route --artifact ...`` folder, ``--decisions`` what ``disambig route predict`` wrote
for the same artifact. For each question the run holds, the composed answer is the stored answer of the candidate
the decisions name (``RUNS/DATASET-dev/PROGRAM``); a question the run failed counts as a failure (its stored empty
scores). The table counts the questions where the run chose as predicted and where its long answer and
interpretations are identical, and compares the primary metric of the two with its 95% paired-bootstrap interval
("tie" where it spans 0).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.quality.route_table import load_rows, write_section


def same_answer(a: dict, b: dict) -> bool:
    """Whether two predictions carry the same long answer and the same interpretations (questions and answers)."""
    def readings(p: dict) -> list[tuple[str, str]]:
        return [(str(r.get("question")), str(r.get("answer"))) for r in p.get("interpretations") or []]

    return a.get("long_answer") == b.get("long_answer") and readings(a) == readings(b)


def cut_short(a: dict, b: dict) -> bool:
    """Whether ``a`` has ``b``'s interpretations and a long answer that is a shorter prefix of ``b``'s (a reply the
    engine now ends at its last whole sentence where the stored one ran on to the token cap)."""
    long_a, long_b = a.get("long_answer") or "", b.get("long_answer") or ""
    return (bool(long_a.strip()) and same_answer({**a, "long_answer": ""}, {**b, "long_answer": ""})
            and len(long_a) < len(long_b)
            and long_b.startswith(long_a.rstrip()))


def compare(run: Path, runs: Path, dataset: str, metric: str, decisions: dict[str, str]) -> str:
    """The markdown table of the end-to-end run against its composition, and its notes."""
    from bench.quality.rescore import difference_cell
    from disambig.optimizers.route_eval import corpus_score
    from disambig.optimizers.route_labels import Outcome

    e2e = load_rows(run)
    unknown = sorted(set(e2e) - set(decisions))
    if unknown:
        raise SystemExit(f"{len(unknown)} questions of {run} have no decision (e.g. {unknown[0]}); predict them")
    chosen = {i: decisions[i] for i in e2e}
    failed = sum(not row.get("prediction") for row in e2e.values())
    agreed = sum((row.get("prediction") or {}).get("program", "") == chosen[i] for i, row in e2e.items())
    stored = {p: load_rows(runs / f"{dataset}-dev" / p) for p in set(chosen.values()) if p}
    ids = [i for i in e2e if not chosen[i] or i in stored[chosen[i]]]
    if not ids:
        raise SystemExit(f"no question of {run} has a stored answer of its chosen candidate under {runs}")
    composed = {i: stored[chosen[i]][i] if chosen[i] else {"scores": {}, "prediction": {}, "trace": {}} for i in ids}
    def calls(rows: dict[str, dict]) -> float:
        return sum(float((rows[i].get("trace") or {}).get("lm_calls", 0)) for i in ids) / len(ids)

    identical = sum(same_answer(e2e[i].get("prediction") or {}, composed[i]["prediction"]) for i in ids)
    shorter = sum(cut_short(e2e[i].get("prediction") or {}, composed[i]["prediction"]) for i in ids)
    diff = difference_cell({i: e2e[i]["scores"] for i in ids}, {i: composed[i]["scores"] for i in ids}, metric)
    commits = sorted({str((e2e[i].get("code") or {}).get("commit", ""))[:7] for i in ids})
    lines = [f"| answers | {metric} | Δ vs composed [95% CI] | LM calls/q |", "|---|---|---|---|"]
    for label, rows, cell in (("route, end to end", e2e, diff), ("composed from stored candidate runs", composed,
                                                                  "reference")):
        value = corpus_score(metric, [Outcome(rows[i]["scores"], 0) for i in ids])
        lines.append(f"| {label} | {value:.3f} | {cell} | {calls(rows):.2f} |")
    mix = {p or "(no answer)": list(chosen[i] for i in ids).count(p) for p in sorted(set(chosen[i] for i in ids))}
    lines += ["", f"{len(ids)} dev questions answered end to end (code {', '.join(commits)}); chosen: {mix}; "
              f"the run chose the predicted candidate on {agreed} and failed {failed}; identical long answer and "
              f"interpretations on {identical} of {len(ids)}, the same interpretations with the long answer a "
              f"shorter prefix of the stored one on {shorter}."]
    return "\n".join(lines)


def main() -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--runs", type=Path, default=Path("bench/results/route"))
    parser.add_argument("--metric", required=True)
    parser.add_argument("--decisions", type=Path, required=True)
    parser.add_argument("--results", type=Path)
    parser.add_argument("--section", default="")
    args = parser.parse_args()
    lines = args.decisions.read_text(encoding="utf-8").splitlines()
    decisions = {d["id"]: d["program"] or "" for d in map(json.loads, filter(None, lines))}
    text = compare(args.run, args.runs, args.dataset, args.metric, decisions)
    print(text)
    if args.results:
        command = "python -m bench.quality.route_faithful " + " ".join(sys.argv[1:])
        write_section(args.results, args.section or f"faithful-{args.dataset}", text, command,
                      script="bench/quality/route_faithful.py")


if __name__ == "__main__":
    main()
