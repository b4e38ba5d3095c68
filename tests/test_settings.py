from __future__ import annotations

import pytest

from disambig.settings import load_settings


def test_flags_override_env_which_override_defaults(monkeypatch):
    monkeypatch.setenv("DISAMBIG_LM", "openai/gpt-4o-mini")
    monkeypatch.setenv("DISAMBIG_THREADS", "3")
    assert load_settings().lm == "openai/gpt-4o-mini"
    assert load_settings().threads == 3
    assert load_settings(lm="local", threads=None).lm == "local"  # flag wins, None means "not given"
    assert load_settings(threads=None).threads == 3


def test_defaults(monkeypatch, tmp_path):
    for name in ("LM", "JUDGE_LM", "CACHE_DIR", "THREADS"):
        monkeypatch.delenv(f"DISAMBIG_{name}", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("disambig.lm.threads.free_threads", lambda: 1)  # a busy machine: one core free
    settings = load_settings()
    assert (settings.lm, settings.threads) == ("local", 1)
    assert settings.cache_dir == str(tmp_path / "disambig")
    assert load_settings(threads=2).threads == 2  # a flag overrides the measured choice
    monkeypatch.setenv("DISAMBIG_THREADS", "2")
    assert load_settings().threads == 2  # and so does the variable


@pytest.mark.parametrize(
    ("env", "match"), [("DISAMBIG_THREADS=x", "not an integer"), ("DISAMBIG_THREADS=0", "at least 1")]
)
def test_bad_env_values_are_named(monkeypatch, env, match):
    key, value = env.split("=")
    monkeypatch.setenv(key, value)
    with pytest.raises(ValueError, match=match):
        load_settings()
