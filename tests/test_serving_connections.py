"""The bound on open connections (``serve --max-connections``): past it a new connection takes the place of the one
that has kept the server waiting on its client the longest, so slow senders cannot lock out a normal client or
/ping; a connection whose request is being answered keeps its place, and when every place is held by one, the new
connection gets HTTP 503 with its reason and Retry-After, and is served again once a place frees.

A stand-in app behind ``AdmissionLimit`` (one turn, no queue) and ``BodyLimit``, as ``disambig serve`` stacks them,
in a uvicorn server on loopback with ``disambig serve``'s protocol (``serving_sockets``); a read timeout of 5 s, so
that no slow sender here is closed by it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.error

import pytest
from serving_sockets import BODY, head, normal_request, read_until_closed, serving, still_open

from disambig.serving.admission import AdmissionLimit
from disambig.serving.app import BodyLimit
from disambig.serving.connections import MAX_CONNECTIONS_ENV, check_max_connections, longest_waiting
from disambig.serving.protocol import READ_TIMEOUT_ENV

READ_SECONDS = 5.0


class Waiting:
    def __init__(self, since: float | None) -> None:
        self.since = since

    def waiting_since(self) -> float | None:
        return self.since


@pytest.mark.parametrize(("sinces", "expected"), [
    ([5.0, None, 2.0, 9.0], 2),  # waiting since 2.0: the longest; the one being answered (None) is never taken
    ([3.0, 3.0], 0),  # equal: the first
    ([None, None], None),  # every one being answered: none to take the place of
    ([], None),
])
def test_longest_waiting_is_the_earliest_waiting_connection(sinces, expected):
    connections = [Waiting(since) for since in sinces]
    chosen = longest_waiting(connections)
    assert chosen is (connections[expected] if expected is not None else None)


@pytest.mark.parametrize(("connections", "concurrent", "queue"), [(20, 4, 16), (2, 1, 1), (1, 1, 0)])
def test_a_bound_without_a_place_beyond_the_admitted_requests_is_refused(connections, concurrent, queue):
    with pytest.raises(ValueError, match=f"--max-connections {connections} must be more than --max-concurrent "
                                         f"{concurrent} \\+ --max-queue {queue}"):
        check_max_connections(connections, concurrent, queue)


def test_serve_records_the_bound_and_the_write_timeout_and_refuses_a_bound_too_low(monkeypatch):
    from typer.testing import CliRunner

    from disambig.cli import app, process_group, serve_cmd

    seen = {}
    monkeypatch.setattr(serve_cmd, "downloaded", lambda uri, store: _folder("/models/m"))
    monkeypatch.setattr(process_group, "run_as_group", lambda command, env: seen.update(command=command, env=env) or 0)
    monkeypatch.setattr("disambig.lm.server.check_port", lambda host, port: None)  # the default port may be busy here
    served = CliRunner().invoke(app, ["serve", "models:/m/1", "--tracking-uri", "sqlite:///x.db",
                                      "--max-connections", "30", "--write-timeout", "7"])
    assert served.exit_code == 0, served.output
    assert (seen["env"]["DISAMBIG_SERVE_MAX_CONNECTIONS"], seen["env"]["DISAMBIG_SERVE_WRITE_TIMEOUT"]) == ("30", "7")
    http = seen["command"][seen["command"].index("--http") + 1]
    assert http == "disambig.serving.connections:ConnectionLimitProtocol"
    seen.clear()
    refused = CliRunner().invoke(app, ["serve", "models:/m/1", "--max-connections", "20"])  # defaults 4 + 16
    assert refused.exit_code == 2 and "raise it to at least 21" in refused.output and not seen


def _folder(path):
    from contextlib import nullcontext

    return nullcontext(path)


def stand_in(gate: threading.Event, entered: list) -> AdmissionLimit:
    """Echoes the body (with its length); a request to /hold waits for ``gate`` first (not limited by the turn)."""

    async def app(scope, receive, send):
        body = (await receive()).get("body", b"")
        if scope["path"] == "/hold":
            entered.append(scope["client"])
            while not gate.is_set():
                await asyncio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return AdmissionLimit(app, max_concurrent=1, max_queue=0)


@pytest.fixture
def gated(monkeypatch):
    """(port, server, gate, clients entered at /hold) with the bound given by the test's ``MAX_CONNECTIONS_ENV``."""
    monkeypatch.setenv(READ_TIMEOUT_ENV, str(READ_SECONDS))
    gate, entered = threading.Event(), []
    with serving(BodyLimit(stand_in(gate, entered), 10_000, read_seconds=READ_SECONDS)) as (port, running):
        yield port, running, gate, entered
        gate.set()


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_past_the_bound_a_new_connection_takes_the_place_of_the_longest_waiting_slow_sender(gated, monkeypatch,
                                                                                            caplog):
    """Bound 3, held by three senders stalled mid-body, oldest first: a normal request is answered at once and the
    oldest sender is closed for it; a fourth sender fills the bound again, and /ping is answered, the second oldest
    closed for it; the two newest stay."""
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, "3")
    port, running, _, _ = gated
    senders = []

    def stall(held: int) -> None:
        """One more sender stalled mid-body, once the server holds ``held`` open connections with it."""
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head(len(BODY)) + BODY[:5])
        senders.append(sock)
        assert wait_for(lambda: sum(still_here(c) for c in list(running.server_state.connections)) == held)

    try:
        with caplog.at_level("WARNING", logger="uvicorn.error"):
            for held in (1, 2, 3):
                stall(held)
            status, body, seconds = normal_request(port)
            assert (status, body) == (200, BODY) and seconds < READ_SECONDS / 2
            reply, closed_after = read_until_closed(senders[0], 5)
            assert reply == b"" and closed_after < 2
            assert still_open(senders[1]) and still_open(senders[2])
            stall(3)
            assert normal_request(port, "/ping")[0] == 200
            assert read_until_closed(senders[1], 5)[0] == b""
            assert still_open(senders[2]) and still_open(senders[3])
        made_room = [r for r in caplog.records if "to make room for a new one (--max-connections 3)" in r.message]
        assert len(made_room) == 2
    finally:
        for sock in senders:
            sock.close()


