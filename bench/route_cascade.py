"""Can a cascade beat VanillaRAG: answer with it, then escalate to a costlier program when its answer looks weak?

    python bench/route_cascade.py --dataset asqa --metric dr --escalate adf --runs bench/results/route \
        [--train 60 --dev 50] [--results docs/RESULTS.md]

VanillaRAG runs first, so its answer and trace are known when the cascade decides; the answer-side features below
read its stored row (``RUNS/DATASET-SPLIT/vanilla-rag``), the retrieval features are ``route``'s 15 (one BM25 and
one dense search). Escalating replaces vanilla's answer with ``--escalate``'s stored one and costs both programs'
calls. Each question is labelled "escalation better" by ``compile route``'s utility (ASQA's DR linearised, ties to
the cheaper, i.e. to vanilla). Three policies are fitted on the train questions only and scored once on dev:

- a single threshold on one feature (feature, side and threshold maximise the train cascade's metric with mean calls
  below the escalation's; "never escalate" is among the choices);
- a logistic regression on the answer-side features, and one on answer-side + retrieval features (standardised;
  C chosen by the cross-validated train cascade metric, escalate when P(better) > 0.5).

No LM call: every answer is a stored one.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FIRST = "vanilla-rag"
CS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS, REPEATS, SEED = 5, 10, 0
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of|the|de|and)?\s*[A-Z][\w'’-]*)*")
NOT_NAMES = frozenset("the a an it he she they this that these in on at as by for from his her their its there "
                      "however also both while after before when during".split())
HEDGES = frozenset("may might could possibly perhaps likely unclear depends depending various several different "
                   "ambiguous either some refer refers referring approximately about around".split())
UNKNOWN = re.compile(r"\b(?:not (?:mentioned|mention|provided|provide|specified|specify|stated|state|clear|known|"
                     r"possible)|no (?:information|mention|answer)|unknown|cannot be determined|can ?not determine|"
                     r"does not (?:say|indicate|give))\b", re.IGNORECASE)
STOP = frozenset("is was were are be been of in on at to for and or by with from as that this which who what when "
                 "it its he she they his her their there also has had have not but".split())


def long_answer(row: dict) -> str:
    return str((row.get("prediction") or {}).get("long_answer") or "")


def readings(row: dict) -> list[dict]:
    return list((row.get("prediction") or {}).get("interpretations") or [])


def words(text: str) -> list[str]:
    from disambig.data.text import tokens

    return tokens(text)


def content(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOP}


def answer_tokens(row: dict) -> float:
    """Words in the long answer."""
    return float(len(words(long_answer(row))))


def output_tokens(row: dict) -> float:
    """Tokens the LM wrote over both calls (extract + consolidate), from the trace."""
    return float((row.get("trace") or {}).get("output_tokens", 0))


def answer_cut(row: dict) -> float:
    """1 when the long answer does not end a sentence (the consolidate reply hit the 256-token cap)."""
    return float(not re.search(r"[.!?][\"')\]]*\s*$", long_answer(row)))


def years(row: dict) -> float:
    """Distinct years the long answer mentions."""
    return float(len(set(YEAR.findall(long_answer(row)))))


def numbers(row: dict) -> float:
    """Distinct numbers (years included) the long answer mentions."""
    return float(len(set(NUMBER.findall(long_answer(row)))))


def names(row: dict) -> float:
    """Distinct capitalised spans (a proxy for named entities) in the long answer."""
    spans = {m.group(0).lower() for m in NAME.finditer(long_answer(row))}
    return float(len({s for s in spans if s not in NOT_NAMES}))


def passage_overlap(row: dict) -> float:
    """Share of the long answer's content words found in the passages vanilla read."""
    said = content(long_answer(row))
    seen = set().union(*(content(f"{p.get('title', '')} {p.get('text', '')}")
                         for p in (row.get("prediction") or {}).get("passages") or [])) if said else set()
    return len(said & seen) / len(said) if said else 0.0


