from __future__ import annotations

import socket

import pytest

from disambig.errors import ConfigurationError
from disambig.lm import make_lm, parse_spec
from disambig.lm.paths import SMOLLM2_FILE


def test_local_smollm2_resolves_to_packaged_gguf(tmp_path):
    spec = parse_spec("local:smollm2")
    assert spec.is_local and spec.embedded.name == "smollm2" and spec.model_name == SMOLLM2_FILE
    path = spec.embedded.locate(tmp_path)
    assert path.name == SMOLLM2_FILE and path.is_file()


def test_local_path_spec(tmp_path):
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    assert parse_spec(f"local:{model}").gguf == model


def test_litellm_spec_passes_through():
    spec = parse_spec("openai/gpt-4o-mini")
    assert not spec.is_local and spec.model == spec.model_name == "openai/gpt-4o-mini"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("gpt4", "unknown LM spec"),
        ("local:/nonexistent/model.gguf", "does not exist"),
    ],
)
def test_bad_specs_are_rejected_with_the_fix(spec, match):
    with pytest.raises(ConfigurationError, match=match):
        parse_spec(spec)


def test_a_home_of_no_user_is_a_missing_path_not_a_traceback():
    """Found by fuzzing ``data spiderqa --lm``: ``local:~0`` raised Path.expanduser's RuntimeError (no user '0')."""
    with pytest.raises(ConfigurationError, match="'~disambig-no-such-user/m.gguf' does not exist"):
        parse_spec("local:~disambig-no-such-user/m.gguf")


def test_not_a_gguf(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"x")
    with pytest.raises(ConfigurationError, match="not a .gguf"):
        parse_spec(f"local:{path}")


def test_a_gguf_path_that_is_not_a_model_is_refused_before_llama_cpp(tmp_path, monkeypatch):
    """Found by fuzzing ``lm serve --model``: llama.cpp found out only when it loaded the file."""
    from typer.testing import CliRunner

    from disambig.cli import app

    path = tmp_path / "notes.gguf"
    path.write_bytes(b"not a model")
    message = f"LM spec 'local:{path}': '{path}' is not a GGUF model (it does not start with 'GGUF'); give the path " \
              "of a .gguf file"
    with pytest.raises(ConfigurationError, match="is not a GGUF model"):
        parse_spec(f"local:{path}")
    monkeypatch.setattr("disambig.lm.server.serve", lambda *a, **kw: pytest.fail("a server ran"))
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    result = CliRunner().invoke(app, ["lm", "serve", "--model", f"local:{path}", "--port", port, "--threads", "1"])
    assert (result.exit_code, " ".join(result.output.split())) == (2, f"error: {message}")


def test_litellm_lm_keeps_its_settings():
    lm = make_lm("openai/gpt-4o-mini", temperature=0.3, max_tokens=100, api_base="http://127.0.0.1:9/v1", api_key="k")
    assert lm.model == "openai/gpt-4o-mini"
    assert lm.kwargs["temperature"] == 0.3 and lm.kwargs["max_tokens"] == 100
    assert lm.kwargs["api_base"] == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("spec", ["zzz/yy", "a b/c"])
def test_a_provider_litellm_does_not_know_is_refused_in_one_line_before_any_call(monkeypatch, spec, capsys):
    """Found by fuzzing ``lm check --lm``: LiteLLM said so only at the first call, with a traceback."""
    from dspy.clients.base_lm import BaseLM
    from typer.testing import CliRunner

    from disambig.cli import app

    with pytest.raises(ConfigurationError, match=f"LM spec '{spec}': LiteLLM knows no provider"):
        make_lm(spec)
    assert "Provider List" not in capsys.readouterr().out  # LiteLLM's banner is not printed
    monkeypatch.setattr(BaseLM, "__call__", lambda *a, **kw: pytest.fail("an LM was called"))
    result = CliRunner().invoke(app, ["lm", "check", "--lm", spec])
    assert (result.exit_code, result.output.strip()) == (2, f"error: LM spec '{spec}': LiteLLM knows no provider "
                                                            f"'{spec.split('/')[0]}'; use 'local', 'local:NAME', "
                                                            "'local:/path/model.gguf' or a LiteLLM string like "
                                                            "'openai/gpt-4o-mini'")


def test_every_provider_taken_without_litellm_is_one_litellm_routes():
    """``KNOWN_PROVIDERS`` spares each command LiteLLM's import; a name LiteLLM does not route would accept a spec it
    refuses at the first call."""
    from disambig.lm.cost import use_local_price_map
    from disambig.lm.spec import KNOWN_PROVIDERS

    use_local_price_map()
    import litellm

    routed = {getattr(p, "value", p) for p in litellm.provider_list}
    assert KNOWN_PROVIDERS <= routed, sorted(KNOWN_PROVIDERS - routed)
    for provider in KNOWN_PROVIDERS:
        assert litellm.get_llm_provider(f"{provider}/some-model")[1] == provider


def test_a_remote_lm_of_a_known_provider_is_built_without_importing_litellm(tmp_path):
    """In a fresh interpreter (the process a command runs in): building ``openai/...`` with an API base loads no
    LiteLLM; an unknown provider still asks it."""
    import subprocess
    import sys

    code = ("import sys; from disambig.lm import make_lm; make_lm('openai/m', api_base='http://127.0.0.1:9/v1'); "
            "print('litellm' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert done.stdout.split() == ["False"], done.stderr[-2000:]


def test_local_lm_refuses_api_base():
    with pytest.raises(ConfigurationError, match="api_base"):
        make_lm("local", api_base="http://127.0.0.1:9/v1")


def test_local_lm_is_lazy():
    lm = make_lm("local")
    assert lm.engine._llama is None  # nothing loaded until the first call


@pytest.mark.parametrize("given", [None, ""])
def test_an_empty_cache_dir_means_the_settings_cache_not_the_working_directory(monkeypatch, tmp_path, given):
    from types import SimpleNamespace

    from disambig.lm import spec as spec_module

    asked = []
    embedded = SimpleNamespace(locate=lambda cache_dir: asked.append(cache_dir) or tmp_path / "m.gguf", sha256="x")
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    spec_module.local_file(SimpleNamespace(embedded=embedded), given)
    assert asked == [str(tmp_path / "cache")]
