"""The preflight of a remote LM: one GET /models against a stub OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from disambig.errors import ConfigurationError
from disambig.lm import endpoint

SECRET = "sk-test-secret-0123"


class Stub(ThreadingHTTPServer):
    """Answers GET /v1/models with ``status`` and ``body``; records the Authorization headers it was sent."""

    def __init__(self, status: int = 200, body: bytes = b"") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status, self.body, self.auth = status, body, []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.auth.append(self.headers.get("Authorization"))
        found = self.path == "/v1/models"
        self.send_response(self.server.status if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.server.body if found else b"{}")

    def log_message(self, *args: object) -> None:
        pass


def models(*ids: str) -> bytes:
    return json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()


@pytest.fixture
def serve_stub() -> Iterator:
    started = []

    def start(status: int = 200, body: bytes = models("smollm2")) -> Stub:
        stub = Stub(status, body)
        threading.Thread(target=stub.serve_forever, daemon=True).start()
        started.append(stub)
        return stub

    yield start
    for stub in started:
        stub.shutdown()
        stub.server_close()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(endpoint, "_checked", set())
    for name in (*endpoint.API_KEY_ENVS, "DISAMBIG_API_BASE"):
        monkeypatch.setenv(name, "")  # so that teardown also removes what --api-base puts in the environment
        monkeypatch.delenv(name)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_listed_model_passes_and_is_checked_once(serve_stub, monkeypatch):
    stub = serve_stub()
    monkeypatch.setenv("DISAMBIG_API_KEY", SECRET)
    kwargs = endpoint.remote_kwargs("openai/smollm2", stub.base + "/")
    endpoint.remote_kwargs("openai/smollm2", stub.base)
    assert kwargs == {"api_base": stub.base, "api_key": SECRET}
    assert stub.auth == [f"Bearer {SECRET}"]  # one request for two builds


def test_without_a_key_a_placeholder_is_sent(serve_stub):
    stub = serve_stub()
    assert endpoint.remote_kwargs("openai/smollm2", stub.base)["api_key"] == endpoint.NO_KEY
    assert stub.auth == [f"Bearer {endpoint.NO_KEY}"]


@pytest.mark.parametrize(("status", "body", "model", "match"), [
    (200, models("smollm2"), "qwen", r"does not serve model 'qwen' \(it serves: smollm2\); use --lm openai/smollm2"),
    (200, models("a", "b"), "c", r"does not serve model 'c' \(it serves: a, b\)$"),
    (401, b'{"detail": "Invalid API key"}', "smollm2", r"rejected the API key \(HTTP 401\); set DISAMBIG_API_KEY"),
    (403, b"{}", "smollm2", r"rejected the API key \(HTTP 403\)"),
    (500, b"{}", "smollm2", r"answered GET /models with HTTP 500"),
    (200, b"<html>", "smollm2", r"not a model list; --api-base should be the API root"),
])
def test_endpoint_errors_are_one_line_without_the_key(serve_stub, monkeypatch, status, body, model, match):
    stub = serve_stub(status, body)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(ConfigurationError, match=match) as caught:
        endpoint.remote_kwargs(f"openai/{model}", stub.base)
    assert "\n" not in str(caught.value) and SECRET not in str(caught.value)


def test_a_base_without_v1_is_told_so(serve_stub):
    stub = serve_stub()
    with pytest.raises(ConfigurationError, match=r"has no /models \(HTTP 404\).*ending in /v1"):
        endpoint.remote_kwargs("openai/smollm2", stub.base.removesuffix("/v1"))


def test_an_unreachable_endpoint_names_the_fix():
    base = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ConfigurationError, match=r"cannot reach the LM endpoint .* \(connection refused\); start"):
        endpoint.remote_kwargs("openai/smollm2", base)


def test_providers_without_a_model_list_are_not_asked():
    base = f"http://127.0.0.1:{closed_port()}/v1"
    assert endpoint.remote_kwargs("ollama_chat/qwen2.5", base)["api_base"] == base


def test_build_lm_sends_a_remote_spec_to_the_api_base_with_json_schemas(serve_stub):
    from disambig.lm.runtime import build_lm
    from disambig.settings import Settings

    stub = serve_stub()
    lm = build_lm(Settings(lm="openai/smollm2", api_base=stub.base))
    assert isinstance(lm, endpoint.EndpointLM) and lm.kwargs["api_base"] == stub.base
    assert lm.supports_response_schema and "response_format" in lm.supported_params
    assert lm.kwargs["max_tokens"] == 256


def test_build_lm_ignores_the_api_base_for_a_local_spec(serve_stub):
    from disambig.lm.runtime import build_lm
    from disambig.settings import Settings

    stub = serve_stub()
    lm = build_lm(Settings(lm="local:smollm2", api_base=stub.base))
    assert "api_base" not in lm.kwargs and stub.auth == []


def test_the_api_base_comes_from_the_environment(monkeypatch):
    from disambig.settings import load_settings

    monkeypatch.setenv("DISAMBIG_API_BASE", "http://127.0.0.1:9/v1")
    assert load_settings().api_base == "http://127.0.0.1:9/v1"


def test_eval_against_an_unreachable_endpoint_exits_2_and_writes_nothing(tmp_path, monkeypatch, asqa_file):
    from disambig.cli import app

    monkeypatch.setenv("DISAMBIG_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "closed-book", "--dataset", asqa_file, "--lm", "openai/smollm2",
                                      "--api-base", f"http://127.0.0.1:{closed_port()}/v1", "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the LM endpoint")
    assert SECRET not in result.output
    assert not out.exists() and not (tmp_path / "mlflow.db").exists()


def test_the_key_is_not_in_the_lms_saved_state_nor_in_the_settings(serve_stub, monkeypatch):
    from dataclasses import asdict

    from disambig.lm.runtime import build_lm
    from disambig.settings import load_settings

    stub = serve_stub()
    monkeypatch.setenv("DISAMBIG_API_KEY", SECRET)
    monkeypatch.setenv("DISAMBIG_API_BASE", stub.base)
    settings = load_settings(lm="openai/smollm2")
    lm = build_lm(settings)
    assert lm.kwargs["api_key"] == SECRET  # sent to the endpoint ...
    assert SECRET not in json.dumps(lm.dump_state(), default=str)  # ... and nowhere else
    assert SECRET not in json.dumps(asdict(settings))


def test_replies_stopped_by_the_token_cap_count_as_cut_by_length():
    from types import SimpleNamespace

    from disambig.lm.endpoint import record_capped_replies
    from disambig.lm.usage import measured

    def entry(*finishes: str, usage: dict | None = None) -> dict:
        choices = [SimpleNamespace(finish_reason=f) for f in finishes]
        return {"usage": {"completion_tokens": 5} if usage is None else usage,
                "response": SimpleNamespace(choices=choices)}

    with measured() as trace:
        record_capped_replies(entry("length"))
        record_capped_replies(entry("stop", "length"))
        record_capped_replies(entry("stop"))
        record_capped_replies(entry("length", usage={}))  # answered from the cache: no new reply
    assert (trace.cut_by_length, trace.cut_by_repetition) == (2, 0)