def question_overlap(row: dict) -> float:
    """Share of the question's content words the long answer repeats."""
    asked = content(str(row.get("question", "")))
    return len(asked & content(long_answer(row))) / len(asked) if asked else 0.0


def n_readings(row: dict) -> float:
    """Readings (interpretations) the extract step found."""
    return float(len(readings(row)))


def distinct_answers(row: dict) -> float:
    """Distinct short answers among the readings."""
    from disambig.data.text import normalize

    return float(len({normalize(str(r.get("answer", ""))) for r in readings(row)}))


def distinct_questions(row: dict) -> float:
    """Distinct reading questions that differ from the asked question (did extract disambiguate at all?)."""
    from disambig.data.text import normalize

    asked = normalize(str(row.get("question", "")))
    return float(len({normalize(str(r.get("question", ""))) for r in readings(row)} - {asked}))


def answers_in_long(row: dict) -> float:
    """Share of the readings' short answers that the long answer contains."""
    from disambig.data.text import normalize

    text, found = normalize(long_answer(row)), readings(row)
    return sum(normalize(str(r.get("answer", ""))) in text for r in found) / len(found) if found else 0.0


def repetition(row: dict) -> float:
    """Share of the long answer's word trigrams that repeat an earlier one."""
    said = words(long_answer(row))
    grams = list(zip(said, said[1:], said[2:], strict=False))
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def hedges(row: dict) -> float:
    """Hedging words in the long answer (may, might, several, depends, ...)."""
    return float(sum(w in HEDGES for w in words(long_answer(row))))


def says_unknown(row: dict) -> float:
    """1 when the long answer says the passages do not tell."""
    return float(bool(UNKNOWN.search(long_answer(row))))


ANSWER_FEATURES: dict[str, Callable[[dict], float]] = {f.__name__: f for f in (
    answer_tokens, output_tokens, answer_cut, years, numbers, names, passage_overlap, question_overlap, n_readings,
    distinct_answers, distinct_questions, answers_in_long, repetition, hedges, says_unknown)}


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
            calls.append(sum(cost(r)[0] for r in rows))
            tokens.append(sum(cost(r)[1] for r in rows))
        return scores, np.array(calls), np.array(tokens)


def cost(row: dict) -> tuple[float, float]:
    from route_table import cost as row_cost

    return row_cost(row)


def load_split(dataset: str, metric: str, second: str, runs: Path, split: str, limit: int, retriever: object
               ) -> Split:
    """The split's first ``limit`` questions that both programs answered, labelled and featurised."""
    from route_table import load_rows

    from disambig.optimizers.route_data import matrix, observe_all, read_outcomes, run_folder
    from disambig.optimizers.route_labels import label_questions
    from disambig.programs.route.features import FEATURES

    first_rows = load_rows(run_folder(runs, dataset, split, FIRST))
    second_rows = load_rows(run_folder(runs, dataset, split, second))
    ids = [i for i in first_rows if i in second_rows][:limit]
    outcomes = {name: {i: o for i, o in read_outcomes(run_folder(runs, dataset, split, name)).items() if i in ids}
                for name in (FIRST, second)}
    labels, _ = label_questions(outcomes, metric)
    better = np.array([labels[i] == second for i in ids])
    answer_x = np.array([[f(first_rows[i]) for f in ANSWER_FEATURES.values()] for i in ids])
    retrieval_x = matrix(observe_all([first_rows[i]["question"] for i in ids], retriever), list(FEATURES))
    return Split(ids, first_rows, second_rows, better, answer_x, retrieval_x)


def cascade_value(split: Split, escalate: np.ndarray, metric: str, rows: np.ndarray | None = None) -> float:
    """The metric of the cascade on ``split`` (or on its questions ``rows``)."""
    from disambig.optimizers.route_eval import corpus_score
    from disambig.optimizers.route_labels import Outcome

    scores, _, _ = split.cascade(escalate)
    keep = range(len(split.ids)) if rows is None else rows
    return corpus_score(metric, [Outcome(scores[split.ids[k]], 0) for k in keep])


