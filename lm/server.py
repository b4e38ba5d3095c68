"""Serve an embedded model (or any GGUF) over HTTP with llama-cpp-python's OpenAI-compatible server.

``disambig lm serve`` runs ``llama_cpp.server`` (the ``[server]`` extra: FastAPI + uvicorn) with the same GGUF,
hash check, CPU backend and decoding defaults as the in-process engine, so ``--lm openai/MODEL_ID --api-base URL``
asks the same model over HTTP: ``/v1/models``, ``/v1/chat/completions`` with a JSON schema in ``response_format``
(decoded under a grammar) and token ``logprobs``.

Two things about the maintained server are adapted in front of it, request by request, by ``OpenAIRequests``:
it reads a schema only as ``{"type": "json_object", "schema": ...}`` (OpenAI clients send ``{"type":
"json_schema", "json_schema": {"schema": ...}}``), and its repetition penalty defaults to 1.1 where the embedded
engine's is 1.0. And replies are made as the embedded engine makes them (``disambig.lm.served_replies``): the model
is loaded without ``logits_all`` (which doubled prefill time) and log-probabilities are recorded per request under
the response grammar, the repetition guard stops a looping reply, and a capped JSON reply ends at its last whole
sentence. Log-probabilities are therefore served for non-streamed chat completions only; a streamed chat completion
or a ``/v1/completions`` request asking for them is answered HTTP 400 before the model is asked.

llama-cpp-python's server answers one request at a time per process; ``parallel`` > 1 runs that many one-model
servers on private loopback ports behind a dispatcher that gives each request to a free one
(``disambig.lm.server_pool``), each with its own context (the weights are memory-mapped, so shared).

On Ctrl-C or SIGTERM a reply being generated ends at its next token and its request is answered HTTP 503 ("the LM
server stopped before the reply was complete"), so a client counts it as failed, not as a short answer, and the
server stops within a second instead of finishing a long reply first.
"""

from __future__ import annotations

import contextvars
import errno
import json
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from disambig.errors import ConfigurationError
from disambig.lm.repetition import DEFAULT_GUARD, LoopRule
from disambig.lm.schema import bounded_schema
from disambig.lm.served_replies import CURRENT, ServedRequest, finish_reply, take_wishes

GRACEFUL_SHUTDOWN_S = 1  # a worker's reply in progress is dropped after this (one process: cut at once, HTTP 503)
READY_TIMEOUT_S = 600.0
STOPPING = threading.Event()
"""Set once this process's server begins to stop: every generation then ends at its next token."""
STOPPED_REPLY = json.dumps({"error": {"message": "the LM server stopped before the reply was complete",
                                      "type": "server_stopping", "param": None, "code": None}}).encode()
LOGPROBS_REFUSED = json.dumps({"error": {
    "message": "log-probabilities are served for non-streamed /v1/chat/completions only (the model is loaded "
               "without logits_all; they are recorded per reply); ask without stream, on /v1/chat/completions",
    "type": "invalid_request_error", "param": "logprobs", "code": None}}).encode()
_interrupted: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("interrupted", default=None)
"""The request being answered's flag, set when ``STOPPING`` cut its generation (read in the generating thread,
which runs in a copy of the request's context)."""


