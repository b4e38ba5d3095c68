"""The probability that an LM answered "Yes", from the token log-probabilities of its answer.

DIVA's verifier (seed 002, eq. 7) answers Yes or No. Its grade thresholds need a probability, not a label: where
the LM reports log-probabilities (the embedded engine, OpenAI-compatible APIs) the decision token's alternatives
give P(Yes) = p(yes-tokens) / (p(yes-tokens) + p(no-tokens)); the answer's label (1.0 or 0.0) stands in otherwise.

The decision token is the first generated token that starts "yes" or "no" (case, quotes and blanks ignored), so
the JSON around the answer (``{"verdict": "``) is skipped. Its alternatives that also start "yes" / "no" ("Y",
"Yes", " yes", "N", "No" ...) are summed per side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TOP_LOGPROBS = 20
"""Alternatives asked for per token (OpenAI's maximum)."""

LOGPROB_REQUEST: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}


def logprob_config(lm: Any) -> dict[str, Any]:
    """The ``config`` a ``dspy.Predict`` call needs for log-probabilities from ``lm`` ({} when it reports none)."""
    params = getattr(lm, "supported_params", None) or ()
    return dict(LOGPROB_REQUEST) if "logprobs" in params else {}


def side(token: str) -> str | None:
    """``"yes"`` or ``"no"`` when ``token`` spells the start of one of them (case, quotes, blanks and punctuation
    ignored: "Y", "Yes", " yes", "N", "No."), else None."""
    text = token.strip().strip("\"'`.,:;!*[]{}()").strip().lower()
    if text and "yes".startswith(text):
        return "yes"
    if text and "no".startswith(text):
        return "no"
    return None


def yes_probability(logprobs: Any) -> float | None:
    """P(Yes) at the decision token of an answer's log-probabilities, or None when there is none to read.

    Args:
        logprobs: OpenAI-style ``{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}``
            (what ``dspy.Predict`` returns as ``prediction.logprobs``), or that ``content`` list itself.
    """
    for entry in _entries(logprobs):
        chosen = side(str(_get(entry, "token", "")))
        if chosen is None:
            continue
        mass = {"yes": 0.0, "no": 0.0}
        seen: set[str] = set()
        for token, logprob in _alternatives(entry):
            key = side(token)
            if key is not None and token not in seen and math.isfinite(logprob):
                seen.add(token)
                mass[key] += math.exp(logprob)
        total = mass["yes"] + mass["no"]
        return mass["yes"] / total if total > 0 else (1.0 if chosen == "yes" else 0.0)
    return None


@dataclass(frozen=True)
class YesAnswer:
    """A Yes/No reply: the LM's label, P(Yes), and where P(Yes) came from (``logprobs`` or ``label``)."""

    verdict: str
    probability: float
    source: str


def yes_answer(result: Any) -> YesAnswer:
    """A ``dspy.Predict`` result with a ``verdict`` field (Yes or No) as a ``YesAnswer``: P(Yes) from the result's
    log-probabilities where the LM reported them, else the label as 1.0 or 0.0."""
    probability = yes_probability(getattr(result, "logprobs", None))
    if probability is None:
        return YesAnswer(result.verdict, 1.0 if result.verdict == "Yes" else 0.0, "label")
    return YesAnswer(result.verdict, probability, "logprobs")


def _entries(logprobs: Any) -> Iterable[Any]:
    if logprobs is None:
        return []
    content = _get(logprobs, "content", None) if isinstance(logprobs, Mapping) or hasattr(logprobs, "content") \
        else logprobs
    return content or []


def _alternatives(entry: Any) -> Iterable[tuple[str, float]]:
    yield str(_get(entry, "token", "")), float(_get(entry, "logprob", -math.inf))
    for top in _get(entry, "top_logprobs", None) or []:
        yield str(_get(top, "token", "")), float(_get(top, "logprob", -math.inf))


def _get(obj: Any, key: str, default: Any) -> Any:
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)
