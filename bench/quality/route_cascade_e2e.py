"""The route cascade end to end against its own first stage, paired within one run.

    python -m bench.quality.route_cascade_e2e --run bench/results/route/asqa-dev/route-e2e-asqa-cascade --dataset asqa \
        --metric dr [--stored bench/results/route/asqa-dev/adf] [--results docs/RESULTS.md --section NAME]

``--run`` is a ``disambig eval route --artifact CASCADE.json`` folder. Each of its rows holds the answer the cascade
returned and, when it escalated, the first candidate's answer in the trace (``notes.cascade_first``); on the other
rows the returned answer *is* the first candidate's. So the first candidate's answers to the same questions, from the
same code in the same run, are known without another LM call, and the table compares the cascade with them (95%
paired-bootstrap interval, "tie" where it spans 0). ``--stored`` adds a separate run of a candidate (e.g. the
escalation target answering every question) on the questions both hold; ``--split-at N`` the cascade against its
first stage on the run's first N questions and on the rest (e.g. questions a policy was already reported on, and new
ones).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.quality.route_table import load_rows, write_section


def cascade_of(row: dict) -> dict:
    """The row's cascade decision (``first``, ``escalate``, ``escalated``, ...), or {} for a failed question."""
    notes = (row.get("trace") or {}).get("notes") or {}
    return (notes.get("route") or {}).get("cascade") or {}


def first_stage(row: dict) -> dict:
    """The row as the first candidate alone would have written it: its answer and its share of the cost."""
    notes = (row.get("trace") or {}).get("notes") or {}
    dropped = notes.get("cascade_first")
    if not cascade_of(row).get("escalated") or dropped is None:
        return row
    prediction = {"long_answer": dropped.get("long_answer", ""),
                  "interpretations": list(dropped.get("interpretations") or [])}
    trace = {k: dropped.get(k, 0) for k in ("lm_calls", "input_tokens", "output_tokens")}
    return {**row, "prediction": prediction, "trace": trace}


def scorer(dataset: str, metric: str):
    """A function giving each question's scores (``metric`` and its inputs) of a set of rows (a failed row scores as
    an empty answer); the questions and the metrics are loaded once."""
    from disambig.cli.score_cmd import build_metrics, flatten_result, load_questions
    from disambig.evaluation.scoring import score_predictions

    examples, kind = load_questions(dataset)
    metrics = build_metrics([metric], kind, None, None)

    def score(rows: dict[str, dict]) -> dict[str, dict[str, float]]:
        result = score_predictions([flatten_result(r) for r in rows.values()], examples, metrics)
        return {str(q["id"]): q["scores"] for q in result.per_question}

    return score


def value(metric: str, scores: dict[str, dict[str, float]], ids: list[str] | None = None) -> float:
    """The corpus-level ``metric`` over the questions ``ids`` (default all) from their per-question scores."""
    from disambig.optimizers.route_eval import corpus_score
    from disambig.optimizers.route_labels import Outcome

    return corpus_score(metric, [Outcome(scores[i], 0) for i in (scores if ids is None else ids)])


def per_question(rows: dict[str, dict], key: str) -> float:
    return sum(float((r.get("trace") or {}).get(key, 0) or 0) for r in rows.values()) / max(len(rows), 1)


def parts(ids: list[str], split_at: int) -> list[tuple[str, list[str]]]:
    """The run's questions before and from ``split_at`` (in the run's order, the split's), labelled; none for 0."""
    if not 0 < split_at < len(ids):
        return []
    return [(f"questions 1-{split_at}", ids[:split_at]), (f"questions {split_at + 1}-{len(ids)}", ids[split_at:])]


def compare(run: Path, dataset: str, metric: str, stored: list[Path], split_at: int = 0) -> str:
    """The markdown table of the cascade against its first stage (and any stored runs), with its notes."""
    from bench.quality.rescore import difference_cell

    final = load_rows(run)
    if not final:
        raise SystemExit(f"{run} holds no answered question")
    decided = [cascade_of(r) for r in final.values() if cascade_of(r)]
    if not decided:
        raise SystemExit(f"{run} is not a route cascade run (no trace note route.cascade); pass the cascade's run")
    first_name, escalate_name = decided[0].get("first", "first"), decided[0].get("escalate", "escalation")
    first = {i: first_stage(r) for i, r in final.items()}
    score = scorer(dataset, metric)
    reference, cascade = score(first), score(final)
    rows = [(f"{first_name} (the cascade's first stage)", first, reference, "reference"),
            ("route cascade", final, cascade, None)]
    for folder in stored:
        other = {i: r for i, r in load_rows(folder).items() if i in final}
        if other:
            rows.append((f"{folder.name} (separate run, {len(other)} of these questions)", other, score(other), None))
    lines = [f"| answers | {metric} | Δ vs {first_name} [95% CI] | LM calls/q | tokens/q |", "|---|---|---|---|---|"]
    for label, answers, scores, cell in rows:
        if cell is None:
            cell = difference_cell(scores, {i: reference[i] for i in scores}, metric)
        tokens = per_question(answers, "input_tokens") + per_question(answers, "output_tokens")
        lines.append(f"| {label} | {value(metric, scores):.3f} | {cell} | "
                     f"{per_question(answers, 'lm_calls'):.2f} | {tokens:,.0f} |")
    for label, part in parts(list(final), split_at):
        cell = difference_cell({i: cascade[i] for i in part}, {i: reference[i] for i in part}, metric)
        lines.append(f"| route cascade, {label} | {value(metric, cascade, part):.3f} (first stage "
                     f"{value(metric, reference, part):.3f}) | {cell} | "
                     f"{per_question({i: final[i] for i in part}, 'lm_calls'):.2f} | |")
    escalated = sum(bool(c.get("escalated")) for c in decided)
    failed = sum(not r.get("prediction") for r in final.values())
    commits = sorted({str((r.get("code") or {}).get("commit", ""))[:7] for r in final.values()} - {""})
    lines += ["", f"{len(final)} {Path(dataset).stem} questions answered end to end (code {', '.join(commits)}); "
              f"escalated to {escalate_name} on {escalated}; failed {failed}. The first stage's answers are the ones "
              f"the run itself produced before deciding (trace `notes.cascade_first` when it escalated)."]
    return "\n".join(lines)


def main() -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--metric", required=True)
    parser.add_argument("--stored", type=Path, nargs="*", default=[])
    parser.add_argument("--results", type=Path)
    parser.add_argument("--section", default="")
    parser.add_argument("--split-at", type=int, default=0, help="Also compare the questions before and from N.")
    args = parser.parse_args()
    text = compare(args.run, args.dataset, args.metric, args.stored, args.split_at)
    print(text)
    if args.results:
        command = "python -m bench.quality.route_cascade_e2e " + " ".join(sys.argv[1:])
        write_section(args.results, args.section or f"cascade-e2e-{args.dataset}", text, command,
                      script="bench/quality/route_cascade_e2e.py")


if __name__ == "__main__":
    main()
