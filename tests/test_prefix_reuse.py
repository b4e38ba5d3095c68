"""Prompt tokens whose KV state the engine reused (not prefilled) reach the usage trace of a question."""

from __future__ import annotations

import dspy
import pytest

from disambig.lm import llama_engine
from disambig.lm.llama_engine import EvalCounters, LlamaEngine, to_response
from disambig.lm.usage import measured

RAW = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
       "usage": {"prompt_tokens": 120, "completion_tokens": 2}}


@pytest.mark.parametrize(("prefilled", "reused"), [(120, 0), (20, 100), (1, 119), (None, None)])
def test_reused_tokens_are_the_prompt_minus_what_was_prefilled(prefilled, reused):
    assert to_response(RAW, model="local/x", prefilled=prefilled).usage.cache_read_tokens == reused


class ScriptedLlama:
    """Replies ``RAW``; llama.cpp's counters say the first call prefilled all 120 tokens, later ones 30."""

    def __init__(self) -> None:
        self.calls = 0

    def create_chat_completion(self, **kwargs):
        self.calls += 1
        return RAW


def test_a_questions_trace_sums_the_reused_tokens(monkeypatch):
    engine = LlamaEngine("/models/tiny.gguf")
    engine._llama = ScriptedLlama()
    monkeypatch.setattr(llama_engine, "reset_counters", lambda llama: None)
    monkeypatch.setattr(llama_engine, "read_counters",
                        lambda llama: EvalCounters(120 if llama.calls == 1 else 30, 1.0, 2, 1.0))
    lm = dspy.LM("local/tiny", engine=engine, cache=False, num_retries=0)
    with measured() as trace:
        for question in ("a", "b", "c"):
            lm(question)
    # 3 calls x 120 prompt tokens; the 2nd and 3rd reused 120 - 30 = 90 each
    assert (trace.input_tokens, trace.reused_prompt_tokens) == (360, 180)


@pytest.mark.slow
def test_real_engine_reuses_a_shared_system_prompt(local_lm):
    system = "You answer questions about football history and records. " * 20
    with measured() as trace:
        for question in ("Who scored most?", "Who won in 1998?"):
            local_lm(dspy.lm15.Request(model=local_lm.model, system=system,
                                       messages=(dspy.lm15.Message.user(question),)))
    # the second prompt shares the whole system turn with the first: well over half its tokens are reused
    assert trace.reused_prompt_tokens > trace.input_tokens / 4
