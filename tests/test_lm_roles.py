"""Paper settings as options: a decoding preset for every LM, and a separate LM for DIVA's rewriting and
verification (``--verifier-lm`` / ``DISAMBIG_VERIFIER_LM``)."""

from __future__ import annotations

import os

import pytest

from disambig.errors import ConfigurationError
from disambig.lm import runtime, verifier
from disambig.lm.decoding import decoding_kwargs
from disambig.settings import load_settings


def test_paper_decoding_is_temperature_03_top_p_1_and_300_tokens():
    assert decoding_kwargs("paper") == {"temperature": 0.3, "top_p": 1.0, "max_tokens": 300}
    assert decoding_kwargs("greedy") == {"temperature": 0.0}
    with pytest.raises(ConfigurationError, match="greedy, paper"):
        decoding_kwargs("beam")


def test_build_lm_applies_the_settings_decoding(monkeypatch):
    seen = {}
    monkeypatch.setattr("disambig.lm.make_lm", lambda spec, **kwargs: seen.update(kwargs, spec=spec))
    monkeypatch.setenv("DISAMBIG_DECODING", "paper")
    runtime.build_lm(load_settings(), "openai/x")
    assert seen["temperature"] == 0.3 and seen["max_tokens"] == 300 and seen["spec"] == "openai/x"
    runtime.build_lm(load_settings(), "openai/x", max_tokens=64)  # an explicit argument wins
    assert seen["max_tokens"] == 64


def test_the_verifier_lm_comes_from_the_environment_and_is_built_once(monkeypatch):
    built = []
    monkeypatch.setattr(runtime, "build_lm", lambda settings, spec: built.append(spec) or f"LM({spec})")
    monkeypatch.setattr(verifier, "_built", {})
    monkeypatch.delenv("DISAMBIG_VERIFIER_LM", raising=False)
    assert verifier.verifier_lm() is None
    monkeypatch.setenv("DISAMBIG_VERIFIER_LM", "openai/gpt-4o")
    assert verifier.verifier_lm() == "LM(openai/gpt-4o)" == verifier.verifier_lm()
    assert built == ["openai/gpt-4o"]
    monkeypatch.setenv("DISAMBIG_LM", "openai/gpt-4o")  # the same spec as the run's LM: no second LM
    assert verifier.verifier_lm() is None


def test_cli_options_set_the_environment(monkeypatch):
    from disambig.cli.options import export_lm_roles

    monkeypatch.setenv("DISAMBIG_VERIFIER_LM", "")  # recorded, so the value exported below is undone after the test
    monkeypatch.setenv("DISAMBIG_DECODING", "greedy")
    export_lm_roles("openai/gpt-4o", None)
    settings = load_settings()
    assert settings.verifier_lm == "openai/gpt-4o" and settings.decoding == "greedy"
    export_lm_roles(None, "paper")
    assert load_settings().decoding == "paper"


def test_a_verifier_lm_gets_the_runs_threads_and_is_not_the_runs_model_twice(monkeypatch):
    """``disambig eval --lm L --threads 1 --verifier-lm V`` builds V with one thread too (it once took the default 2,
    beside a run told to use one), and a V naming L's model in other words loads no second copy."""
    from disambig.cli.options import export_lm_roles

    seen = []
    monkeypatch.setattr(runtime, "build_lm", lambda settings, spec: seen.append((spec, settings.threads)) or spec)
    monkeypatch.setattr(verifier, "_built", {})
    for name in ("DISAMBIG_LM", "DISAMBIG_THREADS", "DISAMBIG_VERIFIER_LM"):
        monkeypatch.delenv(name, raising=False)
    export_lm_roles("local:qwen2.5-1.5b", None, lm="local:qwen2.5-0.5b", threads=1)
    assert verifier.verifier_lm() == "local:qwen2.5-1.5b" and seen == [("local:qwen2.5-1.5b", 1)]
    assert load_settings().lm == "local:qwen2.5-0.5b"
    export_lm_roles("local", None, lm="local:qwen2.5-1.5b")  # `local` is the 1.5B
    assert verifier.verifier_spec() == "" and verifier.verifier_lm() is None


def test_a_remote_runs_threads_are_not_a_local_verifiers_cores_and_a_factory_name_is_no_error(monkeypatch):
    from disambig.cli.options import export_lm_roles

    for name in ("DISAMBIG_LM", "DISAMBIG_THREADS", "DISAMBIG_VERIFIER_LM"):
        monkeypatch.delenv(name, raising=False)
    export_lm_roles("local:qwen2.5-1.5b", None, lm="openai/gpt-4o", threads=8)  # 8 questions at once, not 8 cores
    assert "DISAMBIG_THREADS" not in os.environ
    monkeypatch.setenv("DISAMBIG_LM", "scripted")  # a name only DISAMBIG_LM_FACTORY knows
    monkeypatch.setenv("DISAMBIG_VERIFIER_LM", "openai/gpt-4o")
    assert verifier.verifier_spec() == "openai/gpt-4o"


@pytest.mark.parametrize("command", ["ask", "eval", "compile"])
def test_commands_take_verifier_lm_and_decoding(command):
    from typer.testing import CliRunner

    from disambig.cli.app import app

    help_text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    assert "--verifier-lm" in help_text and "--decoding" in help_text


def test_configure_dspy_sets_the_projects_adapter():
    import dspy

    from disambig.lm import configure_dspy
    from disambig.lm.adapter import CompactJSONAdapter

    configure_dspy("an LM")
    assert dspy.settings.lm == "an LM" and isinstance(dspy.settings.adapter, CompactJSONAdapter)
