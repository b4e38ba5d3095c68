"""Which LM ``disambig serve`` answers with: ``--lm`` (or ``DISAMBIG_LM``), else the LM the model's manifest records
when it is available here, else the default; the startup line and ``GET /ping`` say which. The model folder is made
in the test's folder (no MLflow store, no server process); the scripted LM of ``batch_fakes`` answers."""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager

import httpx
import pytest
from batch_fakes import FACTORY
from typer.testing import CliRunner

from disambig.cli import app
from disambig.optimizers.artifact import save_artifact
from disambig.programs import build_program
from disambig.serving.lm import served_lm
from disambig.serving.ping import PingLM

runner = CliRunner()


def model_folder(tmp_path, lm: str | None):
    """A fetched model's artifacts: a closed-book state and its manifest recording ``lm`` (none when None)."""
    manifest = {"program": "closed-book", "optimizer": "none", **({"lm": lm} if lm is not None else {})}
    save_artifact(build_program("closed-book"), tmp_path / "model" / "artifacts" / "plain.json", manifest)
    return tmp_path / "model"


@pytest.fixture(autouse=True)
def _no_lm_env(monkeypatch):
    monkeypatch.delenv("DISAMBIG_LM", raising=False)


@pytest.mark.parametrize(("flag", "env", "recorded", "spec", "said"), [
    ("openai/gpt-4o-mini", "local", "local:smollm2", "openai/gpt-4o-mini", "openai/gpt-4o-mini (--lm)"),
    (None, "local:qwen2.5-1.5b", "local:smollm2", "local:qwen2.5-1.5b", "local:qwen2.5-1.5b (DISAMBIG_LM)"),
    (None, None, "local:smollm2", "local:smollm2", "local:smollm2 (the LM it was compiled with)"),
    (None, None, "openai/gpt-4o-mini", "openai/gpt-4o-mini", "openai/gpt-4o-mini (the LM it was compiled with)"),
    (None, None, None, "local", "local (the default; the model records no LM)"),
    (None, None, "local:/gone/model.gguf", "local",
     "local (the default; it was compiled with local:/gone/model.gguf, which is not available here (LM spec "
     "'local:/gone/model.gguf': GGUF file '/gone/model.gguf' does not exist; check the path))"),
])
def test_the_served_lm(tmp_path, flag, env, recorded, spec, said):
    chosen = served_lm(model_folder(tmp_path, recorded), flag, env, "local")
    assert (chosen.spec, chosen.describe()) == (spec, said)


@pytest.fixture
def served(monkeypatch, tmp_path):
    """Run ``disambig serve`` on a model whose manifest records local:smollm2; returns the server's environment."""
    handed: dict = {}

    @contextmanager
    def downloaded(model_uri, store):
        yield str(model_folder(tmp_path, "local:smollm2"))

    monkeypatch.setattr("disambig.cli.serve_cmd.downloaded", downloaded)
    monkeypatch.setattr("disambig.cli.process_group.run_as_group", lambda command, env: handed.update(env) or 0)
    monkeypatch.setattr("disambig.lm.server.check_port", lambda host, port: None)  # the default port may be busy
    return handed


def test_serve_answers_with_the_lm_the_model_was_compiled_with(served):
    result = runner.invoke(app, ["serve", "models:/m/1"])
    assert result.exit_code == 0, result.output
    assert served["DISAMBIG_LM"] == "local:smollm2"  # was DISAMBIG_LM or the embedded default, whatever the model
    assert "serving models:/m/1 at http://127.0.0.1:5001 · LM local:smollm2 (the LM it was compiled with)" \
        in result.output


def test_serve_lm_names_the_lm(served):
    result = runner.invoke(app, ["serve", "models:/m/1", "--lm", "openai/gpt-4o-mini"])
    assert result.exit_code == 0, result.output
    assert served["DISAMBIG_LM"] == "openai/gpt-4o-mini" and "LM openai/gpt-4o-mini (--lm)" in result.output


def test_a_bad_lm_is_refused_before_the_model_is_fetched(monkeypatch):
    monkeypatch.setattr("disambig.cli.serve_cmd.downloaded", lambda uri, store: pytest.fail("the model was fetched"))
    monkeypatch.setattr("disambig.lm.server.check_port", lambda host, port: None)
    result = runner.invoke(app, ["serve", "models:/m/1", "--lm", "zzz"])
    assert result.exit_code == 2 and result.output.startswith("error: unknown LM spec 'zzz'"), result.output


def ping(app_) -> httpx.Response:
    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app_), base_url="http://x") as client:
            return await client.get("/ping")

    return asyncio.run(get())


def test_ping_names_the_lm_and_other_paths_reach_the_app():
    async def inner(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["path"].encode()})

    wrapped = PingLM(inner, "local:smollm2")
    reply = ping(wrapped)
    assert reply.status_code == 200 and reply.json() == {"status": "ok", "lm": "local:smollm2"}

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped), base_url="http://x") as client:
            return await client.post("/invocations", content=b"{}")

    assert asyncio.run(post()).text == "/invocations"


def test_the_served_app_pings_with_the_lm_serve_hands_it(monkeypatch, tmp_path):
    from disambig.optimizers.batch import save_pyfunc
    from disambig.serving.app import create_app

    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    monkeypatch.setenv("DISAMBIG_SERVE_MODEL_PATH", str(save_pyfunc(state, tmp_path / "model")))
    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DISAMBIG_LM", "openai/served")
    reply = ping(create_app())
    assert reply.status_code == 200 and json.loads(reply.text) == {"status": "ok", "lm": "openai/served"}
