"""`disambig lm serve`: request adaptation and port checks (fast), and a real server on loopback with the embedded
SmolLM2 answering `disambig ask` over HTTP (slow). Every slow test stops its server, also when it fails."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from disambig.errors import ConfigurationError
from disambig.lm import server as server_module
from disambig.lm.server import OpenAIRequests, check_port, openai_chat_request, serve_config

DISAMBIG = [str(Path(sys.executable).with_name("disambig"))]  # the installed command, as a user runs it
SCHEMA = {"type": "object", "properties": {"person": {"type": "string"}, "year": {"type": "integer"}},
          "required": ["person", "year"]}


def test_a_json_schema_response_format_becomes_the_servers_schema_form():
    body = {"model": "m", "response_format": {"type": "json_schema", "json_schema": {"name": "o", "strict": True,
                                                                                     "schema": SCHEMA}}}
    assert openai_chat_request(body)["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert body["response_format"]["type"] == "json_schema"  # the input is not changed


def test_open_arrays_are_bounded_as_in_process():
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "string"}}}}
    fmt = openai_chat_request({"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}})
    assert fmt["response_format"]["schema"]["properties"]["xs"]["maxItems"] == 6


@pytest.mark.parametrize(("body", "expected"), [
    ({"response_format": {"type": "json_object"}}, {"response_format": {"type": "json_object"}}),
    ({"response_format": {"type": "json_schema", "json_schema": {}}}, {"response_format": {"type": "json_object"}}),
    ({"max_completion_tokens": 64}, {"max_tokens": 64}),
    ({"max_tokens": 32, "max_completion_tokens": 64}, {"max_tokens": 32}),
    ({"repeat_penalty": 1.3}, {"repeat_penalty": 1.3}),
])
def test_other_fields(body, expected):
    assert openai_chat_request(body) == {"repeat_penalty": 1.0, **expected}


def test_a_port_in_use_is_refused_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match=rf"^port {port} on 127.0.0.1 is in use; .* --port$"):
            check_port("127.0.0.1", port)


@pytest.mark.parametrize("host", ["\udcff", "a..b"])  # a byte of the command line that is not UTF-8; an empty label
def test_a_host_that_is_no_host_name_is_named_in_one_line(host):
    """Found by fuzzing the command lines: the IDNA codec's message, naming no option."""
    with pytest.raises(ConfigurationError) as caught:
        check_port(host, 8000)
    assert re.fullmatch(rf"--host {re.escape(repr(host))} is not a host name \(.+\); use e\.g\. 127\.0\.0\.1",
                        str(caught.value))


@pytest.mark.parametrize(("spec", "match"), [
    ("openai/gpt-4o-mini", "is a remote model"),
    ("local:/no/such.gguf", "does not exist"),
])
def test_only_local_models_are_served(spec, match, tmp_path):
    with pytest.raises(ConfigurationError, match=match):
        serve_config(spec, cache_dir=str(tmp_path))


