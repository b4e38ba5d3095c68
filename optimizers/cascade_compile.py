"""``disambig compile route --cascade FIRST,ESCALATE``: fit the cascade from the candidates' stored runs and measure
it on held-out questions by composing their stored answers.

A question's label is "escalation better": the escalation's answer has the higher utility (the dataset's metric,
linearised for ASQA's DR, minus ``cost_weight`` per LM call, the escalation costing both runs' calls; ties to
keeping the first answer). The features are the first candidate's answer-side ones, read from its stored row, and
the retrieval ones (one BM25 and one dense search). No LM call: every answer is a stored one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from disambig.optimizers.route_labels import Outcome

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class CascadeSplit:
    """One split's questions (in dataset order), the first candidate's answers, both candidates' outcomes (the
    escalation's costing both runs' calls), the labels and the feature matrix."""

    ids: list[str]
    answers: list[Any]  # Answered
    observations: list[Any]  # Observation
    kept: list[Outcome]
    escalated: list[Outcome]
    better: np.ndarray
    X: np.ndarray

    def outcomes(self, escalate: np.ndarray) -> list[Outcome]:
        """Each question's outcome when the questions in ``escalate`` go to the second candidate."""
        return [e if up else k for k, e, up in zip(self.kept, self.escalated, escalate, strict=True)]


def feature_names() -> list[str]:
    """The escalation model's inputs: every answer-side feature, then every retrieval feature."""
    from disambig.programs.route.answer_features import ANSWER_FEATURES
    from disambig.programs.route.features import FEATURES

    return [*ANSWER_FEATURES, *FEATURES]


def cascade_split(examples: Sequence[Any], first_rows: Mapping[str, Mapping[str, Any]],
                  outcomes: Mapping[str, Mapping[str, Outcome]], cascade: tuple[str, str], metric: str,
                  cost_weight: float, retriever: Any, progress: Callable[[int, int], None] | None = None
                  ) -> CascadeSplit:
    """Label and featurise ``examples`` from the stored rows of the first candidate and both candidates' outcomes.

    Raises:
        ConfigurationError: a question the first candidate's run has no row for.
    """
    from disambig.errors import ConfigurationError
    from disambig.optimizers.route_data import observe_all
    from disambig.optimizers.route_labels import label_questions
    from disambig.programs.route.answer_features import Answered
    from disambig.programs.route.cascade import cascade_inputs

    first, second = cascade
    ids = [str(ex.id) for ex in examples]
    missing = [i for i in ids if i not in first_rows]
    if missing:
        raise ConfigurationError(f"{first}'s stored run lacks {len(missing)} of {len(ids)} questions (first "
                                 f"{missing[0]!r}); answer them first")
    kept = [outcomes[first][i] for i in ids]
    escalated = [Outcome(outcomes[second][i].scores, k.lm_calls + outcomes[second][i].lm_calls)
                 for i, k in zip(ids, kept, strict=True)]
    labels, _ = label_questions({"keep": dict(zip(ids, kept, strict=True)),
                                 "escalate": dict(zip(ids, escalated, strict=True))}, metric, cost_weight)
    answers = [Answered.from_row(first_rows[i]) for i in ids]
    observations = observe_all([ex.question for ex in examples], retriever, progress)
    names = feature_names()
    X = np.vstack([cascade_inputs(a, o, names) for a, o in zip(answers, observations, strict=True)])
    return CascadeSplit(ids, answers, observations, kept, escalated, np.array([labels[i] == "escalate" for i in ids]),
                        X)


def worth(split: CascadeSplit, metric: str, cost_weight: float) -> Callable[[np.ndarray], float]:
    """The train cascade's worth under an escalation mask: its metric minus ``cost_weight`` times its mean calls."""
    from disambig.optimizers.route_eval import corpus_score

    def value(escalate: np.ndarray) -> float:
        chosen = split.outcomes(escalate)
        calls = sum(o.lm_calls for o in chosen) / max(1, len(chosen))
        return corpus_score(metric, chosen) - cost_weight * calls

    return value


