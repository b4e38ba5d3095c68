"""The write timeout (``serve --write-timeout``): an answer larger than the socket buffers to a client that reads
none of it is dropped with its connection once the socket has not taken it for the timeout, with one line in the
log, and the server answers others meanwhile; a client that reads gets the whole answer.

A stand-in app answering GET /big with 16 MB (well over loopback's socket buffers: at most 4 MB on the sending
side here, ``net.ipv4.tcp_wmem``, and a 4 KB receive buffer on the non-reader's) in a uvicorn server on loopback with
``disambig serve``'s protocol (``serving_sockets``).
"""

from __future__ import annotations

import socket
import time

import pytest
from serving_sockets import BODY, normal_request, read_until_closed, serving

from disambig.serving.write import WRITE_TIMEOUT_ENV

BIG = 16_000_000


async def big_or_echo(scope, receive, send):
    body = (await receive()).get("body", b"")
    if scope["path"] == "/big":
        body = b"x" * BIG
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def ask_big(port: int, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    return sock


def test_a_client_that_reads_nothing_is_cut_after_the_write_timeout_and_others_are_answered(monkeypatch, caplog):
    """Write timeout 1 s: a question meanwhile is answered; the non-reader's connection leaves the server's set (its
    place freed) within a generous 15 s, the client meets the close before 16 MB, and one line is logged."""
    monkeypatch.setenv(WRITE_TIMEOUT_ENV, "1")
    with serving(big_or_echo) as (port, running), caplog.at_level("WARNING", logger="uvicorn.error"):
        sock = ask_big(port, receive_buffer=4096)
        try:
            assert normal_request(port)[:2] == (200, BODY)
            deadline = time.monotonic() + 15
            while running.server_state.connections and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not running.server_state.connections  # the non-reader's place is free
            received, _ = read_until_closed(sock, 10)
        finally:
            sock.close()
        assert normal_request(port)[:2] == (200, BODY)
    assert len(received) < BIG  # the rest was dropped and the connection reset (what had come may be lost with it)
    cut = [r.message for r in caplog.records if "was not taken by the socket in 1 s" in r.message]
    assert len(cut) == 1 and "bytes unsent, dropped" in cut[0]


@pytest.mark.parametrize("kept_alive", [False, True])
def test_a_client_that_reads_gets_the_whole_large_answer(monkeypatch, kept_alive):
    """With the same limits on the transport's buffer, a reading client gets all 16 MB (and, kept alive, its next
    answer on the same connection)."""
    monkeypatch.setenv(WRITE_TIMEOUT_ENV, "10")
    with serving(big_or_echo) as (port, _):
        with ask_big(port) as sock:
            sock.settimeout(10)
            received = b""
            while b"\r\n\r\n" not in received or len(received.partition(b"\r\n\r\n")[2]) < BIG:
                chunk = sock.recv(1 << 20)
                assert chunk, f"closed after {len(received):,} bytes"
                received += chunk
            assert received.partition(b"\r\n\r\n")[2] == b"x" * BIG
            if kept_alive:
                sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
                answer = b""
                while not answer.endswith(BODY):  # its headers and body may come in two segments
                    chunk = sock.recv(65536)
                    assert chunk, answer
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 200 ")