def second_calls(split: Split, rows: np.ndarray) -> float:
    return float(np.mean([cost(split.second[split.ids[k]])[0] for k in rows]))


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


def folds(y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import RepeatedStratifiedKFold

    k = min(FOLDS, int(y.sum()), int((~y).sum()))
    if k < 2:
        return []
    return list(RepeatedStratifiedKFold(n_splits=k, n_repeats=REPEATS, random_state=SEED).split(np.zeros(len(y)), y))


def cross_validated(split: Split, metric: str, decide: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
    """Mean over repeats of the train cascade's metric when each fold's decisions come from ``decide(train rows,
    held-out rows)`` fitted without that fold (NaN when the labels are too few to fold)."""
    plan = folds(split.better)
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

    head = " | ".join(f"{name} AUC ({int(s.better.sum())} of {len(s.ids)} better)" for name, s in
                      (("train", train), ("dev", dev)))
    lines = [f"| answer-side feature | {head} | same side in both |", "|---|---|---|---|"]
    for j, name in enumerate(ANSWER_FEATURES):
        values = [roc_auc_score(s.better, s.answer_x[:, j]) if 0 < s.better.sum() < len(s.ids) else float("nan")
                  for s in (train, dev)]
        same = all(v > 0.5 for v in values) or all(v < 0.5 for v in values)
        lines.append(f"| {name} | {values[0]:.2f} | {values[1]:.2f} | {'yes' if same else 'no'} |")
    return "\n".join(lines)


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


def cascade_table(train: Split, dev: Split, metric: str, second: str) -> str:
    """The policies' train and dev metric, dev Δ to vanilla with its paired interval, escalations and cost."""
    from rescore import difference_cell

    reference = dev.cascade(np.zeros(len(dev.ids), bool))[0]
    rows = [(f"{FIRST} (never escalate)", np.zeros(len(train.ids), bool), np.zeros(len(dev.ids), bool), ""),
            (f"{second} (always)", np.ones(len(train.ids), bool), np.ones(len(dev.ids), bool), ""),
            *policies(train, dev, metric),
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


def report(dataset: str, metric: str, second: str, runs: Path, sizes: dict[str, int]) -> str:
    from disambig.retrieval import build_retriever

    retriever = build_retriever("hybrid", corpus="wiki-slice")
    train, dev = (load_split(dataset, metric, second, runs, split, n, retriever) for split, n in sizes.items())
    return "\n".join([aucs(train, dev), "", cascade_table(train, dev, metric, second), "",
                      f"Label: {second} better than {FIRST} on {metric} (utility, ties to the cheaper). The cascade "
                      f"always runs {FIRST} (its calls are in every row) and adds {second}'s calls when it escalates; "
                      f"{second} alone makes {second_calls(dev, np.arange(len(dev.ids))):.2f} calls/q on dev. Train "
                      f"CV: {FOLDS}-fold stratified, {REPEATS} repeats, seed {SEED}."])


def main(argv: Sequence[str] | None = None) -> None:
    import shlex
    import sys

    from route_table import write_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--metric", required=True)
    parser.add_argument("--escalate", required=True, help="The costlier program the cascade escalates to.")
    parser.add_argument("--runs", type=Path, default=Path("bench/results/route"))
    parser.add_argument("--train", type=int, default=60)
    parser.add_argument("--dev", type=int, default=50)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args(argv)
    text = report(args.dataset, args.metric, args.escalate, args.runs, {"train": args.train, "dev": args.dev})
    print(text)
    if args.results:
        write_section(args.results, f"cascade-{args.dataset}", text,
                      "python bench/route_cascade.py " + shlex.join(sys.argv[1:]), "bench/route_cascade.py")


if __name__ == "__main__":
    main()
