"""The HTTP app ``disambig serve`` runs: MLflow's scoring server for a compiled program's pyfunc model, behind a limit
on the work it holds (``serving.admission``), and that behind a bound on the size of a request body and the time it
may take to arrive.

MLflow's server reads and parses any body, however large, and the program then tokenises it; a body over the limit
is refused here with HTTP 413 before any of that. uvicorn builds the app with ``create_app`` (``--factory``), from
the variables ``serve_command`` sets: nothing is loaded when this module is imported.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from disambig.serving.admission import DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUE, AdmissionLimit
from disambig.serving.connections import DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS_ENV
from disambig.serving.drain import drain
from disambig.serving.errors import HideStackTraces
from disambig.serving.ping import PingLM
from disambig.serving.protocol import DEFAULT_READ_TIMEOUT, READ_TIMEOUT_ENV
from disambig.serving.write import DEFAULT_WRITE_TIMEOUT, WRITE_TIMEOUT_ENV

MODEL_PATH_ENV = "DISAMBIG_SERVE_MODEL_PATH"
MAX_BYTES_ENV = "DISAMBIG_MAX_REQUEST_BYTES"
DEFAULT_MAX_BYTES = 1_000_000
DRAIN_FACTOR = 16  # a refused body up to 16 times the limit is read (and dropped) so that its client gets the 413
MAX_CONCURRENT_ENV = "DISAMBIG_SERVE_MAX_CONCURRENT"
MAX_QUEUE_ENV = "DISAMBIG_SERVE_MAX_QUEUE"
TIMEOUT_ENV = "MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT"  # read by MLflow's scoring server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: a request whose body is over ``max_bytes`` gets HTTP 413 with a JSON error (the declared
    ``Content-Length`` is checked first; a body without one is counted as it arrives), and never reaches ``app``; one
    whose body has not arrived in full ``read_seconds`` after its headers gets HTTP 408 and its connection is closed.

    The whole body is read here before ``app`` sees the request, so a client sending it slowly (or stalling short of
    its ``Content-Length``) holds no place of the ``AdmissionLimit`` behind. The rest of a refused body, up to
    ``drain_factor`` times the limit, is read and dropped before the 413 is sent (``serving.drain``), so that its
    client reads the reason. A body declared larger than that is refused at once.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int,
                 drain_factor: int = DRAIN_FACTOR, read_seconds: float = DEFAULT_READ_TIMEOUT) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.drain_factor = drain_factor
        self.read_seconds = read_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            async with asyncio.timeout(self.read_seconds):
                body = await self._read(scope, receive, send)
        except TimeoutError:
            await self._time_out(send)
            return
        if body is None:
            return
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive_body() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, receive_body, send)

    async def _read(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The request's body; None when it was refused (413 sent) or its client went away."""
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            if int(declared) <= self.max_bytes * self.drain_factor:
                await drain(receive, self.max_bytes * self.drain_factor)
            await self._refuse(send, int(declared))
            return None
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await drain(receive, self.max_bytes * self.drain_factor, len(body), more)
                await self._refuse(send, len(body), exact=False)
                return None
        return body

    async def _time_out(self, send: Send) -> None:
        message = (f"the request body did not arrive in full within {self.read_seconds:g} s of its headers; send the "
                   f"whole body at once, or restart the server with a larger --read-timeout")
        content = json.dumps({"error_code": "REQUEST_TIMEOUT", "message": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()),
                   (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 408, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _refuse(self, send: Send, size: int, exact: bool = True) -> None:
        measured = f"{size:,} bytes" if exact else f"over {self.max_bytes:,} bytes"
        message = (f"request body of {measured} is over the server's limit of {self.max_bytes:,} bytes; send fewer "
                   f"or shorter questions per request, or restart the server with a larger --max-request-bytes")
        content = json.dumps({"error_code": "REQUEST_TOO_LARGE", "message": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": content})


def create_app() -> BodyLimit:
    """MLflow's scoring app for the model folder in ``DISAMBIG_SERVE_MODEL_PATH`` (its error replies without stack
    traces, ``serving.errors``; its ``/ping`` naming the LM of ``DISAMBIG_LM``, ``serving.ping``), behind
    ``AdmissionLimit`` with the limits in ``DISAMBIG_SERVE_MAX_CONCURRENT`` and ``DISAMBIG_SERVE_MAX_QUEUE``, behind
    ``BodyLimit`` with the limit in ``DISAMBIG_MAX_REQUEST_BYTES`` and the deadline in ``DISAMBIG_SERVE_READ_TIMEOUT``:
    a body is read in full before the request takes a place, and a refused request's body is never parsed."""
    from mlflow.pyfunc import scoring_server

    from disambig.settings import load_settings

    model = scoring_server.load_model_with_mlflow_config(os.environ[MODEL_PATH_ENV])
    max_bytes = int(os.environ.get(MAX_BYTES_ENV, DEFAULT_MAX_BYTES))
    admitted = AdmissionLimit(HideStackTraces(PingLM(scoring_server.init(model), load_settings().lm)),
                              int(os.environ.get(MAX_CONCURRENT_ENV, DEFAULT_MAX_CONCURRENT)),
                              int(os.environ.get(MAX_QUEUE_ENV, DEFAULT_MAX_QUEUE)), max_bytes * DRAIN_FACTOR)
    return BodyLimit(admitted, max_bytes, read_seconds=float(os.environ.get(READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT)))


def serve_command(model_path: str, host: str, port: int, timeout: int, max_bytes: int,
                  max_concurrent: int = DEFAULT_MAX_CONCURRENT, max_queue: int = DEFAULT_MAX_QUEUE,
                  read_timeout: float = DEFAULT_READ_TIMEOUT, write_timeout: float = DEFAULT_WRITE_TIMEOUT,
                  max_connections: int = DEFAULT_MAX_CONNECTIONS) -> tuple[list[str], dict]:
    """The uvicorn command (this Python's) that serves the model folder ``model_path``, and the variables it needs.

    Its HTTP protocol is ``serving.connections.ConnectionLimitProtocol`` (uvicorn's h11 one, closing a connection
    that sends no complete request headers within ``read_timeout`` seconds or whose answer waits ``write_timeout``
    seconds for the socket, and holding at most ``max_connections`` connections)."""
    command = [sys.executable, "-m", "uvicorn", "--factory", f"{__name__}:create_app", "--host", host,
               "--port", str(port), "--workers", "1",
               "--http", "disambig.serving.connections:ConnectionLimitProtocol"]
    return command, {MODEL_PATH_ENV: model_path, MAX_BYTES_ENV: str(max_bytes), TIMEOUT_ENV: str(timeout),
                     MAX_CONCURRENT_ENV: str(max_concurrent), MAX_QUEUE_ENV: str(max_queue),
                     READ_TIMEOUT_ENV: f"{read_timeout:g}", WRITE_TIMEOUT_ENV: f"{write_timeout:g}",
                     MAX_CONNECTIONS_ENV: str(max_connections)}
