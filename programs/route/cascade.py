"""The router's cascade mode: answer with a cheap ``first`` candidate, then escalate to a costlier one when a
logistic model on that answer (``answer_features``) and on the retrieval (``features``) says the second will do
better.

The state is plain JSON: the two candidates, the model (a ``LinearModel`` with classes ``"0"``/``"1"``, ``"1"`` =
escalation better) and the threshold on P(escalation better); or, when the compile found no model worth keeping,
``constant`` (``"keep"`` or ``"escalate"``) for every question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from disambig.errors import ConfigurationError
from disambig.programs.route.answer_features import ANSWER_FEATURES, Answered, answer_named
from disambig.programs.route.features import FEATURES, Observation, feature_vector, named
from disambig.programs.route.linear import LinearModel
from disambig.programs.route.policy import answer_action

ESCALATE = "1"  # the model's class for "the escalation answers better"
Constant = Literal["keep", "escalate"]


def cascade_inputs(answer: Answered, obs: Observation, names: Sequence[str]) -> np.ndarray:
    """The model's input row: each of ``names``, an answer-side feature of ``answer`` or a retrieval feature of
    ``obs``, in that order.

    Raises:
        ConfigurationError: a name that is neither.
    """
    values = []
    for name in names:
        if name in ANSWER_FEATURES:
            values.append(float(ANSWER_FEATURES[name](answer)))
        elif name in FEATURES:
            values.append(float(feature_vector(obs, [name])[0]))
        else:
            raise ConfigurationError(f"unknown cascade feature {name!r}; answer-side: {', '.join(ANSWER_FEATURES)}; "
                                     f"retrieval: {', '.join(FEATURES)}")
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True)
class CascadeDecision:
    """Whether the cascade escalated one question, and why: P(escalation better) (None for a constant policy), the
    threshold it was compared with, and the features it read (answer-side and retrieval, by name)."""

    first: str
    escalate: str
    escalated: bool
    p_escalate: float | None
    threshold: float | None
    features: dict[str, float]

    @property
    def program(self) -> str:
        """The candidate whose answer is returned."""
        return self.escalate if self.escalated else self.first

    @property
    def action(self) -> str:
        """``answer:<program>``, as the router's other decisions name it."""
        return answer_action(self.program)

    @property
    def p_ambiguous(self) -> None:
        """A cascade estimates no ambiguity."""
        return None

    @property
    def probabilities(self) -> dict[str, float]:
        """Each candidate's probability of being returned."""
        p = float(self.escalated) if self.p_escalate is None else self.p_escalate
        return {answer_action(self.first): round(1.0 - p, 6), answer_action(self.escalate): round(p, 6)}

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "program": self.program, "p_ambiguous": None,
                "probabilities": self.probabilities, "features": self.features,
                "cascade": {"first": self.first, "escalate": self.escalate, "escalated": self.escalated,
                            "p_escalate": self.p_escalate, "threshold": self.threshold}}


@dataclass(frozen=True)
class CascadePolicy:
    """``first`` answers; escalate to ``escalate`` when ``model`` gives P(better) > ``threshold`` (or always /
    never, by ``constant``, when there is no model)."""

    first: str
    escalate: str
    model: LinearModel | None = None
    threshold: float = 0.5
    constant: Constant | None = None

    def __post_init__(self) -> None:
        if (self.model is None) == (self.constant is None):
            raise ConfigurationError("a route cascade needs exactly one of a model and a constant choice; recompile it")
        if self.constant not in (None, "keep", "escalate"):
            raise ConfigurationError(f"route cascade constant is {self.constant!r}; expected 'keep' or 'escalate'")
        if self.model is not None and tuple(self.model.classes) != ("0", ESCALATE):
            raise ConfigurationError(f"route cascade model has classes {list(self.model.classes)}; expected ['0', "
                                     f"'1'] (1 = escalation better); recompile it")
        if self.first == self.escalate:
            raise ConfigurationError(f"route cascade escalates {self.first!r} to itself; name two candidates")

    def decide(self, answer: Answered, obs: Observation) -> CascadeDecision:
        """Keep ``first``'s answer or escalate, from that answer and the question's retrieval."""
        features = {**answer_named(answer), **named(obs)}
        if self.model is None:
            return CascadeDecision(self.first, self.escalate, self.constant == "escalate", None, None, features)
        p = float(self.model.predict_proba(cascade_inputs(answer, obs, self.model.features))[0, 1])
        return CascadeDecision(self.first, self.escalate, p > self.threshold, round(p, 6), self.threshold, features)

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "escalate": self.escalate, "threshold": self.threshold,
                "constant": self.constant, "model": self.model.to_dict() if self.model else None}

    @classmethod
    def from_dict(cls, data: Any) -> CascadePolicy:
        """The cascade ``to_dict`` wrote; a malformed one is one ``ConfigurationError``."""
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("first", "escalate")):
            raise ConfigurationError("route cascade must be a JSON object naming its 'first' and 'escalate' "
                                     "candidates; recompile it")
        model = LinearModel.from_dict(data["model"], "route cascade model") if data.get("model") else None
        threshold = data.get("threshold", 0.5)
        if not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise ConfigurationError(f"route cascade threshold is {threshold!r}; expected a probability in [0, 1]")
        if model is not None:
            unknown = [n for n in model.features if n not in ANSWER_FEATURES and n not in FEATURES]
            if unknown:
                raise ConfigurationError(f"route cascade model reads unknown feature {unknown[0]!r}; recompile it")
        return cls(data["first"], data["escalate"], model, float(threshold), data.get("constant"))
