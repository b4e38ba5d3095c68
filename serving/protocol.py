"""uvicorn's HTTP/1.1 protocol (h11) with a bound on the time a connection may hold the server without a request.

uvicorn times a connection out only between two requests on it (``--timeout-keep-alive``, 5 s), from the end of a
response: a client that connects and sends nothing, or sends its request line and headers a byte at a time, keeps
its connection (a file descriptor, a protocol object) for as long as it likes (measured on loopback: six such
connections were all still open after 15 s, ``bench/slow_clients.py``). ``HeaderTimeoutProtocol`` closes a
connection whose next request's headers have not all arrived ``DISAMBIG_SERVE_READ_TIMEOUT`` seconds after it opened
or after its last response; the body's own deadline is ``serving.app.BodyLimit``'s. ``disambig serve`` runs it as
the base of ``serving.write.WriteTimeoutProtocol`` and ``serving.connections.ConnectionLimitProtocol``, the protocol
it passes to uvicorn (``--http``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT_ENV = "DISAMBIG_SERVE_READ_TIMEOUT"
DEFAULT_READ_TIMEOUT = 20.0


class HeaderTimeoutProtocol(H11Protocol):
    """``H11Protocol`` that closes a connection left ``read_timeout`` seconds without a request in progress."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout = float(os.environ.get(READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT))
        self._deadline: asyncio.TimerHandle | None = None
        self.awaiting_since = 0.0  # loop time from which the next request is awaited (set when the timer is armed)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self.awaiting_since = self.loop.time()
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.read_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        """No request's headers came in time: close, unless a request is being read or answered (its body has its
        own deadline, its answer ``--timeout``)."""
        self._deadline = None
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.logger.info("closing a connection that sent no complete request headers in %g s", self.read_timeout)
            self.transport.close()