def test_an_embedded_model_is_served_under_its_name(tmp_path):
    config = serve_config("local:smollm2", cache_dir=str(tmp_path), port=8123, parallel=2, threads=2)
    assert (config.model_id, config.url, config.worker_threads) == ("smollm2", "http://127.0.0.1:8123/v1", 1)
    assert config.model_path.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--repeat-penalty", "nan"], "repeat_penalty=nan must be positive and finite; 1.0 turns it off"),
    (["serve", "--repeat-penalty", "inf"], "repeat_penalty=inf must be positive and finite; 1.0 turns it off"),
    (["serve", "--ctx", "99999999999"], "ctx=99999999999 must be within 1-1,048,576 tokens (default 8192)"),
    (["serve", "--threads", "3"], "--threads 3 is more than the 2 core(s) this process may use; the in-process "
                                  "model stalls on threads without a core: give at most 2"),
    (["serve", "--parallel", "100000"], "--parallel 100000 is more than the 2 core(s) this process may use; the "
                                        "in-process model stalls on threads without a core: give at most 2"),
    (["serve", "--prompt-cache-mb", "99999999"], "--prompt-cache-mb 99999999 is more than this machine's 4,096 MB "
                                                 "of memory; give a cache that fits beside the model (e.g. 512)"),
    (["check", "--threads", "99999999999999999999"], "--threads 99999999999999999999 is more than the 2 core(s) "
     "this process may use; the in-process model stalls on threads without a core: give at most 2"),
])
def test_numbers_out_of_range_are_refused_before_the_model_is_located(monkeypatch, tmp_path, args, message):
    """Found by fuzzing the command lines: each of these went on to assemble and load the model."""
    from typer.testing import CliRunner

    from disambig.cli import app

    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("disambig.lm.threads.usable_cores", lambda: 2)
    monkeypatch.setattr("disambig.lm.threads.memory_mb", lambda: 4096)
    monkeypatch.setattr("disambig.lm.spec.local_file", lambda *a: pytest.fail("the model was located"))
    port = ["--port", str(free_port())] if args[0] == "serve" else []
    result = CliRunner().invoke(app, ["lm", *args, *port])
    assert (result.exit_code, result.output.strip()) == (2, f"error: {message}")


