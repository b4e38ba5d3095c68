"""``--cache``: DSPy's response cache in the project cache directory answers a repeated in-process call with
no engine work, from memory and from disk; it is off unless asked for."""

from __future__ import annotations

import dspy
import pytest

from disambig.lm.llama_engine import LlamaEngine
from disambig.lm.runtime import use_response_cache
from disambig.settings import load_settings


class CountingLlama:
    """Answers every chat completion with the same text and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def create_chat_completion(self, **kwargs):
        self.calls += 1
        return {"choices": [{"message": {"content": "Paris"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1}}


@pytest.fixture(autouse=True)
def _no_llama_counters(monkeypatch):
    from disambig.lm.llama_engine import EvalCounters

    monkeypatch.setattr("disambig.lm.llama_engine.reset_counters", lambda llama: None)
    monkeypatch.setattr("disambig.lm.llama_engine.read_counters", lambda llama: EvalCounters(12, 1.0, 1, 1.0))


@pytest.fixture(autouse=True)
def _restore_dspy_cache():
    before = vars(dspy).get("cache")
    yield
    if before is None:
        vars(dspy).pop("cache", None)
    else:
        dspy.cache = before


def counting_lm(cache: bool) -> tuple[dspy.LM, CountingLlama]:
    engine = LlamaEngine("/models/tiny.gguf")
    engine._llama = llama = CountingLlama()
    return dspy.LM("local/tiny", engine=engine, cache=cache, num_retries=0, temperature=0.0, max_tokens=8), llama


def test_repeated_call_is_answered_from_the_cache_then_from_disk(tmp_path):
    folder = use_response_cache(tmp_path)
    assert folder == tmp_path / "dspy"
    lm, llama = counting_lm(cache=True)
    with dspy.track_usage() as usage:
        assert lm("capital of France?") == lm("capital of France?") == ["Paris"]
    assert llama.calls == 1
    assert len(usage.usage_data["local/tiny"]) == 1  # a cached answer costs no tokens
    assert lm("capital of Italy?") == ["Paris"] and llama.calls == 2  # another request is another entry

    vars(dspy).pop("cache")  # a new process: nothing in memory, the disk folder stays
    use_response_cache(tmp_path)
    lm_again, llama_again = counting_lm(cache=True)
    assert lm_again("capital of France?") == ["Paris"] and llama_again.calls == 0


def test_without_cache_every_call_reaches_the_engine(tmp_path):
    use_response_cache(tmp_path)
    lm, llama = counting_lm(cache=False)
    lm("capital of France?")
    lm("capital of France?")
    assert llama.calls == 2


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("on", True), ("0", False), ("false", False)])
def test_cache_setting_from_the_environment(monkeypatch, raw, expected):
    monkeypatch.setenv("DISAMBIG_LM_CACHE", raw)
    assert load_settings().lm_cache is expected
    assert load_settings(lm_cache=not expected).lm_cache is not expected  # the flag wins


def test_bad_cache_setting_names_the_valid_values(monkeypatch):
    monkeypatch.setenv("DISAMBIG_LM_CACHE", "maybe")
    with pytest.raises(ValueError, match="DISAMBIG_LM_CACHE='maybe' is not a boolean; use 1 or 0"):
        load_settings()


def test_cache_is_off_by_default(monkeypatch):
    monkeypatch.delenv("DISAMBIG_LM_CACHE", raising=False)
    assert load_settings().lm_cache is False
