"""``GET /ping`` of the served program says which LM answers.

MLflow's scoring server answers ``/ping`` with an empty 200. ``disambig serve`` chooses the LM when it starts
(``serving.lm``) and a client, a load balancer's health check or a person with ``curl`` should be able to see it
without reading the server's log: ``PingLM`` answers ``/ping`` with ``{"status": "ok", "lm": SPEC}``, status 200.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
PING = "/ping"


class PingLM:
    """ASGI middleware: ``GET /ping`` gets 200 with ``{"status": "ok", "lm": lm}``; every other request reaches
    ``app`` as it came."""

    def __init__(self, app: App, lm: str) -> None:
        self.app = app
        self.lm = lm

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PING or scope.get("method") not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        content = json.dumps({"status": "ok", "lm": self.lm}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else content})
