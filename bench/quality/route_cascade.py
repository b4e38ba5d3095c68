"""Can a cascade beat VanillaRAG: answer with it, then escalate to a costlier program when its answer looks weak? And
does any routing feature tell, before answering, which of two candidates will score better on a question?

    python -m bench.quality.route_cascade policies --dataset asqa --metric dr --escalate adf \
        --runs bench/results/route [--train 60 --dev 50] [--results docs/RESULTS.md]
    python -m bench.quality.route_cascade signal --dataset asqa --metric dr --candidates vanilla-rag adf \
        --runs bench/results/route [--train 60 --dev 50] [--results docs/RESULTS.md]

``policies``:

VanillaRAG runs first, so its answer and trace are known when the cascade decides; the answer-side features
(``disambig.programs.route.answer_features``, the ones ``route``'s cascade mode reads) come from its stored row
(``RUNS/DATASET-SPLIT/vanilla-rag``), the retrieval features are ``route``'s 15 (one BM25 and one dense search).
Escalating replaces vanilla's answer with ``--escalate``'s stored one and costs both programs' calls. Each question
is labelled "escalation better" by ``compile route``'s utility (ASQA's DR linearised, ties to the cheaper, i.e. to
vanilla). Three policies are fitted on the train questions only and scored once on dev:

- a single threshold on one feature (feature, side and threshold maximise the train cascade's metric with mean calls
  below the escalation's; "never escalate" is among the choices);
- a logistic regression on the answer-side features, and one on answer-side + retrieval features (standardised;
  C chosen by the cross-validated train cascade metric, escalate when P(better) > 0.5).

With ``--artifact`` (a ``disambig compile route --cascade`` state) the table gains the compiled cascade's row: its
saved model and threshold applied to the dev questions' features.

``signal``: for the train and dev questions whose candidate answers are stored in ``RUNS/DATASET-SPLIT/PROGRAM``,
each question is labelled by the candidate with the better utility (``compile route``'s labels, ties to the cheaper),
and each of ``route``'s named features is scored by its ROC AUC for "the second candidate is better". A feature a
router could use has an AUC away from 0.5 on the same side in both splits.

No LM call: every answer is a stored one (one BM25 and one dense search per question for the retrieval features).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.harness import Script, difference_cell
from bench.harness.runs import corpus_value, row_cost, rows_by_id
from disambig.optimizers.cascade_fit import C_GRID as CS
from disambig.optimizers.cascade_fit import FOLDS, REPEATS, SEED, cascade_folds
from disambig.programs.route.answer_features import ANSWER_FEATURES

SCRIPT = Script.of(__file__)
FIRST = "vanilla-rag"


@dataclass(frozen=True)
class Split:
    """One split's stored answers of the two programs, its labels and its feature matrices."""

    ids: list[str]
    first: dict[str, dict]
    second: dict[str, dict]
    better: np.ndarray  # escalation better than the first program, per question (utility, ties to the first)
    answer_x: np.ndarray
    retrieval_x: np.ndarray

    def cascade(self, escalate: np.ndarray) -> tuple[dict[str, dict], np.ndarray, np.ndarray]:
        """Per-question scores, LM calls and tokens when the questions in ``escalate`` go to the second program."""
        scores, calls, tokens = {}, [], []
        for i, up in zip(self.ids, escalate, strict=True):
            scores[i] = self.second[i]["scores"] if up else self.first[i]["scores"]
            rows = (self.first[i], self.second[i]) if up else (self.first[i],)
            calls.append(sum(row_cost(r)[0] for r in rows))
            tokens.append(sum(row_cost(r)[1] for r in rows))
        return scores, np.array(calls), np.array(tokens)


def load_split(dataset: str, metric: str, second: str, runs: Path, split: str, limit: int, retriever: object
               ) -> Split:
    """The split's first ``limit`` questions that both programs answered, labelled and featurised."""
    from disambig.optimizers.route_data import matrix, observe_all, read_outcomes, run_folder
    from disambig.optimizers.route_labels import label_questions
    from disambig.programs.route.answer_features import Answered
    from disambig.programs.route.features import FEATURES

    first_rows = rows_by_id(run_folder(runs, dataset, split, FIRST))
    second_rows = rows_by_id(run_folder(runs, dataset, split, second))
    ids = [i for i in first_rows if i in second_rows][:limit]
    outcomes = {name: {i: o for i, o in read_outcomes(run_folder(runs, dataset, split, name)).items() if i in ids}
                for name in (FIRST, second)}
    labels, _ = label_questions(outcomes, metric)
    better = np.array([labels[i] == second for i in ids])
    answer_x = np.array([[f(Answered.from_row(first_rows[i])) for f in ANSWER_FEATURES.values()] for i in ids])
    retrieval_x = matrix(observe_all([first_rows[i]["question"] for i in ids], retriever), list(FEATURES))
    return Split(ids, first_rows, second_rows, better, answer_x, retrieval_x)