def fit_on(split: CascadeSplit, cascade: tuple[str, str], metric: str, cost_weight: float,
           thresholds: Sequence[float] | None = None) -> tuple[Any, dict]:
    """The ``CascadePolicy`` fitted on ``split`` (threshold from ``thresholds``, default ``cascade_fit.THRESHOLDS``)
    and what the fit chose (for the manifest)."""
    from disambig.optimizers.cascade_fit import THRESHOLDS, fit_cascade
    from disambig.programs.route.cascade import CascadePolicy

    fitted = fit_cascade(split.X, split.better, feature_names(), worth(split, metric, cost_weight),
                         thresholds=thresholds or THRESHOLDS)
    policy = CascadePolicy(*cascade, fitted.model, fitted.threshold, fitted.constant)
    note = {"cascade_C": fitted.C, "cascade_threshold": fitted.threshold, "cascade_constant": fitted.constant,
            "cascade_cv_worth": fitted.cv, "train_better": int(split.better.sum())}
    return policy, note


def compose(policy: Any, split: CascadeSplit, metric: str) -> dict[str, Any]:
    """The cascade on held-out questions from the stored answers, beside each candidate alone and the oracle
    cascade (escalate exactly when the escalation is better)."""
    from disambig.optimizers.route_eval import summary, versus

    decisions = [policy.decide(a, o) for a, o in zip(split.answers, split.observations, strict=True)]
    up = np.array([d.escalated for d in decisions], dtype=bool)
    second = [Outcome(e.scores, e.lm_calls - k.lm_calls) for k, e in zip(split.kept, split.escalated, strict=True)]
    singles = {policy.first: summary(metric, split.kept), policy.escalate: summary(metric, second)}
    best = max(singles, key=lambda c: singles[c]["score"])
    mix = [d.action for d in decisions]
    return {"questions": len(split.ids), "route": summary(metric, split.outcomes(up)), "singles": singles,
            "best_single": {"program": best, **singles[best]}, "oracle": summary(metric, split.outcomes(split.better)),
            "route_vs": versus(metric, split.outcomes(up), {policy.first: split.kept, policy.escalate: second}),
            "actions": {a: mix.count(a) for a in sorted(set(mix))}, "escalated": int(up.sum()),
            "decisions": [{"id": i, **d.to_dict()} for i, d in zip(split.ids, decisions, strict=True)]}


def train_cascade(job: Any, retriever: Any, train: Sequence[Any], heldout: Sequence[Any],
                  outcomes: Mapping[str, Mapping[str, Mapping[str, Outcome]]], progress: Progress | None = None
                  ) -> tuple[Any, dict[str, str], dict[str, Any], dict[str, Any]]:
    """The fitted ``CascadePolicy``, the train labels (``keep``/``escalate`` by question), the fit's note and the
    held-out composition, for ``job`` (a ``RouteJob`` with ``cascade`` set) from its candidates' stored runs."""
    from disambig.optimizers.route_data import read_rows, run_folder

    splits = {}
    for name, examples in (("train", train), ("dev", heldout)):
        rows = read_rows(run_folder(job.runs, job.dataset, name, job.cascade[0]))
        step = None if progress is None else (lambda done, total, n=name: progress(f"{n} features", done, total))
        splits[name] = cascade_split(examples, rows, outcomes[name], job.cascade, job.metric, job.cost_weight,
                                     retriever, step)
    policy, note = fit_on(splits["train"], job.cascade, job.metric, job.cost_weight, job.cascade_thresholds)
    labels = {i: "escalate" if b else "keep" for i, b in zip(splits["train"].ids, splits["train"].better,
                                                                 strict=True)}
    return policy, labels, note, compose(policy, splits["dev"], job.metric)
