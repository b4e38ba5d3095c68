"""The bound on open connections and the write timeout of `disambig serve` (loopback, the scripted LM at 0.2 s a call,
limits 2 + 2), each measured with the defence out of reach and in place.

    python bench/connection_limits.py [--senders 200] [--observe 15] [--observe-unread 40] [--out FILE]

flood    --senders connections each send the headers of a 1 MB body and 200 KB of it, then nothing, and connect
         again 1 s after the server closes them; for --observe seconds a question and a /ping are sent each second,
         and the server's sockets (file descriptors, beyond those it had before) and memory are read. Against
         --max-connections 100000 (out of reach) and the default (64).
no-read  a client with a 4 KB receive buffer asks 4 questions of 1 MB each (an answer of about 8 MB, more than
         loopback's socket buffers hold: 4 MB at most on the sending side, net.ipv4.tcp_wmem) and reads nothing; a
         question is sent 2 s in; watched for --observe-unread seconds, then the client reads what it can. Against
         --write-timeout 100000 (out of reach) and the default (20), with --max-request-bytes 8000000 so that such a
         request is let in.
The server's end of each connection is read from /proc/net/tcp (ESTABLISHED or CLOSE_WAIT: not closed by it, counting
those the kernel has accepted and the server not yet; tx_queue: bytes the kernel holds for the client). Prints a
line per run and, with --out, one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory

from load import family, logged_model, rss_mb, served, server_env
from load_clients import question_for, send
from slow_clients import OPEN_STATES, head

LIMITS = ["--max-concurrent", "2", "--max-queue", "2"]
OUT_OF_REACH = "100000"
SENT_OF_BODY = 200_000
UNREAD_QUESTION_CHARS = 1_000_000


def server_sockets(port: int) -> dict[int, tuple[str, int]]:
    """The server's end of each connection to ``port``, by the client's port: (state, tx_queue bytes)."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, remote, state, queues = line.split()[1:5]
            if int(local.rsplit(":", 1)[1], 16) == port and int(remote.rsplit(":", 1)[1], 16) != 0:
                sockets[int(remote.rsplit(":", 1)[1], 16)] = (state, int(queues.split(":")[0], 16))
    return sockets


def socket_fds(pids: set[int]) -> int:
    """Open sockets of ``pids`` together (their file descriptors that are sockets)."""
    count = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                continue
    return count


def ping(port: int) -> dict:
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=15) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        status = type(exc).__name__
    return {"status": status, "seconds": round(time.perf_counter() - began, 3)}


