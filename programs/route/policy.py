"""The router's learned state: an ambiguity detector and an action policy, each a ``LinearModel``, as one JSON object.

Actions are ``answer:<program>`` for each candidate, ``clarify`` and ``abstain``. The detector reads the question
embedding and the retrieval features and gives P(ambiguous); the policy reads the retrieval features and that
probability and gives each action's probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from disambig.errors import ConfigurationError
from disambig.programs.route.features import Observation, feature_vector
from disambig.programs.route.linear import LinearModel

CLARIFY, ABSTAIN = "clarify", "abstain"
ANSWER = "answer:"
P_AMBIGUOUS = "p_ambiguous"  # the detector's output, as a policy feature


def answer_action(program: str) -> str:
    """The action that answers with candidate ``program``."""
    return ANSWER + program


@dataclass(frozen=True)
class Decision:
    """What the policy chose for one question, and why: the action, every action's probability, P(ambiguous)
    (None without a detector) and the features it read."""

    action: str
    probabilities: dict[str, float]
    p_ambiguous: float | None
    features: dict[str, float]

    @property
    def program(self) -> str:
        """The candidate that answers (``""`` for clarify and abstain)."""
        return self.action[len(ANSWER):] if self.action.startswith(ANSWER) else ""

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "program": self.program, "p_ambiguous": self.p_ambiguous,
                "probabilities": self.probabilities, "features": self.features}


@dataclass(frozen=True)
class RoutePolicy:
    """The detector (optional) and the action policy; ``default`` is taken when there is no policy."""

    default: str
    detector: LinearModel | None = None
    policy: LinearModel | None = None

    def ambiguity(self, obs: Observation) -> float | None:
        """P(ambiguous) of the question, or None without a detector."""
        if self.detector is None:
            return None
        return float(self.detector.predict_proba(feature_vector(obs, self.detector.features))[0, 1])

    def decide(self, obs: Observation, features: dict[str, float], allowed: Sequence[str]) -> Decision:
        """The most probable ``allowed`` action (``default`` when there is no policy or it allows none of its own).

        Raises:
            ConfigurationError: the policy knows an action the program cannot take (a candidate it was not built
                with).
        """
        p_amb = self.ambiguity(obs)
        if self.policy is None:
            return Decision(self.default, {self.default: 1.0}, p_amb, features)
        unknown = sorted(set(self.policy.classes) - set(allowed))
        if unknown:
            raise ConfigurationError(f"the route policy chooses {', '.join(unknown)}, which this program cannot take "
                                     f"(its actions: {', '.join(allowed)}); rebuild it with the artifact's candidates")
        row = policy_inputs(obs, self.policy.features, p_amb)
        probs = self.policy.predict_proba(row)[0]
        by_action = {a: round(float(p), 6) for a, p in zip(self.policy.classes, probs, strict=True)}
        return Decision(max(by_action, key=by_action.get), by_action, p_amb, features)

    def to_dict(self) -> dict[str, Any]:
        return {"default": self.default, "detector": self.detector.to_dict() if self.detector else None,
                "policy": self.policy.to_dict() if self.policy else None}

    @classmethod
    def from_dict(cls, data: Any) -> RoutePolicy:
        """The policy ``to_dict`` wrote; a malformed one is one ``ConfigurationError``."""
        if not isinstance(data, dict) or not isinstance(data.get("default"), str):
            raise ConfigurationError("route policy must be a JSON object with a 'default' action; recompile it")
        detector = LinearModel.from_dict(data["detector"], "route detector") if data.get("detector") else None
        policy = LinearModel.from_dict(data["policy"], "route policy") if data.get("policy") else None
        if policy is not None and P_AMBIGUOUS in policy.features and detector is None:
            raise ConfigurationError(f"route policy reads {P_AMBIGUOUS!r} but the state has no detector; recompile it")
        return cls(data["default"], detector, policy)


def policy_inputs(obs: Observation, names: Sequence[str], p_ambiguous: float | None) -> np.ndarray:
    """The policy's input row: each feature of ``names``, with ``p_ambiguous`` standing for the detector's output."""
    if P_AMBIGUOUS in names and p_ambiguous is None:
        raise ConfigurationError(f"the route policy reads {P_AMBIGUOUS!r} but no detector gave it; recompile it")
    values = [p_ambiguous if n == P_AMBIGUOUS else None for n in names]
    rest = [n for n in names if n != P_AMBIGUOUS]
    computed = iter(feature_vector(obs, rest))
    return np.asarray([v if v is not None else next(computed) for v in values], dtype=np.float64)
