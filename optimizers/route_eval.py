"""The router measured from its candidates' stored answers: for each held-out question the policy decides (one
search in each first-stage list, no LM call) and the answer is the chosen candidate's stored one.

The composition is faithful when the candidates' answers do not depend on being called from the router (greedy
decoding, same code); ``disambig eval route`` runs it end to end to check that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from disambig.optimizers.route_labels import CORPUS_METRICS, Outcome

Progress = Callable[[str, int, int], None]


def corpus_score(metric: str, outcomes: Sequence[Outcome]) -> float:
    """The dataset-level value of ``metric`` over ``outcomes``: DR from its two means, else the mean."""
    if not outcomes:
        return 0.0
    if metric in CORPUS_METRICS:
        a, b = (sum(o.scores.get(name, 0.0) for o in outcomes) / len(outcomes) for name in CORPUS_METRICS[metric])
        return math.sqrt(a * b) if a > 0 and b > 0 else 0.0
    return sum(o.scores.get(metric, 0.0) for o in outcomes) / len(outcomes)


def summary(metric: str, outcomes: Sequence[Outcome]) -> dict[str, float]:
    """``{score, lm_calls_per_q}`` of one choice of answers."""
    n = max(1, len(outcomes))
    return {"score": round(corpus_score(metric, outcomes), 6),
            "lm_calls_per_q": round(sum(o.lm_calls for o in outcomes) / n, 4)}


def versus(metric: str, routed: Sequence[Outcome], singles: Mapping[str, Sequence[Outcome]]) -> dict[str, Any]:
    """The routed answers against each single candidate on the same questions: the difference in ``metric`` with
    its 95% paired-bootstrap interval and verdict (``disambig.evaluation.paired``; a question without an answer
    scores 0), keyed by candidate."""
    from disambig.evaluation.paired import paired_metric

    def by_question(outcomes: Sequence[Outcome]) -> dict[str, Mapping[str, float]]:
        return {str(n): o.scores for n, o in enumerate(outcomes)}

    ours = by_question(routed)
    names = {name for o in [*routed, *(o for rows in singles.values() for o in rows)] for name in o.scores}
    if not names:
        return {}
    filled = {q: scores or dict.fromkeys(names, 0.0) for q, scores in ours.items()}
    result = {}
    for candidate, outcomes in singles.items():
        d = paired_metric(filled, by_question(outcomes), metric)
        result[candidate] = {"difference": round(d.difference, 6), "low": round(d.low, 6), "high": round(d.high, 6),
                             "verdict": d.verdict}
    return result


def chosen_outcome(action: str, candidates: Mapping[str, Mapping[str, Outcome]], qid: str) -> Outcome:
    """The stored outcome the action stands for: the candidate's answer; no answer (and no call) otherwise."""
    from disambig.programs.route.policy import ANSWER

    if action.startswith(ANSWER):
        return candidates[action[len(ANSWER):]][qid]
    return Outcome({}, 0.0)


def compose_heldout(route: Any, examples: Sequence[Any], candidates: Mapping[str, Mapping[str, Outcome]],
                    metric: str, progress: Progress | None = None) -> dict[str, Any]:
    """Decide every held-out question with ``route`` and score the composed answers against each single
    candidate and the oracle (the best candidate per question by the labels' utility, no cost)."""
    from disambig.optimizers.route_labels import label_questions
    from disambig.programs.route.policy import answer_action

    decisions = []
    for n, ex in enumerate(examples, 1):
        decisions.append(route.decide(ex.question))
        if progress is not None:
            progress("held-out decisions", n, len(examples))
    ids = [str(ex.id) for ex in examples]
    routed = [chosen_outcome(d.action, candidates, i) for d, i in zip(decisions, ids, strict=True)]
    singles = {c: summary(metric, [rows[i] for i in ids]) for c, rows in candidates.items()}
    best = max(singles, key=lambda c: singles[c]["score"])
    oracle_labels, _ = label_questions({answer_action(c): rows for c, rows in candidates.items()}, metric)
    oracle = [chosen_outcome(oracle_labels[i], candidates, i) for i in ids]
    mix = [d.action for d in decisions]
    return {"questions": len(ids), "route": summary(metric, routed), "singles": singles,
            "best_single": {"program": best, **singles[best]}, "oracle": summary(metric, oracle),
            "route_vs": versus(metric, routed, {c: [rows[i] for i in ids] for c, rows in candidates.items()}),
            "actions": {a: mix.count(a) for a in sorted(set(mix))},
            "decisions": [{"id": i, **d.to_dict()} for i, d in zip(ids, decisions, strict=True)]}
