"""Does any routing feature tell, before answering, which of two candidates will score better on a question?

    python -m bench.quality.route_signal --dataset asqa --metric dr --candidates vanilla-rag adf \
        --runs bench/results/route [--train 60 --dev 50] [--results docs/RESULTS.md]

For the train and dev questions whose candidate answers are stored in ``RUNS/DATASET-SPLIT/PROGRAM``, each question
is labelled by the candidate with the better utility (``compile route``'s labels, ties to the cheaper), and each of
``route``'s named features is scored by its ROC AUC for "the second candidate is better". A feature a router could
use has an AUC away from 0.5 on the same side in both splits. One BM25 and one dense search per question; no LM call.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def feature_aucs(dataset: str, metric: str, candidates: list[str], runs: Path, split: str, limit: int,
                 retriever: object) -> tuple[dict[str, float], int, int]:
    """``{feature: AUC}`` for "the second candidate is better" on ``split``, the positives and the questions."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from disambig.data import load_dataset
    from disambig.optimizers.route_data import matrix, observe_all, read_outcomes, run_folder
    from disambig.optimizers.route_labels import label_questions
    from disambig.programs.route.features import FEATURES
    from disambig.programs.route.policy import answer_action

    examples = load_dataset(dataset, split=split, limit=limit)
    ids = [str(ex.id) for ex in examples]
    outcomes = {}
    for program in candidates:
        stored = read_outcomes(run_folder(runs, dataset, split, program))
        outcomes[answer_action(program)] = {i: stored[i] for i in ids}
    labels, _ = label_questions(outcomes, metric)
    y = np.array([labels[i] == answer_action(candidates[1]) for i in ids])
    if y.all() or not y.any():
        raise SystemExit(f"{split}: one candidate is best on every question; no AUC to compute")
    x = matrix(observe_all([ex.question for ex in examples], retriever), list(FEATURES))
    return {name: float(roc_auc_score(y, x[:, j])) for j, name in enumerate(FEATURES)}, int(y.sum()), len(ids)


def table(dataset: str, metric: str, candidates: list[str], runs: Path, sizes: dict[str, int]) -> str:
    from disambig.retrieval import build_retriever

    retriever = build_retriever("hybrid", corpus="wiki-slice")
    results = {split: feature_aucs(dataset, metric, candidates, runs, split, n, retriever)
               for split, n in sizes.items()}
    head = " | ".join(f"{split} AUC ({pos} of {n} better)" for split, (_, pos, n) in results.items())
    lines = [f"| feature | {head} | same side in every split |", "|---|" + "---|" * (len(results) + 1)]
    features = next(iter(results.values()))[0]
    for name in features:
        values = [aucs[name] for aucs, _, _ in results.values()]
        same = all(v > 0.5 for v in values) or all(v < 0.5 for v in values)
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {'yes' if same else 'no'} |")
    steady = [f for f in features if all(aucs[f] > 0.5 for aucs, _, _ in results.values())
              or all(aucs[f] < 0.5 for aucs, _, _ in results.values())]
    lines += ["", f"Label: {candidates[1]} better than {candidates[0]} on {metric} (utility, ties to the cheaper)."]
    if steady:
        best = max(steady, key=lambda f: min(abs(aucs[f] - 0.5) for aucs, _, _ in results.values()))
        margin = min(abs(aucs[best] - 0.5) for aucs, _, _ in results.values())
        lines[-1] += (f" Strongest feature on the same side in every split: {best} (AUC {0.5 - margin:.2f} or "
                      f"further from 0.5 in each, {0.5 + margin:.2f} mirrored).")
    return "\n".join(lines)


def main() -> None:
    import shlex
    import sys

    from bench.quality.route_table import write_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--metric", required=True)
    parser.add_argument("--candidates", nargs=2, required=True, metavar=("FIRST", "SECOND"))
    parser.add_argument("--runs", type=Path, default=Path("bench/results/route"))
    parser.add_argument("--train", type=int, default=60)
    parser.add_argument("--dev", type=int, default=50)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args()
    text = table(args.dataset, args.metric, args.candidates, args.runs, {"train": args.train, "dev": args.dev})
    print(text)
    if args.results:
        write_section(args.results, f"signal-{args.dataset}", text,
                      "python -m bench.quality.route_signal " + shlex.join(sys.argv[1:]),
                      "bench/quality/route_signal.py")


if __name__ == "__main__":
    main()
