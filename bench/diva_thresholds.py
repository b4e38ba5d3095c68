"""What DIVA's grade thresholds do to its answers, from stored runs and without an LM call.

DIVA answers with RAC over its diversified passages unless every pseudo-interpretation's P(Yes) is below the
PartialUseful threshold; then it answers closed-book (Useful and PartialUseful take the same RAC path). Its
verification, RAC and closed-book calls are the same prompts as in ``diva-no-adapt`` (always RAC on the same
passages) and ``closed-book``, so for any threshold DIVA's answer to a question is one of theirs:

    python bench/diva_thresholds.py --diva bench/results/qwen/diva-asqa \\
        --rac bench/results/qwen/diva-no-adapt-asqa --closed bench/results/qwen/closed-book-asqa

prints, per PartialUseful threshold, the grade counts, the share of questions answered from retrieval and the
dataset's default metrics (ASQA: STR-EM, ROUGE-L, D-F1, corpus DR) over the questions all three runs answered.
``--compare RUN ...`` adds rows for other runs scored on the same questions, and every row gets the 95%
paired-bootstrap interval of its primary-metric difference to the first of them (e.g. VanillaRAG).
``--check RUN`` compares a real DIVA run with those thresholds (a calibrated artifact's) against the composed
answers: greedy decoding can still differ where the KV-cache reuse split a prefill differently.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

GRID = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 1.01)


def rows(run: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text(encoding="utf-8").splitlines())
            if r.get("prediction") is not None}


def compose(diva: dict[str, dict], rac: dict[str, dict], closed: dict[str, dict], useful: float,
            partial: float) -> tuple[list[dict], dict[str, int]]:
    """The prediction rows DIVA would give at these thresholds, and its grade counts."""
    from disambig.cli.score_cmd import flatten_result
    from disambig.programs.diversify import grade

    out, counts = [], {"Useful": 0, "PartialUseful": 0, "Useless": 0}
    for qid, row in diva.items():
        if qid not in rac or qid not in closed:
            continue
        probabilities = row["trace"]["notes"].get("yes_probabilities") or []
        verdict = grade(probabilities, useful, partial)
        counts[verdict] += 1
        out.append(flatten_result(closed[qid] if verdict == "Useless" else rac[qid]))
    return out, counts


PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}


def score(predictions: list[dict], dataset: str) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The corpus metrics of ``predictions`` and each question's scores by id."""
    from disambig.cli.score_cmd import build_metrics, load_questions
    from disambig.evaluation.scoring import score_predictions

    examples, kind = load_questions(dataset)
    result = score_predictions(predictions, examples, build_metrics([], kind, None, None))
    return result.metrics, {q["id"]: q["scores"] for q in result.per_question}


def kind_of(dataset: str) -> str:
    """The dataset's kind (asqa or ambignq) as the scorer reads it."""
    from disambig.cli.score_cmd import load_questions

    return load_questions(dataset)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diva", type=Path, required=True, help="an uncompiled DIVA run (its stored P(Yes))")
    parser.add_argument("--rac", type=Path, required=True, help="a diva-no-adapt run on the same questions")
    parser.add_argument("--closed", type=Path, required=True, help="a closed-book run on the same questions")
    parser.add_argument("--useful", type=float, default=0.5, help="the Useful threshold (it does not change paths)")
    parser.add_argument("--compare", type=Path, nargs="*", default=[],
                        help="other runs scored on the same questions (e.g. vanilla-rag), one row each")
    parser.add_argument("--check", type=Path, help="a DIVA run made with --useful/--partial given here")
    parser.add_argument("--partial", type=float, default=None, help="with --check: its PartialUseful threshold")
    args = parser.parse_args()
    if args.check and args.partial is None:
        parser.error("--check needs the --partial threshold that run was made with")
    dataset = json.loads((args.diva / "params.json").read_text(encoding="utf-8"))["dataset"]
    diva, rac, closed = rows(args.diva), rows(args.rac), rows(args.closed)
    from disambig.cli.score_cmd import flatten_result

    ids = {qid for qid in diva if qid in rac and qid in closed}
    compared = {run.name: score([flatten_result(r) for qid, r in rows(run).items() if qid in ids], dataset)
                for run in args.compare}
    reference = next(iter(compared), None)
    primary = PRIMARY[kind_of(dataset)]
    lines, names = [], None

    def cell(per_question: dict[str, dict[str, float]]) -> str:
        from rescore import difference_cell

        return "" if reference is None else f" {difference_cell(per_question, compared[reference][1], primary)} |"

    for partial in GRID:
        # Useful also takes the RAC path: keep it at or above the row's threshold, so a row is "RAC iff some
        # P(Yes) reaches it"
        predictions, counts = compose(diva, rac, closed, max(args.useful, partial), partial)
        metrics, per_question = score(predictions, dataset)
        names = names or list(metrics)
        answered = (counts["Useful"] + counts["PartialUseful"]) / max(1, len(predictions))
        lines.append(f"| {partial:.2f} | {len(predictions)} | {counts['Useful']}/{counts['PartialUseful']}/"
                     f"{counts['Useless']} | {answered:.0%} | " + " | ".join(f"{metrics[n]:.3f}" for n in names) +
                     " |" + cell(per_question))
    extra = f" Δ {primary} vs {reference} [95% CI] |" if reference else ""
    print("| PartialUseful threshold | n | grades U/P/L | from retrieval | " + " | ".join(names or []) + " |" + extra)
    print("|" + "---|" * (4 + len(names or []) + bool(reference)))
    print("\n".join(lines))
    for label, (metrics, per_question) in compared.items():
        cells = " | ".join(f"{metrics[n]:.3f}" for n in names or [])
        print(f"| {label} | {len(per_question)} | – | – | {cells} |" + cell(per_question))
    if args.check:
        actual = rows(args.check)
        predictions, _ = compose(diva, rac, closed, args.useful, args.partial)
        same = sum(p["long_answer"] == actual[p["id"]]["prediction"]["long_answer"] for p in predictions
                   if p["id"] in actual)
        print(f"\n{same} of {sum(p['id'] in actual for p in predictions)} composed answers equal {args.check}'s")


if __name__ == "__main__":
    main()
