"""The LLM judge behind the judge metrics: the judge signatures, run on their own LM, each question asked once."""

from __future__ import annotations

import json
import logging
from typing import Any

from disambig.errors import ConfigurationError

logger = logging.getLogger(__name__)


class Judge:
    """Ask the judge signatures (``disambig.signatures.judge``) on ``lm``, never on the program's LM.

    Every call runs inside ``dspy.context(lm=lm, adapter=CompactJSONAdapter())``, so the judge is independent of
    whatever ``dspy.configure`` set for the program. Answers are memoised by their inputs, so the G-Precision,
    G-Recall and G-F1 metrics built on one ``Judge`` share its verdicts. A reply the adapter cannot parse is
    logged and counted in ``parse_failures``; ``verify`` and ``match`` then return ``None`` so the grounded
    metrics can skip the item (as VerDICt's code does), while ``similarity`` counts it as 0, ``covered`` and
    ``count_unique`` as a negative. ``calls`` counts the questions actually put to the LM (memo hits excluded).

    Args:
        lm: the judge ``dspy.LM`` (or any ``dspy.BaseLM``, e.g. ``DummyLM`` in tests).
    """

    def __init__(self, lm: Any) -> None:
        if lm is None:
            raise ConfigurationError("the judge needs an LM; pass judge_lm=dspy.LM(...) (CLI: --judge-lm)")
        self.lm = lm
        self._memo: dict[tuple[str, str], Any] = {}
        self.parse_failures = 0
        self.calls = 0

    def verify(self, question: str, answer: str, passage: str) -> bool | None:
        """V(q, p): does ``passage`` support ``answer`` (may be empty) to ``question`` (VerDICt prompt I_V).

        Returns ``None`` when the judge's reply could not be parsed.
        """
        return _verdict(self._ask("VerifySupport", "supported", question=question, answer=answer, passage=passage))

    def match(self, question: str, interpretation: str, candidates: list[str]) -> bool | None:
        """V(q, Q): is the sub-question ``interpretation`` among ``candidates`` (VerDICt prompt I_M, questions only).

        ``False`` without a call when there are no candidates; ``None`` when the reply could not be parsed.
        """
        if not candidates:
            return False
        return _verdict(self._ask("MatchInterpretation", "matched", question=question, interpretation=interpretation,
                                  candidates=list(candidates)))

    def count_unique(self, question: str, interpretations: list[str]) -> int:
        """How many of ``interpretations`` are distinct (VerDICt prompt I_D), between 1 and their number."""
        distinct = list(dict.fromkeys(i.strip() for i in interpretations if i.strip()))
        if len(distinct) <= 1:
            return len(distinct)
        unique = self._ask("DeduplicateInterpretations", "unique", question=question, interpretations=distinct)
        return min(max(len(unique or []), 1), len(distinct))

    def similarity(self, question: str, prediction: str, reference: str) -> float:
        """sim_LLM(prediction, reference) clipped to [0, 1] (ADF similarity score)."""
        score = self._ask("AnswerSimilarity", "similarity", question=question, prediction=prediction,
                          reference=reference)
        return min(max(float(score or 0.0), 0.0), 1.0)

    def covered(self, interpretation: str, answers: list[str], response: str) -> bool:
        """Does ``response`` give one of ``answers`` for ``interpretation`` (ADF disambiguation score)."""
        return bool(self._ask("InterpretationCovered", "covered", interpretation=interpretation,
                              answers=list(answers), response=response))

    def _ask(self, signature_name: str, output: str, **inputs: Any) -> Any:
        key = (signature_name, json.dumps(inputs, sort_keys=True, ensure_ascii=False))
        if key not in self._memo:
            self._memo[key] = self._call(signature_name, output, inputs)
        return self._memo[key]

    def _call(self, signature_name: str, output: str, inputs: dict[str, Any]) -> Any:
        import dspy
        from dspy.utils.exceptions import AdapterParseError

        from disambig.lm.adapter import CompactJSONAdapter
        from disambig.signatures import judge as signatures

        predictor = dspy.Predict(getattr(signatures, signature_name))
        self.calls += 1
        with dspy.context(lm=self.lm, adapter=CompactJSONAdapter()):
            try:
                return getattr(predictor(**inputs), output)
            except AdapterParseError as exc:
                self.parse_failures += 1
                logger.warning("judge %s reply could not be parsed (%d so far): %s", signature_name,
                               self.parse_failures, exc)
                return None


def _verdict(value: Any) -> bool | None:
    return None if value is None else bool(value)
