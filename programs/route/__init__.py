"""The router: a learned per-question policy that answers with one of several programs, asks, or abstains."""

from __future__ import annotations

from disambig.programs.route.features import FEATURES, Observation, feature_vector, named, observe
from disambig.programs.route.linear import LinearModel
from disambig.programs.route.policy import ABSTAIN, CLARIFY, Decision, RoutePolicy, answer_action
from disambig.programs.route.program import Route

__all__ = ["ABSTAIN", "CLARIFY", "FEATURES", "Decision", "LinearModel", "Observation", "Route", "RoutePolicy",
           "answer_action", "feature_vector", "named", "observe"]