class EchoApp:
    """An ASGI app that answers a POST with the body and headers it received; ``generate`` runs while it answers."""

    def __init__(self, generate=lambda: None) -> None:
        self.generate = generate

    async def __call__(self, scope, receive, send):
        message = await receive()
        self.generate()
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        body = json.dumps({"body": json.loads(message["body"]), "headers": headers}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def call(app, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"content-length", b"2")]}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_middleware_rewrites_chat_bodies_with_their_new_length():
    body = json.dumps({"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}}).encode()
    status, reply = call(OpenAIRequests(EchoApp(), "m"), "POST", "/v1/chat/completions", body)
    seen = json.loads(reply)
    assert status == 200 and seen["body"]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert int(seen["headers"]["content-length"]) == len(json.dumps(seen["body"]))


def test_the_middleware_lists_the_model_without_asking_the_app():
    status, reply = call(OpenAIRequests(None, "smollm2"), "GET", "/v1/models")
    assert status == 200 and [m["id"] for m in json.loads(reply)["data"]] == ["smollm2"]


def test_a_generation_cut_by_the_stop_is_answered_503(monkeypatch):
    monkeypatch.setattr(server_module, "STOPPING", threading.Event())
    server_module.STOPPING.set()
    app = OpenAIRequests(EchoApp(generate=lambda: server_module.end_when_stopping([1, 2])), "m")
    status, reply = call(app, "POST", "/v1/chat/completions", b"{}")
    assert status == 503 and json.loads(reply)["error"]["type"] == "server_stopping"


# --- a real server -------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE", "DISAMBIG_THREADS": "1",
            "DISAMBIG_CACHE_DIR": str(tmp_path / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "true"}


@dataclass
class Server:
    process: subprocess.Popen
    url: str
    started_s: float

    def stop(self) -> int:
        """SIGTERM to the server's process group; wait for it (SIGKILL after 30 s). Returns its exit code."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


@contextmanager
def served(tmp_path: Path, name: str, *extra: str) -> Iterator[Server]:
    """`disambig lm serve` (SmolLM2, one thread; ``extra`` options) on a free port, stopped when the block ends
    however it ends."""
    port = free_port()
    log_path = tmp_path / f"{name}.out"
    with log_path.open("w") as log:
        start = time.monotonic()
        process = subprocess.Popen([*DISAMBIG, "lm", "serve", "--model", "local:smollm2", "--port", str(port),
                                    "--threads", "1", "--ctx", "4096", *extra], stdout=log, stderr=subprocess.STDOUT,
                                   env=child_env(tmp_path), start_new_session=True)
        server = Server(process, f"http://127.0.0.1:{port}/v1", 0.0)
        try:
            server.started_s = wait_ready(server, start, log_path)
            yield server
        finally:
            server.stop()


@pytest.fixture
def lm_server(tmp_path) -> Iterator[Server]:
    """`disambig lm serve --model local:smollm2` on a free loopback port, in its own process group; stopped (the
    whole group) when the test ends, however it ends."""
    with served(tmp_path, "server") as server:
        yield server


def wait_ready(server: Server, start: float, log: Path, timeout: float = 120) -> float:
    while time.monotonic() - start < timeout:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{server.url}/models", timeout=2):
                return time.monotonic() - start
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the server did not answer within {timeout} s: {log.read_text()}")


def ask(tmp_path: Path, url: str, corpus: str) -> subprocess.CompletedProcess:
    return subprocess.run([*DISAMBIG, "ask", "What does the aardvark eat?", "--program", "vanilla-rag",
                           "--retriever", "dense", "--corpus", corpus, "--lm", "openai/smollm2", "--api-base", url],
                          capture_output=True, text=True, env=child_env(tmp_path), timeout=600)


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


@pytest.mark.slow
def test_the_server_lists_its_model_and_decodes_under_a_schema_with_logprobs(lm_server):
    with urllib.request.urlopen(f"{lm_server.url}/models") as reply:
        assert [m["id"] for m in json.loads(reply.read())["data"]] == ["smollm2"]
    answer = post(f"{lm_server.url}/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40, "logprobs": True, "top_logprobs": 3,
        "messages": [{"role": "user", "content": "Who first walked on the Moon, and when?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "o", "strict": True, "schema": SCHEMA}}})
    choice = answer["choices"][0]
    assert set(json.loads(choice["message"]["content"])) == {"person", "year"}
    tokens = choice["logprobs"]["content"]  # recorded under the grammar: forced tokens have one alternative
    assert tokens and all(t["top_logprobs"][0]["token"] == t["token"] and t["logprob"] <= 0 for t in tokens)
    assert max(len(t["top_logprobs"]) for t in tokens) == 3
    assert answer["usage"]["completion_tokens"] - len(tokens) in (0, 1)  # the last token is never fed back


@pytest.mark.slow
def test_the_served_verifier_reads_the_same_yes_probability_as_in_process(lm_server, local_lm):
    import dspy

    from disambig.lm import make_lm
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.lm.yes_probability import logprob_config, yes_probability
    from disambig.signatures import VerifyRetrieval

    remote = make_lm("openai/smollm2", api_base=lm_server.url, api_key="none", max_tokens=64)
    asked = {"passages": "[1] Cristiano Ronaldo | Ronaldo has the most international goals in men's football.",
             "question": "Who has the most international goals in men's football?"}
    results = []
    for lm in (local_lm, remote):
        with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
            results.append(dspy.Predict(VerifyRetrieval)(**asked, config=logprob_config(lm)))
    local, served = results
    assert served.toDict().keys() == local.toDict().keys()
    # Read from the decision token's alternatives on both sides (the label fallback would give exactly 0 or 1). The
    # two engines reuse different earlier prompts from their caches (the tests before this one), so the same prompt
    # is prefilled in other batches: on this 4-bit model that moves P(Yes) by up to ~0.01 (0.279 against 0.291 seen).
    local_p, served_p = yes_probability(local.logprobs), yes_probability(served.logprobs)
    assert 0 < served_p < 1 and 0 < local_p < 1
    assert served_p == pytest.approx(local_p, abs=0.03)


@pytest.mark.slow
def test_ask_answers_through_the_server_and_fails_in_one_line_once_it_stops(lm_server, tmp_path, corpus):
    answered = ask(tmp_path, lm_server.url, corpus)
    assert answered.returncode == 0, answered.stderr
    assert "A: " in answered.stdout and "LM calls 2" in answered.stdout

    assert lm_server.stop() == 0
    refused = ask(tmp_path, lm_server.url, corpus)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: cannot reach the LM endpoint {lm_server.url} (connection refused); start its server "
        "(e.g. `disambig lm serve`) or fix --api-base / DISAMBIG_API_BASE")


@pytest.mark.slow
def test_sigterm_stops_the_server_cleanly_and_a_busy_port_is_refused(lm_server, tmp_path):
    second = subprocess.run([*DISAMBIG, "lm", "serve", "--model", "local:smollm2",
                             "--port", lm_server.url.split(":")[-1].removesuffix("/v1")],
                            capture_output=True, text=True, env=child_env(tmp_path), timeout=60)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [
        f"error: port {lm_server.url.split(':')[-1].removesuffix('/v1')} on 127.0.0.1 is in use; stop what listens "
        "there or choose another with --port"]

    assert lm_server.stop() == 0
    log = (tmp_path / "server.out").read_text()
    assert f"ready: {lm_server.url} model id 'smollm2'" in log and log.rstrip().endswith("stopped")
    with pytest.raises(ProcessLookupError):
        os.killpg(lm_server.process.pid, 0)  # nothing of the group is left


@pytest.fixture
def unguarded_server(tmp_path) -> Iterator[Server]:
    """The server with its repetition guard off, so a long reply cannot end early by looping."""
    with served(tmp_path, "server", "--repetition-guard", "off") as server:
        yield server


@pytest.mark.slow
def test_a_reply_in_progress_is_answered_503_when_the_server_stops(unguarded_server):
    lm_server = unguarded_server
    outcome: dict = {}

    def long_reply() -> None:
        try:
            post(f"{lm_server.url}/chat/completions", {
                "model": "smollm2", "temperature": 0, "max_tokens": 3000, "min_tokens": 2000,  # still going at the stop
                "messages": [{"role": "user", "content": "Tell a long story."}]})
        except urllib.error.HTTPError as exc:
            outcome["status"], outcome["body"] = exc.code, json.loads(exc.read())

    asking = threading.Thread(target=long_reply)
    asking.start()
    time.sleep(1.5)
    start = time.monotonic()
    with urllib.request.urlopen(f"{lm_server.url}/models", timeout=5):  # not queued behind the generation
        assert time.monotonic() - start < 1
    start = time.monotonic()
    assert lm_server.stop() == 0
    stopped_s = time.monotonic() - start
    asking.join(timeout=30)
    assert outcome["status"] == 503 and outcome["body"]["error"]["type"] == "server_stopping"
    assert stopped_s < 5


@pytest.mark.slow
def test_two_workers_answer_two_requests_at_once_and_stop_with_the_server(tmp_path):
    """`--parallel 2`: the dispatcher gives the second request to the worker the first one left free (uvicorn's
    shared socket could queue both behind one model); SIGTERM to the command alone stops its workers too."""
    with served(tmp_path, "pool", "--parallel", "2", "--repetition-guard", "off") as server:
        workers: list[str] = []

        def ask(n: int) -> None:
            body = json.dumps({"model": "smollm2", "temperature": 0, "max_tokens": 48,
                               "messages": [{"role": "user", "content": f"Count from {n} upwards in words."}]})
            request = urllib.request.Request(f"{server.url}/chat/completions", data=body.encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as reply:
                assert json.loads(reply.read())["choices"][0]["message"]["content"]
                workers.append(reply.headers["x-disambig-worker"])

        asking = [threading.Thread(target=ask, args=(n,)) for n in (1, 50)]
        for thread in asking:
            thread.start()
        for thread in asking:
            thread.join(timeout=180)
        assert sorted(workers) == ["0", "1"]

        server.process.send_signal(signal.SIGTERM)  # the command's own PID, as `kill PID` sends it
        assert server.process.wait(timeout=30) == 0
        with pytest.raises(ProcessLookupError):
            os.killpg(server.process.pid, 0)  # no worker is left in the group