def cascade_value(split: Split, escalate: np.ndarray, metric: str, rows: np.ndarray | None = None) -> float:
    """The metric of the cascade on ``split`` (or on its questions ``rows``)."""
    scores, _, _ = split.cascade(escalate)
    return corpus_value(metric, scores, [split.ids[k] for k in (range(len(split.ids)) if rows is None else rows)])


def second_calls(split: Split, rows: np.ndarray) -> float:
    return float(np.mean([row_cost(split.second[split.ids[k]])[0] for k in rows]))


def fit_threshold(split: Split, x: np.ndarray, metric: str, rows: np.ndarray) -> tuple[int, float, float]:
    """``(feature column, side, threshold)`` whose rule "escalate when side * x > threshold" maximises the cascade's
    metric on ``rows`` with mean calls below the escalation's (ties: fewer escalations); side 0 never escalates."""
    budget = second_calls(split, rows)
    best, best_key = (0, 0.0, 0.0), (cascade_value(split, np.zeros(len(split.ids), bool), metric, rows), 0)
    for j in range(x.shape[1]):
        for side in (1.0, -1.0):
            values = np.unique(side * x[rows, j])
            for t in (values[:-1] + values[1:]) / 2:
                escalate = side * x[:, j] > t
                mask = np.zeros(len(split.ids), bool)
                mask[rows] = escalate[rows]
                if split.cascade(mask)[1][rows].mean() >= budget:
                    continue
                key = (cascade_value(split, mask, metric, rows), -int(mask.sum()))
                if key > best_key:
                    best, best_key = (j, side, float(t)), key
    return best


def apply_threshold(rule: tuple[int, float, float], x: np.ndarray) -> np.ndarray:
    j, side, t = rule
    return side * x[:, j] > t if side else np.zeros(len(x), bool)


def logistic(c: float) -> object:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000))


def cross_validated(split: Split, metric: str, decide: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
    """Mean over repeats of the train cascade's metric when each fold's decisions come from ``decide(train rows,
    held-out rows)`` fitted without that fold (NaN when the labels are too few to fold)."""
    plan = cascade_folds(split.better)
    if not plan:
        return float("nan")
    per_fold = len(plan) // REPEATS
    values = []
    for r in range(REPEATS):
        escalate = np.zeros(len(split.ids), bool)
        for fit_rows, held in plan[r * per_fold:(r + 1) * per_fold]:
            escalate[held] = decide(fit_rows, held)
        values.append(cascade_value(split, escalate, metric))
    return float(np.mean(values))


def fit_logistic(split: Split, x: np.ndarray, metric: str) -> tuple[object | None, float, float]:
    """The model refitted on all train questions at the C with the best cross-validated cascade metric, that C and
    its cross-validated metric (None when one class is missing)."""
    if split.better.all() or not split.better.any():
        return None, float("nan"), float("nan")

    def decide(c: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        def run(fit_rows: np.ndarray, held: np.ndarray) -> np.ndarray:
            if len(set(split.better[fit_rows])) < 2:
                return np.zeros(len(held), bool)
            return logistic(c).fit(x[fit_rows], split.better[fit_rows]).predict_proba(x[held])[:, 1] > 0.5
        return run

    scored = {c: cross_validated(split, metric, decide(c)) for c in CS}
    c = max(CS, key=lambda value: (scored[value], -value))
    return logistic(c).fit(x, split.better), c, scored[c]


def aucs(train: Split, dev: Split) -> str:
    """Each answer-side feature's ROC AUC for "escalation better" on train and dev."""
    from sklearn.metrics import roc_auc_score

    values = {name: [roc_auc_score(s.better, s.answer_x[:, j]) if 0 < s.better.sum() < len(s.ids) else float("nan")
                     for s in (train, dev)] for j, name in enumerate(ANSWER_FEATURES)}
    counts = {"train": (int(train.better.sum()), len(train.ids)), "dev": (int(dev.better.sum()), len(dev.ids))}
    return "\n".join(auc_table("answer-side feature", "same side in both", counts, values))


def auc_table(first: str, last: str, counts: dict[str, tuple[int, int]], values: dict[str, list[float]]) -> list[str]:
    """Rows of each feature's AUC per split (``counts``: split -> questions where the label holds, questions) and
    whether it lies on the same side of 0.5 in every split."""
    head = " | ".join(f"{split} AUC ({positive} of {n} better)" for split, (positive, n) in counts.items())
    lines = [f"| {first} | {head} | {last} |", "|---|" + "---|" * (len(counts) + 1)]
    for name, found in values.items():
        same = all(v > 0.5 for v in found) or all(v < 0.5 for v in found)
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in found) + f" | {'yes' if same else 'no'} |")
    return lines


