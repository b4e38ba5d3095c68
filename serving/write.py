"""A bound on the time an answer may wait for its client to read it.

uvicorn hands an answer to the socket with ``transport.write``; whatever the kernel does not take at once (its
socket buffers full because the client reads nothing) stays in the transport's buffer, and ``transport.close()``
waits for that buffer to empty before it closes. A client that never reads therefore keeps its connection, and the
unsent part of its answer in the server's memory, for as long as it stays connected. ``WriteTimeoutProtocol`` closes
a connection whose unsent bytes have not all been taken by the socket ``DISAMBIG_SERVE_WRITE_TIMEOUT`` seconds after
the socket first refused some, dropping them, with one line in the log. It closes with a reset (``drop``), so that
the kernel drops the bytes it had taken too, rather than keeping the closed socket to send them.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from contextlib import suppress
from typing import Any

from disambig.serving.protocol import HeaderTimeoutProtocol

WRITE_TIMEOUT_ENV = "DISAMBIG_SERVE_WRITE_TIMEOUT"
DEFAULT_WRITE_TIMEOUT = 20.0


class WriteTimeoutProtocol(HeaderTimeoutProtocol):
    """``HeaderTimeoutProtocol`` that aborts a connection whose answer waits ``write_timeout`` seconds for the socket.

    The transport is told to pause writing as soon as it holds a byte the socket would not take and to resume once
    it holds none (write buffer limits of 0), so ``pause_writing`` starts the clock and ``resume_writing`` stops it:
    the clock measures one stretch of the socket not taking everything it was given, however slowly bytes trickle
    out meanwhile. uvicorn's own flow control reads the same signal (an app writing a response in several parts
    waits for each to be taken before the next).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.write_timeout = float(os.environ.get(WRITE_TIMEOUT_ENV, DEFAULT_WRITE_TIMEOUT))
        self.stalled_since: float | None = None  # loop time since which the socket has not taken all it was given
        self._write_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        transport.set_write_buffer_limits(high=0, low=0)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_deadline is None:
            self.stalled_since = self.loop.time()
            self._write_deadline = self.loop.call_later(self.write_timeout, self._write_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_write_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_write_clock()
        super().connection_lost(exc)

    def _stop_write_clock(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None
        self.stalled_since = None

    def _write_expired(self) -> None:
        self._write_deadline = None
        self.logger.warning("closing the connection of %s: its answer was not taken by the socket in %g s (%s bytes "
                            "unsent, dropped); the client is not reading", peer(self.client), self.write_timeout,
                            f"{self.transport.get_write_buffer_size():,}")
        drop(self.transport)


def drop(transport: asyncio.BaseTransport) -> None:
    """Close ``transport`` at once with a reset: what it had not sent is dropped, and so is what the kernel holds
    for the client (a plain close would send that first, keeping the socket while the client does not read)."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def peer(client: tuple[str, int] | None) -> str:
    """``host:port`` of a connection's client, or "a client" when the transport did not say."""
    return f"{client[0]}:{client[1]}" if client else "a client"