def still_here(connection) -> bool:
    return not connection.transport.is_closing()


def test_with_every_place_answering_a_new_connection_gets_503_and_is_served_once_a_place_frees(gated, monkeypatch):
    """Bound 2, both places held by requests being answered (/hold): /ping gets 503 with the reason and Retry-After at
    once; once both are answered (their connections kept open, idle), /ping is answered in the place of one of them,
    and a question next in the place /ping left."""
    monkeypatch.setenv(MAX_CONNECTIONS_ENV, "2")
    port, running, gate, entered = gated
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        for sock in held:
            sock.sendall(head(len(BODY), "/hold") + BODY)
        assert wait_for(lambda: len(entered) == 2)
        began = time.monotonic()
        with pytest.raises(urllib.error.HTTPError) as refused:
            normal_request(port, "/ping")
        assert refused.value.code == 503 and time.monotonic() - began < 2
        assert refused.value.headers["Retry-After"] == "1"
        assert json.loads(refused.value.read())["error_code"] == "TOO_MANY_CONNECTIONS"
        gate.set()
        for sock in held:
            assert read_answer(sock).endswith(BODY)
        assert normal_request(port, "/ping")[0] == 200
        assert sorted(still_open(sock) for sock in held) == [False, True]
        assert normal_request(port)[:2] == (200, BODY)  # in the place /ping left: the idle one stays
        assert sorted(still_open(sock) for sock in held) == [False, True]
    finally:
        for sock in held:
            sock.close()


def read_answer(sock: socket.socket) -> bytes:
    """One answer with a Content-Length, read whole from a connection kept open."""
    sock.settimeout(10)
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    headers, _, body = received.partition(b"\r\n\r\n")
    length = int(headers.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return headers + b"\r\n\r\n" + body
