"""Error replies of the served program without the server's stack trace.

MLflow's scoring server adds a ``stack_trace`` field to some of its error replies (a CSV body it cannot parse, an
unexpected failure): the server's Python frames, file paths and code lines, sent to whoever made the request. The
client needs the status and the message only, so ``HideStackTraces`` drops that field from every error reply.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
HIDDEN = "stack_trace"


class HideStackTraces:
    """ASGI middleware: a reply with status 400 or more has its JSON ``stack_trace`` field removed (status, other
    headers and fields unchanged); other replies pass through as they are sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def send_without_trace(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held["start"] = message  # sent with the body, once its length is known
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = without_stack_trace(b"".join(chunks))
            start = held["start"]
            headers = [(k, v) for k, v in start.get("headers", []) if bytes(k).lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send_without_trace)


def without_stack_trace(body: bytes) -> bytes:
    """``body`` without its JSON ``stack_trace`` field (unchanged when it is not a JSON object holding one)."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body
    if not isinstance(payload, dict) or HIDDEN not in payload:
        return body
    return json.dumps({k: v for k, v in payload.items() if k != HIDDEN}).encode()
