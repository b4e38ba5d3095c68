"""A bound on the work the served program holds: ``max_concurrent`` requests answered at once, at most ``max_queue``
waiting for a turn, and HTTP 503 with ``Retry-After`` for any request beyond that.

MLflow's scoring app answers each request in a thread of the event loop's default pool, and a request that finds every
thread busy waits in the pool's queue, which has no bound: past capacity, clients wait with no answer (or time out)
while the server keeps accepting. ``AdmissionLimit`` sits in front of the app, so a request is either answered in its
turn or refused at once with a one-line reason; a refused body is read and dropped (``serving.drain``), never parsed.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from disambig.serving.drain import drain

DEFAULT_MAX_CONCURRENT = 4
DEFAULT_MAX_QUEUE = 16
DEFAULT_DRAIN_BYTES = 16_000_000
LIMITED_PATHS = frozenset({"/invocations"})  # /ping, /health and /version stay answerable under load

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class AdmissionLimit:
    """ASGI middleware: at most ``max_concurrent`` requests to ``LIMITED_PATHS`` reach ``app`` at once and at most
    ``max_queue`` wait for a turn (first come, first served); any other gets HTTP 503 with a JSON error and a
    ``Retry-After`` of the seconds the queue ahead of it would take at the mean time of the requests answered so far.
    A refused request's body, when declared no larger than ``drain_bytes``, is read and dropped first, so that a client
    still sending it reads the 503.

    The counts live on one event loop (one uvicorn worker); ``waiting`` and ``active`` are read by the tests.
    """

    def __init__(self, app: App, max_concurrent: int = DEFAULT_MAX_CONCURRENT, max_queue: int = DEFAULT_MAX_QUEUE,
                 drain_bytes: int = DEFAULT_DRAIN_BYTES) -> None:
        if max_concurrent < 1 or max_queue < 0:
            raise ValueError(f"max_concurrent={max_concurrent} must be at least 1 and max_queue={max_queue} at "
                             "least 0")
        self.app = app
        self.max_concurrent = max_concurrent
        self.max_queue = max_queue
        self.drain_bytes = drain_bytes
        self.active = 0
        self.waiting = 0
        self._turns: asyncio.Semaphore | None = None
        self._answered = 0
        self._seconds = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in LIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        if self.active + self.waiting >= self.max_concurrent + self.max_queue:
            declared = dict(scope.get("headers") or []).get(b"content-length", b"")
            if not declared.isdigit() or int(declared) <= self.drain_bytes:
                await drain(receive, self.drain_bytes)
            await self._refuse(send)
            return
        self._turns = self._turns or asyncio.Semaphore(self.max_concurrent)
        self.waiting += 1
        try:
            await self._turns.acquire()
        finally:
            self.waiting -= 1
        self.active += 1
        began = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self._answered, self._seconds = self._answered + 1, self._seconds + time.monotonic() - began
            self._turns.release()

    def retry_after(self) -> int:
        """Whole seconds until a place is likely free: the queue's turns at the mean time per request, at least 1."""
        mean = self._seconds / self._answered if self._answered else 1.0
        return max(1, math.ceil(mean * (self.waiting + 1) / self.max_concurrent))

    async def _refuse(self, send: Send) -> None:
        seconds = self.retry_after()
        message = (f"the server is at capacity: {self.active} requests being answered and {self.waiting} waiting "
                   f"(limits --max-concurrent {self.max_concurrent}, --max-queue {self.max_queue}); retry after "
                   f"{seconds} s, or send fewer requests at once")
        content = json.dumps({"error_code": "SERVER_BUSY", "message": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()),
                   (b"retry-after", str(seconds).encode())]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": content})
