"""The router's LM probe: one call per question, P(Yes) read from the decision token's alternatives."""

from __future__ import annotations

import math
from dataclasses import replace

import dspy
import pytest
from program_fakes import ScriptedEngine

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs.route.readings_probe import ReadingsProbe

AMBIGUOUS = "Who won the US Open golf in 2017?"
CLEAR = "What is the boiling point of water at sea level in Celsius?"


class YesEngine:
    """Scripted replies that also carry log-probabilities: P(Yes) = ``yes[question]`` when asked for them."""

    supports_response_schema = True

    def __init__(self, yes: dict[str, float], logprobs: bool = True) -> None:
        self.yes, self.requests = yes, []
        self.scripted = ScriptedEngine({"Read the question on its own": self.reply})
        self.supported_params = frozenset({"temperature", "max_tokens", "response_format",
                                           *(("logprobs", "top_logprobs") if logprobs else ())})

    def reply(self, user: str) -> dict:
        return {"verdict": "Yes" if self.yes[self.question(user)] >= 0.5 else "No"}

    @staticmethod
    def question(user: str) -> str:
        return user.rsplit("question: ", 1)[1].strip()

    def complete(self, request):
        from dspy.lm15 import TokenLogprob, TopLogprob

        response = self.scripted.complete(request)
        self.requests.append([(m.role, m.text) for m in request.messages])
        if request.config.logprobs is None:
            return response
        p = self.yes[self.question(self.scripted.calls[-1][1])]
        top = (TopLogprob("Yes", math.log(p)), TopLogprob("No", math.log(1 - p)))
        chosen = top[0] if p >= 0.5 else top[1]
        tokens = (TokenLogprob('{"verdict": "', 0.0), TokenLogprob(chosen.token, chosen.logprob, top=top),
                  TokenLogprob('"}', 0.0))
        return replace(response, logprobs=tokens)

    def stream(self, request):
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def probe_with(engine: YesEngine) -> ReadingsProbe:
    dspy.configure(lm=dspy.LM("scripted/readings", engine=engine, cache=False, num_retries=0),
                   adapter=CompactJSONAdapter())
    return ReadingsProbe()


def test_the_probability_is_read_from_the_decision_tokens_alternatives():
    probe = probe_with(YesEngine({AMBIGUOUS: 0.7, CLEAR: 0.1}))
    ambiguous, clear = probe(question=AMBIGUOUS), probe(question=CLEAR)
    assert (ambiguous.verdict, ambiguous.source) == ("Yes", "logprobs")
    assert ambiguous.probability == pytest.approx(0.7, abs=1e-6)
    assert (clear.verdict, clear.probability) == ("No", pytest.approx(0.1, abs=1e-6))


def test_an_lm_without_log_probabilities_gives_the_label():
    probe = probe_with(YesEngine({AMBIGUOUS: 0.7, CLEAR: 0.1}, logprobs=False))
    assert probe(question=AMBIGUOUS).probability == 1.0 and probe(question=CLEAR).probability == 0.0
    assert probe(question=CLEAR).source == "label"


def test_the_prompt_holds_the_question_alone_after_one_demo_of_each_answer():
    engine = YesEngine({AMBIGUOUS: 0.7})
    probe_with(engine)(question=AMBIGUOUS)
    (messages,) = engine.requests
    users = [text for role, text in messages if role == "user"]
    replies = [text for role, text in messages if role == "assistant"]
    assert len(users) == 3 and users[-1] == f"question: {AMBIGUOUS}"  # two demo questions, then the question alone
    assert "world cup" in users[0] and "gold" in users[1]
    assert ['"Yes"' in replies[0], '"No"' in replies[1]] == [True, True]
