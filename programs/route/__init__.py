"""The router: a learned per-question policy that answers with one of several programs, asks, or abstains; or, as
a cascade, answers with a cheap program and escalates to a costlier one when that answer looks weak."""

from __future__ import annotations

from disambig.programs.route.answer_features import ANSWER_FEATURES, Answered, answer_named
from disambig.programs.route.cascade import CascadeDecision, CascadePolicy
from disambig.programs.route.features import FEATURES, Observation, feature_vector, named, observe
from disambig.programs.route.linear import LinearModel
from disambig.programs.route.policy import ABSTAIN, CLARIFY, Decision, RoutePolicy, answer_action
from disambig.programs.route.program import Route

__all__ = ["ABSTAIN", "ANSWER_FEATURES", "CLARIFY", "FEATURES", "Answered", "CascadeDecision", "CascadePolicy",
           "Decision", "LinearModel", "Observation", "Route", "RoutePolicy", "answer_action", "answer_named",
           "feature_vector", "named", "observe"]