def policies(train: Split, dev: Split, metric: str) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    """``(row, train escalations, dev escalations, how it was chosen)`` for each policy fitted on train."""
    everything = np.arange(len(train.ids))
    both_train = np.hstack([train.answer_x, train.retrieval_x])
    both_dev = np.hstack([dev.answer_x, dev.retrieval_x])
    names = [*ANSWER_FEATURES, *feature_names()]
    rule = fit_threshold(train, both_train, metric, everything)
    cv = cross_validated(train, metric, lambda fit_rows, held: apply_threshold(
        fit_threshold(train, both_train, metric, fit_rows), both_train[held]))
    side = {1.0: ">", -1.0: "<"}.get(rule[1])
    shown = f"{names[rule[0]]} {side} {rule[1] * rule[2]:.3g}" if side else "never escalate"
    out = [(f"threshold: {shown}", apply_threshold(rule, both_train), apply_threshold(rule, both_dev),
            f"train CV {cv:.3f} (choice redone per fold)")]
    for label, x_train, x_dev in (("logistic, answer-side", train.answer_x, dev.answer_x),
                                  ("logistic, answer-side + retrieval", both_train, both_dev)):
        model, c, cv = fit_logistic(train, x_train, metric)
        if model is None:
            out.append((label, np.zeros(len(train.ids), bool), np.zeros(len(dev.ids), bool), "one class on train"))
            continue
        out.append((label, model.predict_proba(x_train)[:, 1] > 0.5, model.predict_proba(x_dev)[:, 1] > 0.5,
                    f"C = {c:g}, train CV {cv:.3f}"))
    return out


def feature_names() -> list[str]:
    from disambig.programs.route.features import FEATURES

    return list(FEATURES)


def compiled_row(artifact: Path, train: Split, dev: Split) -> tuple[str, np.ndarray, np.ndarray, str]:
    """The row of a compiled cascade (``disambig compile route --cascade``): its saved model and threshold applied to
    the train and dev features."""
    import json

    from disambig.programs.route.cascade import CascadePolicy
    from disambig.programs.route.program import CASCADE_KEY

    state = json.loads(artifact.read_text(encoding="utf-8"))
    if CASCADE_KEY not in state:
        raise SystemExit(f"{artifact} holds no route cascade; compile one with disambig compile route --cascade")
    policy = CascadePolicy.from_dict(state[CASCADE_KEY])
    label = f"compiled: `{artifact.name}`"
    if policy.model is None:
        up = policy.constant == "escalate"
        return (label, np.full(len(train.ids), up), np.full(len(dev.ids), up), f"constant {policy.constant}")
    names = [*ANSWER_FEATURES, *feature_names()]
    if list(policy.model.features) != names:
        raise SystemExit(f"{artifact} reads features {list(policy.model.features)[:3]}...; this bench computes {names}")
    train_p, dev_p = (policy.model.predict_proba(np.hstack([s.answer_x, s.retrieval_x]))[:, 1] for s in (train, dev))
    return (label, train_p > policy.threshold, dev_p > policy.threshold, f"threshold {policy.threshold:g} (saved)")


def cascade_table(train: Split, dev: Split, metric: str, second: str, artifact: Path | None = None) -> str:
    """The policies' train and dev metric, dev Δ to vanilla with its paired interval, escalations and cost (and the
    compiled ``artifact``'s row when given)."""
    reference = dev.cascade(np.zeros(len(dev.ids), bool))[0]
    rows = [(f"{FIRST} (never escalate)", np.zeros(len(train.ids), bool), np.zeros(len(dev.ids), bool), ""),
            (f"{second} (always)", np.ones(len(train.ids), bool), np.ones(len(dev.ids), bool), ""),
            *policies(train, dev, metric),
            *([compiled_row(artifact, train, dev)] if artifact is not None else []),
            ("oracle cascade (escalate exactly when better)", train.better, dev.better, "")]
    lines = [f"| policy | train {metric} | dev {metric} | dev Δ vs {FIRST} [95% CI] | dev escalated | dev LM calls/q | "
             "dev tokens/q | chosen on train by |", "|---|---|---|---|---|---|---|---|"]
    for label, up_train, up_dev, how in rows:
        scores, calls, tokens = dev.cascade(up_dev)
        cell = "reference" if label.startswith(FIRST) else difference_cell(scores, reference, metric)
        values = f"{cascade_value(train, up_train, metric):.3f} | {cascade_value(dev, up_dev, metric):.3f}"
        lines.append(f"| {label} | {values} | {cell} | {int(up_dev.sum())} of {len(dev.ids)} | {calls.mean():.2f} | "
                     f"{tokens.mean():,.0f} | {how} |")
    return "\n".join(lines)


