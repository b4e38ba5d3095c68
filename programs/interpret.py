"""Pseudo-interpretations: type the question's ambiguity, then rewrite it into specific questions.

Seed: DIVA (002), eq. 3: two separate LM calls, typing with prompt I_a, then rewriting with I_p from the typing
step's output. The rewrite step reads the types and the reason together, in Table 7's own form
("Types: [AmbSub]. The subject ..."). Typing only informs the rewrite, so an unparseable typing answer does not
end the question: it degrades to ``N/A`` with no reason, and the failure is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from disambig.data.text import normalize
from disambig.lm.verifier import using_verifier
from disambig.programs.seed_demos import predict
from disambig.signatures import ClassifyAmbiguity, PseudoInterpretations


@dataclass(frozen=True)
class Readings:
    """The typing step's types and reason, the pseudo-interpretations (never empty), and whether typing failed."""

    types: tuple[str, ...]
    reason: str
    questions: tuple[str, ...]
    typing_failed: bool = False

    def notes(self) -> dict[str, Any]:
        """What a program's trace records of this step (``typing_failures`` sums over a results file)."""
        return {"types": list(self.types), "reason": self.reason, "pseudo_interpretations": list(self.questions),
                "typing_failures": int(self.typing_failed)}


class PseudoInterpreter(dspy.Module):
    """``classify`` then ``rewrite``; at most ``max_readings`` distinct questions, the original if none."""

    def __init__(self, max_readings: int = 5) -> None:
        super().__init__()
        self.max_readings = max_readings
        self.classify = predict(ClassifyAmbiguity)
        self.rewrite = predict(PseudoInterpretations)

    def forward(self, question: str, **context: str) -> Readings:
        """``context``: further inputs of the rewrite step (a subclass's signature may read more than the question,
        e.g. ``passages``)."""
        types, reason, failed = self.ambiguity(question)
        rewritten = self.rewrite(question=question, reason=typed_reason(types, reason), **context)
        questions = distinct(rewritten.sub_questions or [], self.max_readings) or (question,)
        return Readings(types, reason, questions, failed)

    def on_verifier(self, question: str, **context: str) -> Readings:
        """``self(question=question, **context)`` on the run's verifier LM when it has one (``--verifier-lm``), as
        DIVA's rewriting runs in the paper (GPT-4)."""
        with using_verifier():
            return self(question=question, **context)

    def ambiguity(self, question: str) -> tuple[tuple[str, ...], str, bool]:
        """``(types, reason, failed)``: the typing step's answer, or ``(("N/A",), "", True)`` when it cannot be
        parsed (a reason cut by the token limit leaves the required types missing)."""
        try:
            typed = self.classify(question=question)
        except AdapterParseError:
            return ("N/A",), "", True
        return tuple(typed.types or ("N/A",)), (typed.reason or "").strip(), False


def typed_reason(types: Sequence[str], reason: str) -> str:
    """The typing step's answer as the rewrite step reads it, in Table 7's form: ``Types: [AmbSub]. <reason>``."""
    labels = ", ".join(f"[{t}]" for t in types) or "[N/A]"
    return f"Types: {labels}. {reason}".strip()


def distinct(questions: list[str], limit: int) -> tuple[str, ...]:
    """Non-empty questions without repeats (by normalised text), first ``limit`` of them."""
    seen: set[str] = set()
    out = []
    for q in questions:
        key = normalize(q)
        if key and key not in seen:
            seen.add(key)
            out.append(q.strip())
    return tuple(out[:limit])