class StoppingServer(uvicorn.Server):
    """uvicorn's server, which also sets ``STOPPING`` (and calls ``on_stop``) as soon as Ctrl-C or SIGTERM
    arrives."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    def handle_exit(self, sig: int, frame: Any) -> None:
        STOPPING.set()
        if self.on_stop is not None:
            self.on_stop()
        super().handle_exit(sig, frame)


def end_when_stopping(input_ids: Any, logits: Any = None) -> bool:
    """A llama-cpp-python stopping criterion: True once ``STOPPING`` is set, marking the request as interrupted."""
    if not STOPPING.is_set():
        return False
    flag = _interrupted.get()
    if flag is not None:
        flag.set()
    return True


@dataclass(frozen=True)
class ServeConfig:
    """What ``serve`` runs: the GGUF, the id clients name it by, where it listens, and how it decodes.

    Attributes:
        model_path: the GGUF file.
        model_id: the model id ``/v1/models`` lists and requests name (``--lm openai/MODEL_ID``).
        sha256: the pinned hash checked before the model loads (None when nothing is pinned for the file).
        host, port: where the server listens.
        parallel: requests answered at once (worker processes).
        ctx: context window of each worker, in tokens.
        threads: CPU threads in all; each worker gets ``threads // parallel`` (at least 1).
        repeat_penalty: the repetition penalty of requests that do not set one (the embedded engine's default, 1.0).
        repetition_guard: ``NxR`` or ``off``: stop a reply once a run of N words occurs R times (as in-process).
        prompt_cache_mb: KV states of earlier calls kept for prefix reuse (0: off). Faster, but a reply may then
            depend on which requests came before it: a prompt resumed from a cached prefix can decode differently
            from one prefilled whole, so with several clients at once the answers depend on their order.
    """

    model_path: str
    model_id: str
    sha256: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    parallel: int = 1
    ctx: int = 8192
    threads: int = 2
    repeat_penalty: float = 1.0
    repetition_guard: str = DEFAULT_GUARD
    prompt_cache_mb: int = 0

    @property
    def url(self) -> str:
        """The API root clients pass as ``--api-base``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def worker_threads(self) -> int:
        return max(1, self.threads // self.parallel)


def serve_config(spec: str, *, cache_dir: str, host: str = "127.0.0.1", port: int = 8000, parallel: int = 1,
                 ctx: int = 8192, threads: int = 2, repeat_penalty: float = 1.0,
                 repetition_guard: str = DEFAULT_GUARD, prompt_cache_mb: int = 0) -> ServeConfig:
    """The ``ServeConfig`` of a local LM spec (``local``, ``local:NAME``, ``local:/path/model.gguf``).

    The model id is the embedded model's name (``smollm2``, ``qwen2.5-0.5b``) or the GGUF file's stem. An embedded
    model assembled from chunks is assembled (and verified) here if it is not in ``cache_dir`` yet.

    Raises:
        ConfigurationError: the spec names a remote model, a setting is out of range (also: a prompt cache larger
            than the machine's memory), or the guard is malformed.
    """
    from disambig.lm.spec import local_file, parse_spec
    from disambig.lm.threads import memory_mb
    from disambig.settings import MAX_CTX

    LoopRule.parse(repetition_guard)
    parsed = parse_spec(spec)
    if not parsed.is_local:
        raise ConfigurationError(f"lm serve serves a local model (local, local:NAME or local:/path/model.gguf); "
                                 f"{spec!r} is a remote model, use it directly with --lm")
    if parallel < 1 or threads < 1 or not 1 <= ctx <= MAX_CTX or prompt_cache_mb < 0 or not 0 < port < 65536:
        raise ConfigurationError(f"parallel={parallel}, threads={threads} must be at least 1, ctx={ctx} within "
                                 f"1-{MAX_CTX:,}, prompt_cache_mb={prompt_cache_mb} at least 0 and port={port} "
                                 "within 1-65535")
    memory = memory_mb()
    if memory is not None and prompt_cache_mb > memory:
        raise ConfigurationError(f"--prompt-cache-mb {prompt_cache_mb} is more than this machine's {memory:,} MB "
                                 "of memory; give a cache that fits beside the model (e.g. 512)")
    path, sha256 = local_file(parsed, cache_dir)
    model_id = parsed.embedded.name if parsed.embedded is not None else path.stem
    return ServeConfig(model_path=str(path), model_id=model_id, sha256=sha256, host=host, port=port,
                       parallel=parallel, ctx=ctx, threads=threads, repeat_penalty=repeat_penalty,
                       repetition_guard=repetition_guard, prompt_cache_mb=prompt_cache_mb)


def check_port(host: str, port: int) -> None:
    """Refuse a port something already listens on, before any model loads.

    Raises:
        ConfigurationError: the address is in use or cannot be bound.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigurationError(f"--host {host!r} does not resolve ({exc.strerror}); use e.g. 127.0.0.1") from None
    except UnicodeError as exc:  # not a host name at all (a byte that is not UTF-8, an empty label)
        raise ConfigurationError(f"--host {host!r} is not a host name ({exc}); use e.g. 127.0.0.1") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is not "in use"
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigurationError(f"port {port} on {host} is in use; stop what listens there or choose "
                                         "another with --port") from None
            raise ConfigurationError(f"cannot listen on {host}:{port} ({exc.strerror})") from None


def build_app(config: ServeConfig) -> Any:
    """llama-cpp-python's FastAPI app with the model loaded, behind ``OpenAIRequests``.

    Raises:
        MissingDependencyError: llama-cpp-python's ``[server]`` extra is not installed.
        ModelIntegrityError: the GGUF does not match its pinned hash (it is deleted).
    """
    from disambig.lm.chunks import verify_or_discard
    from disambig.lm.llama_engine import load_cpu_backends

    try:
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError as exc:
        from disambig.errors import MissingDependencyError

        raise MissingDependencyError(f"llama-cpp-python's server is not installed ({exc.name} is missing); install "
                                     "it with `pip install 'llama-cpp-python[server]'` (or `make install`)") from None
    if config.sha256 is not None:
        verify_or_discard(config.model_path, config.sha256, Path(config.model_path).name)
    load_cpu_backends()  # a runtime-dispatch build of llama.cpp loads no CPU backend by itself
    model = ModelSettings(model=config.model_path, model_alias=config.model_id, n_ctx=config.ctx,
                          n_threads=config.worker_threads, n_threads_batch=config.worker_threads,
                          logits_all=False,  # log-probabilities are recorded per request (served_replies)
                          verbose=False)
    app = create_app(server_settings=ServerSettings(host=config.host, port=config.port), model_settings=[model])
    _prepare_model(config.prompt_cache_mb)
    return OpenAIRequests(app, config.model_id, repeat_penalty=config.repeat_penalty,
                          rule=LoopRule.parse(config.repetition_guard))


def _prepare_model(prompt_cache_mb: int) -> None:
    """Make the loaded model's generations end once ``STOPPING`` is set (``disambig.lm.guard`` adds the criterion),
    run each request's guard and log-probability recorder (``served_replies.hook_generations``), and, if
    ``prompt_cache_mb`` > 0, give it the in-process engine's prompt cache (a call resumes from the KV state of
    whichever earlier call shares the longest prefix, not only the previous one). The server keeps its one model in
    a module global, read through its own proxy (pinned llama-cpp-python)."""
    from llama_cpp.server import app as server_module

    from disambig.lm.guard import add_stopping_criterion
    from disambig.lm.prompt_cache import enable_prompt_cache
    from disambig.lm.served_replies import hook_generations

    llama = server_module._llama_proxy(None)
    if prompt_cache_mb > 0:
        enable_prompt_cache(llama, prompt_cache_mb)
    add_stopping_criterion(llama, end_when_stopping)
    hook_generations(llama)


def serve(config: ServeConfig, on_ready: Callable[[], None] | None = None) -> None:
    """Serve until Ctrl-C or SIGTERM, then stop cleanly and return.

    ``on_ready`` is called once ``/v1/models`` answers. The model loads before the port is taken (a bad model fails
    before anything listens); with ``parallel`` > 1 each worker process loads its own first
    (``disambig.lm.server_pool``), and a stop is passed on to them, so a reply in progress is answered 503.

    Raises:
        ConfigurationError: the port is in use, or a worker did not start.
    """
    from disambig.lm.server_pool import Dispatcher, signal_workers, start_workers, stop_workers

    check_port(config.host, config.port)
    workers: list[Any] = []
    if config.parallel == 1:
        target: Any = build_app(config)
    else:
        workers, urls = start_workers(config, READY_TIMEOUT_S)
        target = Dispatcher(urls, models_body(config.model_id))
    try:
        if on_ready is not None:
            threading.Thread(target=_call_when_ready, args=(config.url, on_ready), daemon=True).start()
        options = {"host": config.host, "port": config.port, "log_level": "warning", "access_log": False,
                   "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S}
        with _stop_quietly():
            StoppingServer(uvicorn.Config(target, **options), on_stop=lambda: signal_workers(workers)).run()
    finally:
        stop_workers(workers)


def _call_when_ready(url: str, on_ready: Callable[[], None], timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                if reply.status == 200:
                    on_ready()
                    return
        except OSError:
            pass
        time.sleep(0.2)


@contextmanager
def _stop_quietly() -> Iterator[None]:
    """While serving, Ctrl-C and SIGTERM only stop the server: uvicorn shuts down on them and raises them again
    once done, which these handlers absorb, so the command returns instead of dying with a traceback."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def models_body(model_id: str) -> bytes:
    """The ``GET /v1/models`` reply listing ``model_id``."""
    return json.dumps({"object": "list", "data": [{"id": model_id, "object": "model", "owned_by": "me",
                                                   "permissions": []}]}).encode()


def free_loopback_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def openai_chat_request(body: dict[str, Any], repeat_penalty: float = 1.0) -> dict[str, Any]:
    """An OpenAI chat-completions request body as llama-cpp-python's server reads it (a new dict).

    - ``response_format: {"type": "json_schema", "json_schema": {"schema": S}}`` becomes ``{"type": "json_object",
      "schema": S'}``, S' being S with its open arrays bounded as the embedded engine bounds them
      (``disambig.lm.schema.bounded_schema``); without a schema it is plain JSON mode.
    - ``max_completion_tokens`` (OpenAI's newer name) becomes ``max_tokens`` when that is not given.
    - ``repeat_penalty`` defaults to ``repeat_penalty`` (the server's own default is 1.1).
    """
    out = dict(body)
    fmt = out.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        out["response_format"] = {"type": "json_object", **({"schema": bounded_schema(schema)} if schema else {})}
    if "max_tokens" not in out and out.get("max_completion_tokens") is not None:
        out["max_tokens"] = out["max_completion_tokens"]
    out.pop("max_completion_tokens", None)
    out.setdefault("repeat_penalty", repeat_penalty)
    return out


class UnservedLogprobs(Exception):
    """A request asks for log-probabilities the served model cannot give (``OpenAIRequests`` answers it HTTP 400)."""


async def _send_json(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class OpenAIRequests:
    """ASGI middleware in front of llama-cpp-python's app: answer ``GET .../models`` itself (the app's own route
    waits for the model lock, so behind a long reply); rewrite each ``POST .../chat/completions`` body with
    ``openai_chat_request``, its log-probability wishes taken out (``served_replies``), and its reply finished as the
    embedded engine finishes one; answer HTTP 400 a request for log-probabilities it cannot give (streamed, or on
    ``/v1/completions``); answer a request whose generation the server's stop cut short with HTTP 503; set
    ``STOPPING`` when the app is told to shut down. Everything else passes through untouched."""

    def __init__(self, app: Any, model_id: str, repeat_penalty: float = 1.0, rule: LoopRule | None = None) -> None:
        self.app = app
        self.rule = rule
        self.models = models_body(model_id)
        self.repeat_penalty = repeat_penalty

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watch_shutdown(receive), send)
        elif scope["type"] == "http" and scope["method"] == "GET" and scope["path"].endswith("/v1/models"):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(self.models)).encode())]})
            await send({"type": "http.response.body", "body": self.models, "more_body": False})
        elif scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
        else:
            request = None
            if scope["path"].endswith("/completions"):  # chat or plain: either may ask for log-probabilities
                try:
                    scope, receive, request = await self._rewritten(scope, receive)
                except UnservedLogprobs:
                    await _send_json(send, 400, LOGPROBS_REFUSED)
                    return
            if scope is not None:
                await self._answer(scope, receive, send if request is None else self._finishing(send, request),
                                   request)

    @staticmethod
    def _watch_shutdown(receive: Any) -> Any:
        async def watched() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                STOPPING.set()
            return message

        return watched

    @staticmethod
    def _finishing(send: Any, request: ServedRequest) -> Any:
        """``send`` with the reply's body held until complete, then passed through ``finish_reply``."""
        start: dict[str, Any] | None = None
        chunks: list[bytes] = []

        async def send_finished(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            if start["status"] == 200:
                body = finish_reply(body, request)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        return send_finished

    async def _answer(self, scope: dict[str, Any], receive: Any, send: Any,
                      request: ServedRequest | None = None) -> None:
        flag = threading.Event()
        token = _interrupted.set(flag)
        wishes = CURRENT.set(request)
        sent_reply = False

        async def send_or_refuse(message: dict[str, Any]) -> None:
            nonlocal sent_reply
            if not flag.is_set():
                await send(message)
            elif message["type"] == "http.response.start":
                await send({"type": "http.response.start", "status": 503,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(STOPPED_REPLY)).encode())]})
            elif message["type"] == "http.response.body" and not sent_reply:
                sent_reply = True
                await send({"type": "http.response.body", "body": STOPPED_REPLY, "more_body": False})

        try:
            await self.app(scope, receive, send_or_refuse)
        finally:
            _interrupted.reset(token)
            CURRENT.reset(wishes)

    async def _rewritten(self, scope: dict[str, Any],
                         receive: Any) -> tuple[dict[str, Any] | None, Any, ServedRequest | None]:
        """The scope and receive channel of the rewritten request (None when the client left before its body), and
        the request's ``ServedRequest`` (None for a body that is not a JSON object: the server refuses it)."""
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, receive, None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body, request = self._rewrite(b"".join(chunks), chat=scope["path"].endswith("/chat/completions"))
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return {**scope, "headers": headers}, replay, request

    def _rewrite(self, body: bytes, chat: bool = True) -> tuple[bytes, ServedRequest | None]:
        """A chat completion's body as the server reads it and its ``ServedRequest``; a plain completion's body as
        sent.

        Raises:
            UnservedLogprobs: the request asks for log-probabilities that llama-cpp-python cannot give without
                ``logits_all`` (a streamed chat completion, a plain completion) and ``served_replies`` does not record.
        """
        try:
            parsed = json.loads(body)
        except ValueError:
            return body, None  # the server answers malformed JSON with its own 422
        if not isinstance(parsed, dict):
            return body, None
        if not chat:
            if parsed.get("logprobs") is not None:  # an int there: 0 still asks for the chosen token's
                raise UnservedLogprobs
            return body, None
        if parsed.get("stream"):  # streamed replies pass through as the server makes them
            if parsed.get("logprobs"):
                raise UnservedLogprobs
            return json.dumps(openai_chat_request(parsed, self.repeat_penalty)).encode(), None
        out, request = take_wishes(openai_chat_request(parsed, self.repeat_penalty), self.rule)
        return json.dumps(out).encode(), request
