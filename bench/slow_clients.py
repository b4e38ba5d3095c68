"""Slow and misbehaving clients against `disambig serve` (loopback, the scripted LM): for each attack, whether a normal
question sent during it is answered promptly, whether the server closes the attacking connections and after how
long, and whether --max-concurrent questions sent together after the attackers leave are all answered.

    python bench/slow_clients.py [--attackers 6] [--observe 30] [--read-timeout S] [--out FILE]

Attacks (each run by --attackers connections at once, against limits 2 + 2):
  slow-body      headers, then the body one byte a second
  short-body     Content-Length 1,000, 20 bytes sent, then nothing
  idle           connects and sends nothing
  slow-headers   the request line and headers one byte a second
  drop-mid-body  headers and half the body, then closes
  drop-waiting   the whole request, then closes before the answer
  no-read        4 questions of 100 KB each (an answer of ~800 KB), receive buffer of 4 KB, never reads
Whether the server closed an attacking connection is read from /proc/net/tcp (the server's end of it leaves
ESTABLISHED / CLOSE_WAIT). Prints one JSON document (also written to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory

from load import logged_model, served, server_env
from load_clients import question_for, send

LIMITS = ["--max-concurrent", "2", "--max-queue", "2"]
OPEN_STATES = {"01", "08"}  # ESTABLISHED, CLOSE_WAIT: the server has not closed its end


def body_of(questions: int) -> bytes:
    return json.dumps({"inputs": [question_for("atk", i) for i in range(questions)]}).encode()


def head(length: int) -> bytes:
    return (f"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def trickle(sock: socket.socket, data: bytes, stop: threading.Event) -> None:
    """Send ``data`` one byte a second until it is sent, the server closes, or ``stop`` is set."""
    for byte in data:
        if stop.wait(1.0):
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return


def attack(kind: str, port: int, stop: threading.Event) -> socket.socket:
    """Open one attacking connection of ``kind`` and start its misbehaviour; returns its socket."""
    sock = socket.socket()
    if kind == "no-read":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    body = body_of(1)
    if kind == "slow-body":
        sock.sendall(head(len(body)))
        threading.Thread(target=trickle, args=(sock, body, stop), daemon=True).start()
    elif kind == "short-body":
        sock.sendall(head(1000) + body[:20])
    elif kind == "slow-headers":
        threading.Thread(target=trickle, args=(sock, head(len(body)) + body, stop), daemon=True).start()
    elif kind == "drop-mid-body":
        sock.sendall(head(len(body)) + body[: len(body) // 2])
        sock.close()
    elif kind == "drop-waiting":
        sock.sendall(head(len(body)) + body)
        sock.close()
    elif kind == "no-read":
        big = json.dumps({"inputs": [question_for("atk", i) + " x" * 50_000 for i in range(4)]}).encode()
        sock.sendall(head(len(big)) + big)
    return sock


def server_ends(port: int) -> dict[int, str]:
    """The state of the server's end of each connection to ``port``, by the client's port."""
    states = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, remote, state = line.split()[1:4]
            if int(local.rsplit(":", 1)[1], 16) == port:
                states[int(remote.rsplit(":", 1)[1], 16)] = state
    return states


def run_attack(kind: str, port: int, attackers: int, observe: float) -> dict:
    stop = threading.Event()
    began = time.monotonic()
    socks = [attack(kind, port, stop) for _ in range(attackers)]
    peers = {s.getsockname()[1] for s in socks if s.fileno() != -1}
    time.sleep(2.0)
    during = send(port, question_for("during", 0), 0, timeout=15)
    closed_at: dict[int, float] = {}
    while time.monotonic() - began < observe and len(closed_at) < len(peers):
        ends = server_ends(port)
        for peer in peers - set(closed_at):
            if ends.get(peer) not in OPEN_STATES:
                closed_at[peer] = round(time.monotonic() - began, 1)
        time.sleep(0.25)
    stop.set()
    for sock in socks:
        sock.close()
    time.sleep(1.0)
    with ThreadPoolExecutor(2) as pool:
        after = list(pool.map(lambda i: send(port, question_for("after", i), i, timeout=15), range(2)))
    return {"attack": kind, "during": {"kind": during.kind, "seconds": round(during.seconds, 2)},
            "closed_by_server": f"{len(closed_at)}/{len(peers)}",
            "closed_after_s": sorted(closed_at.values()), "observed_s": observe,
            "after": [o.kind for o in after], "after_s": [round(o.seconds, 2) for o in after]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attackers", type=int, default=6)
    parser.add_argument("--observe", type=float, default=30.0, help="seconds each attack is watched")
    parser.add_argument("--read-timeout", type=int, default=None, help="the server's (its default when not given)")
    parser.add_argument("--attacks", default="slow-body,short-body,idle,slow-headers,drop-mid-body,drop-waiting,"
                                             "no-read")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from disambig.evaluation.code_version import code_stamp

    limits = LIMITS + (["--read-timeout", str(args.read_timeout)] if args.read_timeout else [])
    report = {"command": "python bench/slow_clients.py " + " ".join(sys.argv[1:]), "limits": limits,
              "load_average": os.getloadavg(), "code": code_stamp(), "attacks": []}
    with TemporaryDirectory(prefix="bench-slow-") as folder:
        store, model_uri = logged_model(Path(folder))
        with served(model_uri, store, server_env("scripted", 0.2, 1), limits, Path(folder) / "server.log") as (port, _):
            for kind in args.attacks.split(","):
                report["attacks"].append(run_attack(kind, port, args.attackers, args.observe))
                print(json.dumps(report["attacks"][-1]), flush=True)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