def report(dataset: str, metric: str, second: str, runs: Path, sizes: dict[str, int], artifact: Path | None = None
           ) -> str:
    from disambig.retrieval import build_retriever

    retriever = build_retriever("hybrid", corpus="wiki-slice")
    train, dev = (load_split(dataset, metric, second, runs, split, n, retriever) for split, n in sizes.items())
    return "\n".join([aucs(train, dev), "", cascade_table(train, dev, metric, second, artifact), "",
                      f"Label: {second} better than {FIRST} on {metric} (utility, ties to the cheaper). The cascade "
                      f"always runs {FIRST} (its calls are in every row) and adds {second}'s calls when it escalates; "
                      f"{second} alone makes {second_calls(dev, np.arange(len(dev.ids))):.2f} calls/q on dev. Train "
                      f"CV: {FOLDS}-fold stratified, {REPEATS} repeats, seed {SEED}."])


def feature_aucs(dataset: str, metric: str, candidates: list[str], runs: Path, split: str, limit: int,
                 retriever: object) -> tuple[dict[str, float], int, int]:
    """``{feature: AUC}`` for "the second candidate is better" on ``split``, the positives and the questions."""
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


def signal(dataset: str, metric: str, candidates: list[str], runs: Path, sizes: dict[str, int]) -> str:
    """Each retrieval feature's AUC for "the second candidate is better" per split, and the strongest steady one."""
    from disambig.retrieval import build_retriever

    retriever = build_retriever("hybrid", corpus="wiki-slice")
    results = {split: feature_aucs(dataset, metric, candidates, runs, split, n, retriever)
               for split, n in sizes.items()}
    features = next(iter(results.values()))[0]
    values = {name: [aucs[name] for aucs, _, _ in results.values()] for name in features}
    lines = auc_table("feature", "same side in every split", {s: (pos, n) for s, (_, pos, n) in results.items()},
                      values)
    steady = [f for f, found in values.items() if all(v > 0.5 for v in found) or all(v < 0.5 for v in found)]
    lines += ["", f"Label: {candidates[1]} better than {candidates[0]} on {metric} (utility, ties to the cheaper)."]
    if steady:
        best = max(steady, key=lambda f: min(abs(v - 0.5) for v in values[f]))
        margin = min(abs(v - 0.5) for v in values[best])
        lines[-1] += (f" Strongest feature on the same side in every split: {best} (AUC {0.5 - margin:.2f} or "
                      f"further from 0.5 in each, {0.5 + margin:.2f} mirrored).")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("policies", "signal"):
        sub = commands.add_parser(name)
        sub.add_argument("--dataset", required=True)
        sub.add_argument("--metric", required=True)
        sub.add_argument("--runs", type=Path, default=Path("bench/results/route"))
        sub.add_argument("--train", type=int, default=60)
        sub.add_argument("--dev", type=int, default=50)
        sub.add_argument("--results", type=Path)
    policy = commands.choices["policies"]
    policy.add_argument("--escalate", required=True, help="The costlier program the cascade escalates to.")
    policy.add_argument("--artifact", type=Path, help="A compiled cascade's state (disambig compile route --cascade).")
    commands.choices["signal"].add_argument("--candidates", nargs=2, required=True, metavar=("FIRST", "SECOND"))
    args = parser.parse_args(argv)
    sizes = {"train": args.train, "dev": args.dev}
    if args.command == "policies":
        text = report(args.dataset, args.metric, args.escalate, args.runs, sizes, args.artifact)
    else:
        text = signal(args.dataset, args.metric, args.candidates, args.runs, sizes)
    command = SCRIPT.command(sys.argv[1:] if argv is None else argv)
    section = f"{'cascade' if args.command == 'policies' else 'signal'}-{args.dataset}"
    SCRIPT.section(args.results, f"Generated by `{command}` from the stored answers (no LM call).\n\n{text}", section)


if __name__ == "__main__":
    main()