async def slow_sender(port: int, stop: threading.Event, counts: Counter) -> None:
    """Connect, send a 1 MB body's headers and SENT_OF_BODY bytes of it, wait until the server closes; again 1 s
    later, until ``stop``."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            counts["connect_failed"] += 1
            await asyncio.sleep(1.0)
            continue
        counts["opened"] += 1
        writer.write(head(1_000_000) + b"x" * SENT_OF_BODY)
        closed = asyncio.ensure_future(reader.read())
        while not stop.is_set() and not closed.done():
            await asyncio.wait([closed], timeout=0.2)
        if closed.done():
            counts["closed_by_server"] += 1
            closed.exception()  # a reset is a close too
        else:
            closed.cancel()
        writer.transport.abort()
        await asyncio.sleep(1.0)


def flood(port: int, senders: int, stop: threading.Event, counts: Counter) -> threading.Thread:
    async def all_senders() -> None:
        await asyncio.gather(*(slow_sender(port, stop, counts) for _ in range(senders)))

    thread = threading.Thread(target=asyncio.run, args=(all_senders(),), daemon=True)
    thread.start()
    return thread


def run_flood(port: int, pid: int, senders: int, observe: float, log: Path) -> dict:
    rss_start, fds_start = rss_mb(family(pid)), socket_fds(family(pid))
    stop, counts = threading.Event(), Counter()
    thread = flood(port, senders, stop, counts)
    time.sleep(3.0)
    questions, pings, held, fds, rss = [], [], [], [], []
    began = time.monotonic()
    while time.monotonic() - began < observe:
        held.append(sum(state in OPEN_STATES for state, _ in server_sockets(port).values()))
        fds.append(socket_fds(family(pid)) - fds_start)
        rss.append(rss_mb(family(pid)))
        outcome = send(port, question_for("flood", len(questions)), len(questions), timeout=15)
        questions.append({"kind": outcome.kind, "seconds": round(outcome.seconds, 3)})
        pings.append(ping(port))
        time.sleep(max(0.0, 1.0 - outcome.seconds))
    stop.set()
    thread.join(timeout=30)
    time.sleep(1.0)
    after = [send(port, question_for("after", i), i, timeout=15).kind for i in range(2)]
    text = log.read_text(encoding="utf-8", errors="replace")
    seconds = sorted(q["seconds"] for q in questions)
    return {"senders": senders, "server_socket_fds_max": max(fds), "server_socket_fds": fds,
            "tcp_open_max": max(held), "rss_mb_start": rss_start, "rss_mb_max": max(rss),
            "questions": Counter(q["kind"] for q in questions), "question_s_median": seconds[len(seconds) // 2],
            "question_s_max": seconds[-1],
            "pings": Counter(str(p["status"]) for p in pings), "ping_s_max": max(p["seconds"] for p in pings),
            "senders_opened": counts["opened"], "senders_closed_by_server": counts["closed_by_server"],
            "senders_connect_failed": counts["connect_failed"],
            "log_made_room": text.count("to make room for a new one"), "log_refused": text.count("refusing the "),
            "after": after}


def unread_request() -> bytes:
    body = json.dumps({"inputs": [question_for("unread", i) + " x" * (UNREAD_QUESTION_CHARS // 2)
                                  for i in range(4)]}).encode()
    return head(len(body)) + body


def read_all(sock: socket.socket, seconds: float) -> tuple[int, str]:
    """Bytes read until the server closes or ``seconds`` pass with nothing to read, and how it ended."""
    sock.settimeout(seconds)
    total = 0
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            return total, "still open"
        except ConnectionResetError:
            return total, "reset"
        if not chunk:
            return total, "closed"
        total += len(chunk)


def run_unread(port: int, pid: int, observe: float, log: Path) -> dict:
    rss_start = rss_mb(family(pid))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    peer = sock.getsockname()[1]
    began = time.monotonic()
    sock.sendall(unread_request())
    sent_s = round(time.monotonic() - began, 2)
    time.sleep(2.0)
    during = send(port, question_for("during", 0), 0, timeout=15)
    closed_at, kernel_max, rss = None, 0, []
    while time.monotonic() - began < observe:
        state, queued = server_sockets(port).get(peer, ("gone", 0))
        kernel_max = max(kernel_max, queued)
        rss.append(rss_mb(family(pid)))
        if state not in OPEN_STATES and closed_at is None:
            closed_at = round(time.monotonic() - began, 1)
        time.sleep(0.5)
    read, ended = read_all(sock, 10)
    sock.close()
    time.sleep(1.0)
    after = [send(port, question_for("after", i), i, timeout=15).kind for i in range(2)]
    text = log.read_text(encoding="utf-8", errors="replace")
    cut = [line.split(" - ")[-1] for line in text.splitlines() if "was not taken by the socket" in line]
    return {"request_sent_s": sent_s, "during": {"kind": during.kind, "seconds": round(during.seconds, 2)},
            "closed_by_server_at_s": closed_at, "observed_s": observe, "kernel_tx_queue_max": kernel_max,
            "rss_mb_start": rss_start, "rss_mb_max": max(rss), "rss_mb_end": rss[-1],
            "client_read_at_end": read, "client_read_ended": ended, "log_write_timeout": cut, "after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senders", type=int, default=200)
    parser.add_argument("--observe", type=float, default=15.0, help="seconds the flood is watched")
    parser.add_argument("--observe-unread", type=float, default=40.0, help="seconds the non-reader is watched")
    parser.add_argument("--scenarios", default="flood,no-read")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from disambig.evaluation.code_version import code_stamp

    scenarios = args.scenarios.split(",")
    runs = [("flood", ["--max-connections", OUT_OF_REACH]), ("flood", []),
            ("no-read", ["--max-request-bytes", "8000000", "--write-timeout", OUT_OF_REACH]),
            ("no-read", ["--max-request-bytes", "8000000"])]
    report = {"command": "python bench/connection_limits.py " + " ".join(sys.argv[1:]), "limits": LIMITS,
              "load_average": os.getloadavg(), "code": code_stamp(), "runs": []}
    with TemporaryDirectory(prefix="bench-connections-") as folder:
        store, model_uri = logged_model(Path(folder))
        for number, (scenario, flags) in enumerate(runs):
            if scenario not in scenarios:
                continue
            log = Path(folder) / f"server-{number}.log"
            with served(model_uri, store, server_env("scripted", 0.2, 1), LIMITS + flags, log) as (port, pid):
                if scenario == "flood":
                    figures = run_flood(port, pid, args.senders, args.observe, log)
                else:
                    figures = run_unread(port, pid, args.observe_unread, log)
            report["runs"].append({"scenario": scenario, "flags": flags, "load_average": os.getloadavg(), **figures})
            print(json.dumps(report["runs"][-1]), flush=True)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
