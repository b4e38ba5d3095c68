"""``lm serve --parallel N``: N one-model servers on private loopback ports, behind a dispatcher on the public port that
hands each request to a worker that is free.

uvicorn's own ``workers=N`` share one listening socket: whichever worker's event loop accepts first takes the
connection, and a worker that is generating still accepts (its loop is idle while the model runs in a thread), so
two requests at once often queued behind one model while another sat idle (measured: two Spark executors sharing
a 2-worker server took 22 s a question against 11.5 s each loading its own model). The dispatcher keeps the free
workers in a queue: a request waits for one, is forwarded to it whole, and its reply is passed back as it comes.
Each worker is the single-process server (``disambig.lm.server.serve`` with ``parallel=1``), so it finishes replies,
records log-probabilities and answers 503 when stopped exactly as ``--parallel 1`` does; the reply names the worker
that made it in the ``x-disambig-worker`` header.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, replace
from typing import Any

from disambig.errors import ConfigurationError

WORKER_ENV = "DISAMBIG_SERVE_WORKER"
"""The configuration (JSON) a worker process serves, with its private port."""
WORKER_HEADER = b"x-disambig-worker"
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"host",
              b"proxy-connection"}
STOP_GRACE_S = 10.0


def start_workers(config: Any, ready_timeout: float) -> tuple[list[subprocess.Popen], list[str]]:
    """Start ``config.parallel`` one-model servers on free loopback ports, each with ``config.worker_threads``
    threads; return them and their API roots once all answer ``/models``.

    Raises:
        ConfigurationError: a worker exited or did not answer within ``ready_timeout`` seconds (all are stopped).
    """
    from disambig.lm.server import free_loopback_port

    processes, urls = [], []
    for _ in range(config.parallel):
        worker = replace(config, host="127.0.0.1", port=free_loopback_port(), parallel=1,
                         threads=config.worker_threads)
        env = {**os.environ, WORKER_ENV: json.dumps(asdict(worker))}
        processes.append(subprocess.Popen([sys.executable, "-c", "from disambig.lm.server_pool import run_worker; "
                                           "run_worker()"], env=env))
        urls.append(worker.url)
    try:
        for process, url in zip(processes, urls, strict=True):
            _wait_ready(process, url, ready_timeout)
    except BaseException:
        stop_workers(processes)
        raise
    return processes, urls


def _wait_ready(process: subprocess.Popen, url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigurationError(f"an LM server worker exited with {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise ConfigurationError(f"an LM server worker did not answer within {timeout:.0f} s")


def signal_workers(processes: list[subprocess.Popen]) -> None:
    """SIGTERM every running worker: each ends the reply it is generating at its next token (answered 503)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)


def stop_workers(processes: list[subprocess.Popen], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM every worker, then SIGKILL what is left after ``grace`` seconds."""
    signal_workers(processes)
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_worker() -> None:
    """A worker process: serve the configuration in ``DISAMBIG_SERVE_WORKER`` until SIGTERM, and die with the
    dispatcher if it dies first (Linux ``PR_SET_PDEATHSIG``)."""
    from disambig.lm.server import ServeConfig, serve

    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    serve(ServeConfig(**json.loads(os.environ[WORKER_ENV])))


class Dispatcher:
    """The ASGI app on the public port: ``GET .../v1/models`` answered here; every other HTTP request waits for a
    free worker, goes to it whole, and its reply comes back as the worker sends it."""

    def __init__(self, worker_urls: list[str], models_body: bytes) -> None:
        self.worker_urls = worker_urls
        self.models_body = models_body
        self._free: asyncio.Queue[int] | None = None
        self._client: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] != "http":
            return
        elif scope["method"] == "GET" and scope["path"].endswith("/v1/models"):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(self.models_body)).encode())]})
            await send({"type": "http.response.body", "body": self.models_body})
        else:
            await self._forward(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        import httpx

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._free = asyncio.Queue()
                for index in range(len(self.worker_urls)):
                    self._free.put_nowait(index)
                self._client = httpx.AsyncClient(timeout=None)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import httpx

        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its request was complete
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        index = await self._free.get()
        try:
            root = self.worker_urls[index].removesuffix("/v1")
            query = f"?{scope['query_string'].decode()}" if scope.get("query_string") else ""
            headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
            request = self._client.build_request(scope["method"], f"{root}{scope['path']}{query}", headers=headers,
                                                 content=bytes(body))
            try:
                reply = await self._client.send(request, stream=True)
            except httpx.HTTPError as exc:  # the worker died: one failed request, with its reason
                failed = json.dumps({"error": {"message": f"LM server worker {index} did not answer ({exc})",
                                               "type": "worker_unavailable", "param": None, "code": None}}).encode()
                await send({"type": "http.response.start", "status": 502,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(failed)).encode())]})
                await send({"type": "http.response.body", "body": failed})
                return
            try:
                out = [(k, v) for k, v in reply.headers.raw if k.lower() not in HOP_BY_HOP]
                await send({"type": "http.response.start", "status": reply.status_code,
                            "headers": [*out, (WORKER_HEADER, str(index).encode())]})
                async for chunk in reply.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await reply.aclose()
        finally:
            self._free.put_nowait(index)
