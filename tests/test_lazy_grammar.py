"""Lazy grammar sampling on the real SmolLM2: the library's greedy replies token for token, the full check only where
the grammar refuses the best token, and other calls left to the library."""

from __future__ import annotations

import dspy
import pytest

from disambig.lm import make_lm
from disambig.lm.usage import measured

SCHEMA = {"type": "object", "properties": {"readings": {"type": "array", "items": {"type": "string"}},
                                           "answer": {"type": "string"}}, "required": ["readings", "answer"]}
# the poem makes the model start in prose, which the JSON grammar refuses
QUESTIONS = ["Who has the most goals in world football?", "Write a short poem about rivers."]


class Quote(dspy.Signature):
    """Copy the passage's sentence about the goals, word for word."""

    passage: str = dspy.InputField()
    sentence: str = dspy.OutputField()


@pytest.fixture(scope="module")
def engines():
    library, lazy = make_lm("local:smollm2", max_tokens=24), make_lm("local:smollm2", max_tokens=24)
    library.engine.lazy_grammar = False
    yield library, lazy
    library.engine.close()
    lazy.engine.close()


def _reply(lm, question: str, **config) -> str:
    fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA}}
    return lm(question, response_format=fmt, **config)[0]


@pytest.mark.slow
def test_greedy_replies_under_a_grammar_equal_the_library_ones(engines):
    library, lazy = engines
    for question in QUESTIONS:
        assert _reply(lazy, question) == _reply(library, question)
    assert library.engine.grammar_ is None
    counts = lazy.engine.grammar_.counts
    assert counts.tokens > 0 and 0 < counts.refused < counts.tokens  # the poem's prose start was refused


@pytest.mark.slow
def test_a_dspy_call_with_prompt_lookup_gives_the_same_fields(engines):
    library, lazy = engines
    passage = "Miroslav Klose | Klose scored 16 goals, the most in the history of the men's World Cup."
    drafting = make_lm("local:smollm2", max_tokens=24, prompt_lookup=4)
    try:
        with dspy.context(adapter=dspy.JSONAdapter()):
            expected = dspy.Predict(Quote)(passage=passage, lm=library).sentence
            with measured() as trace:
                assert dspy.Predict(Quote)(passage=passage, lm=drafting).sentence == expected
        assert trace.output_tokens > 0 and drafting.engine.grammar_.counts.tokens > 0
    finally:
        drafting.engine.close()


@pytest.mark.slow
def test_sampled_calls_go_through_the_library(engines):
    _, lazy = engines
    assert lazy.engine.llama is not None  # loaded
    before = lazy.engine.grammar_.counts.tokens
    _reply(lazy, QUESTIONS[0], temperature=0.7, seed=3)
    assert lazy.engine.grammar_.counts.tokens == before


@pytest.mark.slow
@pytest.mark.parametrize("question", QUESTIONS)  # the second one makes the grammar refuse the best token
def test_a_log_probability_call_is_sampled_lazily_with_the_library_reply_and_log_probabilities(engines, question):
    library, lazy = engines
    fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA}}
    before = lazy.engine.grammar_.counts.tokens if lazy.engine.grammar_ else 0
    replies = [lm(question, response_format=fmt, logprobs=True, top_logprobs=3)[0] for lm in (library, lazy)]
    assert replies[1]["text"] == replies[0]["text"]
    expected, got = replies[0]["logprobs"]["content"], replies[1]["logprobs"]["content"]
    assert len(got) == len(expected) > 3
    for want, have in zip(expected, got, strict=True):
        assert have["token"] == want["token"] and have["logprob"] == pytest.approx(want["logprob"], abs=1e-6)
        assert [t["token"] for t in have["top_logprobs"]] == [t["token"] for t in want["top_logprobs"]]
        want_top = [t["logprob"] for t in want["top_logprobs"]]
        assert [t["logprob"] for t in have["top_logprobs"]] == pytest.approx(want_top, abs=1e-6)
    assert lazy.engine.grammar_.counts.tokens > before  # the lazy path chose these tokens


def test_only_readers_of_the_logits_keep_a_call_on_the_lazy_path():
    from disambig.lm.lazy_grammar import plain_greedy
    from disambig.lm.token_logprobs import LogprobRecorder

    recorder = LogprobRecorder.__new__(LogprobRecorder)  # no model needed to ask what it does to logits
    assert plain_greedy({"temp": 0.0}) and plain_greedy({"temp": 0.0, "logits_processor": []})
    assert plain_greedy({"temp": 0.0, "logits_processor": [recorder]})
    assert not plain_greedy({"temp": 0.0, "logits_processor": [recorder, lambda ids, logits: logits]})
    assert not plain_greedy({"temp": 0.7, "logits_processor": [recorder]})
    assert not plain_greedy({"temp": 0.0, "repeat_penalty": 1.1})
