"""Slow and misbehaving clients cannot hold the served program: a body sent a byte at a time, or stalled short of its
Content-Length, takes no turn and gets HTTP 408 after the read timeout; a connection that sends nothing, or its
headers a byte at a time, is closed after it; a client gone mid-body leaves no count behind. Meanwhile a normal
request is answered at once.

A stand-in app behind ``AdmissionLimit`` (one turn, no queue) and ``BodyLimit``, as ``disambig serve`` stacks them,
in a uvicorn server on loopback in this process with ``disambig serve``'s protocol (``serving_sockets``) and a read
timeout of 1 s. Before these defences (``bench/slow_clients.py``, retired at ``24f5541``, on a real ``disambig
serve``): six slow senders took every turn and place (a normal request got 503), and no attacking connection of any
kind was closed within 15 s.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest
from serving_sockets import BODY, head, normal_request, read_until_closed, serving, trickle

from disambig.serving.admission import AdmissionLimit
from disambig.serving.app import BodyLimit, serve_command
from disambig.serving.protocol import READ_TIMEOUT_ENV

READ_SECONDS = 1.0


async def echo(scope, receive, send):
    body = (await receive()).get("body", b"")
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def server(monkeypatch):
    """(port, the AdmissionLimit) of a server answering one request at a time with none waiting."""
    monkeypatch.setenv(READ_TIMEOUT_ENV, str(READ_SECONDS))
    admitted = AdmissionLimit(echo, max_concurrent=1, max_queue=0)
    with serving(BodyLimit(admitted, 10_000, read_seconds=READ_SECONDS)) as (port, _):
        yield port, admitted


@pytest.mark.parametrize("kind", ["slow-body", "short-body"])
def test_a_slow_body_takes_no_turn_and_gets_408_after_the_read_timeout(server, kind):
    """Three clients send their headers, then the body a byte every 0.3 s (or 5 bytes of a declared 1,000 and then
    nothing); the only turn stays free: a normal request is answered at once, and each slow client reads a 408 with
    its reason and its connection is closed about 1 s after its headers."""
    port, admitted = server
    stop, socks = threading.Event(), []
    for _ in range(3):
        sock = socket.create_connection(("127.0.0.1", port))
        if kind == "slow-body":
            sock.sendall(head(len(BODY)))
            threading.Thread(target=trickle, args=(sock, BODY, stop), daemon=True).start()
        else:
            sock.sendall(head(1000) + BODY[:5])
        socks.append(sock)
    try:
        status, body, seconds = normal_request(port)
        assert (status, body) == (200, BODY) and seconds < READ_SECONDS
        for sock in socks:
            reply, closed_after = read_until_closed(sock, 5)
            assert reply.startswith(b"HTTP/1.1 408 ") and closed_after < 2 * READ_SECONDS
            assert json.loads(reply.partition(b"\r\n\r\n")[2])["error_code"] == "REQUEST_TIMEOUT"
    finally:
        stop.set()
        for sock in socks:
            sock.close()
    assert (admitted.active, admitted.waiting) == (0, 0)
    assert normal_request(port)[:2] == (200, BODY)


@pytest.mark.parametrize("sent", [b"", b"POST /invoc"])
def test_a_connection_without_complete_headers_is_closed_after_the_read_timeout(server, sent):
    """A client that connects and sends nothing (or part of its request line) is disconnected after about 1 s, with
    no reply; a normal request meanwhile is answered at once."""
    port, _ = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(sent)
        assert normal_request(port)[:2] == (200, BODY)
        reply, closed_after = read_until_closed(sock, 5)
    assert reply == b"" and READ_SECONDS * 0.5 < closed_after < 2 * READ_SECONDS


def test_headers_sent_a_byte_at_a_time_are_cut_off(server):
    """The request line and headers a byte every 0.3 s (about 15 s in all) are cut off about 1 s after connecting."""
    port, _ = server
    stop = threading.Event()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        threading.Thread(target=trickle, args=(sock, head(len(BODY)) + BODY, stop), daemon=True).start()
        reply, closed_after = read_until_closed(sock, 5)
        stop.set()
    assert reply == b"" and closed_after < 2 * READ_SECONDS


def test_a_keep_alive_connection_is_timed_again_after_each_answer(server):
    """After one answer on a kept-alive connection, a second request's headers that never complete are cut off too."""
    port, _ = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head(len(BODY)) + BODY)
        sock.settimeout(5)
        first = b""
        while not first.endswith(b"0\r\n\r\n"):  # the whole chunked answer, which may come in several segments
            received = sock.recv(65536)
            assert received, first
            first += received
        assert first.startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"POST /invocations HTTP/1.1\r\nHost:")
        reply, closed_after = read_until_closed(sock, 10)
    assert reply == b"" and closed_after < 2 * READ_SECONDS  # the data cancelled uvicorn's keep-alive timer


def test_a_client_gone_mid_body_leaves_no_count_behind(server):
    port, admitted = server
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head(len(BODY)) + BODY[:10])
    time.sleep(0.2)
    assert (admitted.active, admitted.waiting) == (0, 0)
    assert normal_request(port)[:2] == (200, BODY)


def test_serve_runs_uvicorn_with_the_serving_protocol_and_the_read_timeout():
    command, env = serve_command("/models/x", "127.0.0.1", 5001, 60, 1000, read_timeout=7)
    assert command[command.index("--http") + 1] == "disambig.serving.connections:ConnectionLimitProtocol"
    assert env[READ_TIMEOUT_ENV] == "7"


def test_body_limit_still_refuses_a_large_body_before_the_deadline():
    """The deadline does not change the 413 of a body over the limit (read in this process, no socket)."""
    import httpx

    async def scenario():
        app = BodyLimit(echo, 10, read_seconds=READ_SECONDS)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
            return await client.post("/invocations", content=b"x" * 11)

    response = asyncio.run(scenario())
    assert response.status_code == 413 and response.json()["error_code"] == "REQUEST_TOO_LARGE"
