"""What DIVA's verifier thresholds would do to its answers, from stored runs and without an LM call.

    python -m bench.quality.diva_thresholds --diva RUN --rac RUN --closed RUN [--compare RUN ...] [--first N] \\
        [--results docs/RESULTS.md --section NAME]

DIVA answers with RAC over its diversified passages unless every pseudo-interpretation's P(Yes) is below the
PartialUseful threshold; then it answers closed-book (Useful and PartialUseful take the same RAC path). Its RAC and
closed-book calls are the prompts of ``diva-no-adapt`` (always RAC on the same passages) and ``closed-book``, so at
any threshold DIVA's answer to a question is one of those two runs' answers, chosen by the P(Yes) the DIVA run
stored. Each row is one PartialUseful threshold: the grades, the share answered from retrieval, the dataset's
default metrics, and the paired-bootstrap difference to the first ``--compare`` run (e.g. VanillaRAG). The last
row, "best of both", takes per question whichever of the two answers scores higher (on ASQA, D-F1 + ROUGE-L): what
an oracle choosing per question would get (not a bound on ASQA's corpus DR, which multiplies two means). A row above
0.5 is DIVA with its Useful threshold equal to the row's PartialUseful one (the path depends on the latter alone). A
sweep over dev questions describes the thresholds; choosing one on them would fit the test set, so a threshold to
ship is learned on train questions (``disambig compile diva --tune-knobs``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import Script, difference_cell, params, raw_rows, run_label, score_rows
from bench.harness.runs import by_id, first_ids, questions

SCRIPT = Script.of(__file__)
GRID = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)
PARTS = {"dr": ("d-f1", "rouge-l")}
"""A corpus metric's per-question parts (DR = sqrt(mean D-F1 x mean ROUGE-L))."""


def answered(run: Path, keep: set[str] | None) -> dict[str, dict]:
    """The run's rows with a prediction, by question id (only ``keep``'s ids when given)."""
    return {str(r["id"]): r for r in raw_rows(run) if r.get("prediction") is not None
            and (keep is None or str(r["id"]) in keep)}


def compose(diva: dict[str, dict], rac: dict[str, dict], closed: dict[str, dict],
            partial: float) -> tuple[list[dict], dict[str, int]]:
    """The rows DIVA would give with this PartialUseful threshold (Useful at or above it), and its grade counts."""
    from disambig.programs.diva.diversify import grade

    rows, counts = [], {"Useful": 0, "PartialUseful": 0, "Useless": 0}
    for qid in sorted(set(diva) & set(rac) & set(closed)):
        verdict = grade(diva[qid]["trace"]["notes"].get("yes_probabilities") or [], max(0.5, partial), partial)
        counts[verdict] += 1
        rows.append(closed[qid] if verdict == "Useless" else rac[qid])
    return rows, counts


def best_of_both(rac: dict[str, dict], closed: dict[str, dict], ids: list[str], dataset: str,
                 primary: str) -> list[dict]:
    """Per question, whichever of the RAC and closed-book answers scores higher (RAC on a tie): on the primary metric,
    or for ASQA's corpus DR on the sum of its two parts, D-F1 and ROUGE-L."""
    parts = PARTS.get(primary, (primary,))
    rac_scores = by_id(score_rows([rac[q] for q in ids], dataset).per_question)
    closed_scores = by_id(score_rows([closed[q] for q in ids], dataset).per_question)

    def value(scores: dict[str, float]) -> float:
        return sum(scores.get(part, 0.0) for part in parts)

    return [closed[q] if value(closed_scores[q]) > value(rac_scores[q]) else rac[q] for q in ids]


def main() -> None:
    from disambig.metrics.defaults import PRIMARY_METRICS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diva", type=Path, required=True, help="an uncompiled DIVA run (its stored P(Yes))")
    parser.add_argument("--rac", type=Path, required=True, help="a diva-no-adapt run on the same questions")
    parser.add_argument("--closed", type=Path, required=True, help="a closed-book run on the same questions")
    parser.add_argument("--compare", type=Path, nargs="*", default=[], help="other runs, one row each; the first is "
                        "the reference of the Δ column")
    parser.add_argument("--first", type=int, default=None, help="only the split's first N questions")
    SCRIPT.add_section_options(parser)
    args = parser.parse_args()
    dataset = params(args.diva)["dataset"]
    keep = first_ids(params(args.diva), args.first) if args.first else None
    diva, rac, closed = (answered(run, keep) for run in (args.diva, args.rac, args.closed))
    ids = sorted(set(diva) & set(rac) & set(closed))
    primary = PRIMARY_METRICS[questions(dataset)[1]]
    compared = [(run_label(run), score_rows([r for q, r in answered(run, set(ids)).items()], dataset))
                for run in args.compare]
    reference = by_id(compared[0][1].per_question) if compared else None
    lines, names = [], []

    def line(label: str, grades: str, share: str, result: object) -> str:
        nonlocal names
        names = names or list(result.metrics)
        scores = by_id(result.per_question)
        delta = "reference" if compared and result is compared[0][1] else difference_cell(scores, reference, primary)
        return (f"| {label} | {len(scores)} | {grades} | {share} | "
                + " | ".join(f"{result.metrics[n]:.3f}" for n in names) + f" | {delta} |")

    for partial in GRID:
        rows, counts = compose(diva, rac, closed, partial)
        share = (counts["Useful"] + counts["PartialUseful"]) / max(1, len(rows))
        lines.append(line(f"{partial:.2f}", f"{counts['Useful']}/{counts['PartialUseful']}/{counts['Useless']}",
                          f"{share:.0%}", score_rows(rows, dataset)))
    lines.append(line("best of both", "–", "–", score_rows(best_of_both(rac, closed, ids, dataset, primary), dataset)))
    lines += [line(f"`{label}`", "–", "–", result) for label, result in compared]
    reference_name = compared[0][0] if compared else "–"
    head = ("| PartialUseful threshold | n | grades U/P/L | from retrieval | " + " | ".join(names)
            + f" | Δ {primary} vs {reference_name} [95% CI] |\n|" + "---|" * (5 + len(names)))
    command = SCRIPT.command(["--diva", str(args.diva), "--rac", str(args.rac), "--closed", str(args.closed),
                              *(["--compare", *map(str, args.compare)] if args.compare else []),
                              *(["--first", str(args.first)] if args.first else [])])
    body = (f"Generated by `{command}` from the stored answers (no LM call): DIVA composed of "
            f"`{run_label(args.rac)}`'s and `{run_label(args.closed)}`'s answers by `{run_label(args.diva)}`'s "
            f"stored P(Yes).\n\n"
            + "\n".join([head, *lines]))
    SCRIPT.section(args.results, body, args.section)


if __name__ == "__main__":
    main()
