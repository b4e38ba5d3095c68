"""A uvicorn server on loopback in the test's process with ``disambig serve``'s HTTP protocol, and the raw-socket
clients the slow-client, connection-bound and write-timeout tests use. The protocol reads its settings
(``DISAMBIG_SERVE_READ_TIMEOUT``, ``..._WRITE_TIMEOUT``, ``..._MAX_CONNECTIONS``) from the environment at each
connection: set them with ``monkeypatch.setenv`` before connecting."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from disambig.serving.connections import ConnectionLimitProtocol

BODY = b'{"inputs": ["Who won?"]}'


@contextmanager
def serving(app: Any) -> Iterator[tuple[int, uvicorn.Server]]:
    """(port, server) of ``app`` served on a free loopback port until the block ends. uvicorn's log records go to
    the root logger (no logging configuration of its own), where ``caplog`` reads them."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off",
                            http=ConnectionLimitProtocol)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port, running
    finally:
        running.should_exit = True
        thread.join(timeout=10)


def head(length: int, path: str = "/invocations") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()


def trickle(sock: socket.socket, data: bytes, stop: threading.Event) -> None:
    """Send ``data`` a byte every 0.3 s until it is sent, the server closes, or ``stop`` is set."""
    for byte in data:
        if stop.wait(0.3):
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return


def normal_request(port: int, path: str = "/invocations") -> tuple[int, bytes, float]:
    """(status, body, seconds) of a POST of ``BODY`` (GET when ``path`` is /ping) on a new connection."""
    began = time.monotonic()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if path == "/ping" else BODY)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read(), time.monotonic() - began


def read_until_closed(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and when it closed (seconds from now)."""
    began, received = time.monotonic(), b""
    sock.settimeout(seconds)
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return received, time.monotonic() - began
        received += chunk


def still_open(sock: socket.socket, seconds: float = 0.3) -> bool:
    """Whether the server has neither closed ``sock`` nor sent on it within ``seconds``."""
    sock.settimeout(seconds)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except TimeoutError:
        return True
    except ConnectionResetError:
        return False
    return False
