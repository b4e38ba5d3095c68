"""The repetition guard and penalty as settings: parsed, validated in one line, and passed to the engine."""

from __future__ import annotations

import pytest

from disambig.errors import ConfigurationError
from disambig.lm.repetition import LoopRule
from disambig.settings import Settings, load_settings


@pytest.mark.parametrize(("text", "rule"), [
    ("6x3", LoopRule(6, 3)), ("2X4", LoopRule(2, 4)), (" 10x2 ", LoopRule(10, 2)),
    ("off", None), ("OFF", None), ("0", None),
])
def test_guard_specs_parse(text, rule):
    assert LoopRule.parse(text) == rule


@pytest.mark.parametrize("text", ["6", "x3", "6x", "6x1", "0x3", "six", "6x3x2", "-6x3"])
def test_malformed_guard_specs_fail_in_one_line(text):
    with pytest.raises(ConfigurationError, match=r"is not NxR .* or off$"):
        LoopRule.parse(text)


def test_env_sets_guard_and_penalty(monkeypatch):
    assert (Settings().repetition_guard, Settings().repeat_penalty) == ("6x3", 1.0)  # guard on, penalty off
    monkeypatch.setenv("DISAMBIG_REPETITION_GUARD", "off")
    monkeypatch.setenv("DISAMBIG_REPEAT_PENALTY", "1.1")
    settings = load_settings()
    assert (settings.repetition_guard, settings.repeat_penalty) == ("off", 1.1)
    assert load_settings(repetition_guard="4x2").repetition_guard == "4x2"  # a CLI flag wins


@pytest.mark.parametrize(("name", "value", "error", "match"), [
    ("DISAMBIG_REPEAT_PENALTY", "strong", ValueError, "is not a number"),
    ("DISAMBIG_REPEAT_PENALTY", "0", ValueError, "must be positive"),
    ("DISAMBIG_REPETITION_GUARD", "often", ConfigurationError, "is not NxR"),
])
def test_bad_env_values_are_refused(monkeypatch, name, value, error, match):
    monkeypatch.setenv(name, value)
    with pytest.raises(error, match=match):
        load_settings()


def test_build_lm_gives_the_engine_its_guard_and_penalty(tmp_path):
    from disambig.lm.runtime import build_lm

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")  # a GGUF header: nothing more is read before the first call
    settings = Settings(lm=f"local:{gguf}", cache_dir=str(tmp_path), repetition_guard="4x2", repeat_penalty=1.1)
    engine = build_lm(settings).engine
    assert (engine.repetition_guard, engine.repeat_penalty) == ("4x2", 1.1)
    assert engine._llama is None  # nothing is loaded to build it


def test_run_params_record_only_what_differs_from_the_defaults():
    from disambig.settings import generation_overrides

    assert generation_overrides(Settings()) == {}
    assert generation_overrides(Settings(repetition_guard="off", repeat_penalty=1.1)) == {
        "repetition_guard": "off", "repeat_penalty": 1.1}
