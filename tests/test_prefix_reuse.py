"""Prompt tokens whose KV state the engine reused (not prefilled) reach the usage trace of a question."""

from __future__ import annotations

from types import SimpleNamespace

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
                                       messages=(dspy.lm15.Message.user(question),),
                                       config=dspy.lm15.Config(max_tokens=4, temperature=0.0)))
    # the second prompt shares the whole system turn with the first: well over half its tokens are reused
    assert trace.reused_prompt_tokens > trace.input_tokens / 4


def test_ram_cache_is_on_by_default_and_can_be_turned_off(monkeypatch):
    from disambig.lm import make_lm
    from disambig.lm.runtime import build_lm
    from disambig.settings import load_settings

    assert make_lm("local").engine.prompt_cache_mb == 512
    assert make_lm("local", prompt_cache_mb=0).engine.prompt_cache_mb == 0
    monkeypatch.setenv("DISAMBIG_PROMPT_CACHE_MB", "0")
    assert build_lm(load_settings()).engine.prompt_cache_mb == 0


class FakeLlama:
    def __init__(self, logits_all: bool) -> None:
        self._logits_all = logits_all
        self.cache = None

    def set_cache(self, cache) -> None:
        self.cache = cache


@pytest.mark.parametrize("logits_all", [False, True])
def test_kv_only_states_replace_the_full_ones_unless_logits_are_kept(logits_all):
    from disambig.lm.prompt_cache import enable_prompt_cache

    llama = FakeLlama(logits_all)
    enable_prompt_cache(llama, 64)
    assert llama.cache.capacity_bytes == 64 << 20
    assert ("save_state" in vars(llama)) is not logits_all


@pytest.mark.slow
def test_a_prompt_seen_two_calls_ago_resumes_from_its_state_with_the_same_reply():
    from disambig.lm import make_lm

    def run(prompt_cache_mb: int) -> tuple[list[str], int]:
        lm = make_lm("local:smollm2", prompt_cache_mb=prompt_cache_mb)
        config = dspy.lm15.Config(max_tokens=6, temperature=0.0)
        first, second = "You classify questions. " * 40, "You rewrite questions. " * 40
        replies = []
        with measured() as trace:
            for system, question in ((first, "q1"), (second, "q2"), (first, "q3")):
                request = dspy.lm15.Request(model=lm.model, system=system, messages=(dspy.lm15.Message.user(question),),
                                            config=config)
                replies.append(lm(request).message.parts[0].text)
        lm.engine.close()
        return replies, trace.reused_prompt_tokens

    plain, reused_plain = run(0)
    cached, reused_cached = run(64)
    assert cached == plain
    assert reused_cached > reused_plain + 150  # the third call resumed from the first call's ~200-token system turn


def test_a_saved_state_holds_the_bytes_llama_cpp_wrote_and_loads_them_back(monkeypatch):
    import ctypes

    import llama_cpp
    import numpy as np

    from disambig.lm.prompt_cache import load_kv_state, save_kv_state

    written = bytes(range(256)) * 3 + b"\x00tail"
    loaded = []

    def get_data(ctx, buffer, size):
        ctypes.memmove(buffer, written, len(written))
        return len(written)

    pointer = llama_cpp.llama_state_set_data.argtypes[1]  # what the real function accepts

    def set_data(ctx, buffer, size):
        pointer.from_param(buffer)
        loaded.append(ctypes.string_at(buffer, size))
        return size

    monkeypatch.setattr(llama_cpp, "llama_state_get_size", lambda ctx: len(written) + 100)  # announced > written
    monkeypatch.setattr(llama_cpp, "llama_state_get_data", get_data)
    monkeypatch.setattr(llama_cpp, "llama_state_set_data", set_data)
    llama = SimpleNamespace(ctx=None, input_ids=np.array([1, 2, 3]), n_tokens=3, _seed=7)
    state = save_kv_state(llama)
    assert type(state.llama_state) is bytes and state.llama_state == written
    assert state.llama_state_size == len(written) and state.n_tokens == 3
    llama.input_ids, llama.n_tokens = np.array([9]), 1
    load_kv_state(llama, state)
    assert loaded == [written] and llama.n_tokens == 3 and list(llama.input_ids) == [1, 2, 3]
