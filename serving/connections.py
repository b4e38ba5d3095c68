"""A bound on the connections the server holds open, that slow clients cannot use to lock others out.

Each open connection costs a file descriptor and, while its request arrives, up to ``--max-request-bytes`` of body;
the read and write timeouts bound how long a slow client holds them, not how many do at once. uvicorn's
``--limit-concurrency`` bounds the number, but by answering 503 to every request past it: a flood of slow senders
would then lock out ``/ping`` and every normal client for as long as the flood lasts.

``ConnectionLimitProtocol`` holds at most ``DISAMBIG_SERVE_MAX_CONNECTIONS`` connections. A connection that arrives
past the bound takes the place of the one that has kept the server waiting on its client the longest: still
sending its request (headers or body), idle between requests, or not reading its answer. That one is closed with
no reply, as its read or write timeout would close it later. A connection whose request the server is working on
(read in full, waiting for a turn or being answered) is never taken. Only when every place is held by such work is
the newcomer refused: its request is answered HTTP 503 with a reason, ``Retry-After: 1`` and ``Connection: close``
(its body is not read), and if its headers do not arrive within ``REFUSAL_READ_SECONDS`` it is closed with no reply.

So a flood holds at most the bound, a new client always gets a place while any is held by a waiting connection,
and a slow client keeps its place only until the bound's worth of newer connections arrive.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Protocol, TypeVar

from disambig.serving.write import WriteTimeoutProtocol, drop, peer

MAX_CONNECTIONS_ENV = "DISAMBIG_SERVE_MAX_CONNECTIONS"
DEFAULT_MAX_CONNECTIONS = 64
REFUSAL_READ_SECONDS = 1.0  # a refused connection's request headers are awaited this long, for its 503
RETRY_AFTER_SECONDS = 1  # a place frees when one answer is sent; the answers' times are the admission limit's

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Waiting(Protocol):
    def waiting_since(self) -> float | None: ...


W = TypeVar("W", bound=Waiting)


def longest_waiting(connections: Iterable[W]) -> W | None:
    """The connection whose ``waiting_since()`` is earliest (the first of equals); None when none is waiting."""
    waiting = [(since, number, c) for number, c in enumerate(connections) if (since := c.waiting_since()) is not None]
    return min(waiting, key=lambda item: item[:2])[2] if waiting else None


def check_max_connections(max_connections: int, max_concurrent: int, max_queue: int) -> None:
    """Refuse a bound that leaves no place beyond the requests the admission limit may hold: with every place held
    by a request in progress, ``/ping`` and every newcomer would get 503."""
    if max_connections <= max_concurrent + max_queue:
        raise ValueError(f"--max-connections {max_connections} must be more than --max-concurrent {max_concurrent} + "
                         f"--max-queue {max_queue} = {max_concurrent + max_queue} (each request answered or waiting "
                         f"holds a connection); raise it to at least {max_concurrent + max_queue + 1}")


class ConnectionRefusal:
    """ASGI app for a connection refused past the bound: HTTP 503 with a JSON reason, ``Retry-After`` and
    ``Connection: close``, the body left unread."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = (f"the server holds its limit of {self.max_connections} connections, each with a request being "
                   f"answered or waiting for a turn; retry after {RETRY_AFTER_SECONDS} s, or restart the server "
                   "with a larger --max-connections")
        content = json.dumps({"error_code": "TOO_MANY_CONNECTIONS", "message": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()),
                   (b"retry-after", str(RETRY_AFTER_SECONDS).encode()), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": content})


class ConnectionLimitProtocol(WriteTimeoutProtocol):
    """``WriteTimeoutProtocol`` (read and write timeouts) holding at most ``max_connections`` connections per worker.

    ``disambig serve`` passes it to uvicorn as ``--http disambig.serving.connections:
    ConnectionLimitProtocol``; uvicorn's set of a worker's connections (``self.connections``) is what is counted.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = int(os.environ.get(MAX_CONNECTIONS_ENV, DEFAULT_MAX_CONNECTIONS))
        self.refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        holding = [c for c in self.connections if holds_place(c)]
        if len(holding) <= self.max_connections:
            return
        victim = longest_waiting(c for c in holding if c is not self and isinstance(c, ConnectionLimitProtocol))
        if victim is not None:
            victim.take_place(self.max_connections)
            return
        self.logger.warning("refusing the connection of %s: all %d places hold requests in progress "
                            "(--max-connections %d)", peer(self.client), self.max_connections, self.max_connections)
        self.refused = True
        self.app = ConnectionRefusal(self.max_connections)
        self.read_timeout = min(self.read_timeout, REFUSAL_READ_SECONDS)
        self._arm()

    def waiting_since(self) -> float | None:
        """Loop time since which this connection has kept the server waiting on its client: its answer not taken
        by the socket, its request not all arrived, or no request since its last answer. None while the server works
        on its request."""
        if self.stalled_since is not None:
            return self.stalled_since
        if self.cycle is None or self.cycle.response_complete or self.cycle.more_body:
            return self.awaiting_since
        return None

    def take_place(self, max_connections: int) -> None:
        """Close this connection to make room for a newer one; an answer it was still sending is dropped (``drop``)."""
        since = self.waiting_since()
        waited = self.loop.time() - since if since is not None else 0.0
        self.logger.warning("closing the connection of %s, waiting on its client for %.1f s, to make room for a new "
                            "one (--max-connections %d)", peer(self.client), waited, max_connections)
        if self.stalled_since is not None:
            drop(self.transport)
        else:
            self.transport.abort()


def holds_place(connection: Any) -> bool:
    """Whether ``connection`` (one of uvicorn's) counts against the bound: not a refused one, nor one closed with
    nothing left to send (gone at the event loop's next turn). Other protocols (a WebSocket) count and stay."""
    if getattr(connection, "refused", False):
        return False
    transport = connection.transport
    return not (transport.is_closing() and not transport.get_write_buffer_size())
