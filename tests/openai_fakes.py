"""A scripted OpenAI-compatible LM server on loopback: the real remote-LM path (``--lm openai/echo --api-base``, the
key sent as a bearer token) with answers made from the question, so tests need no network and no model.

``GET /v1/models`` lists ``echo``. ``POST /v1/chat/completions`` answers ``{"long_answer": "Scripted answer to Q"}``
for the question ``Q`` of the last user message; a question containing ``HANG`` waits ``hang_s`` seconds first, one
containing ``MALFORMED`` gets a reply that is not JSON, one containing ``BROKEN`` gets HTTP 500. The server records
every Authorization header it receives, and writes no file.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "echo"


def scripted_answer(question: str) -> str:
    return f"Scripted answer to {question}"


class FakeOpenAI(ThreadingHTTPServer):
    """The server; ``start()`` serves it from a daemon thread, ``stop()`` shuts it down."""

    daemon_threads = True

    def __init__(self, hang_s: float = 30.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hang_s = hang_s
        self.auth: list[str] = []
        self.questions: list[str] = []
        self._stop = threading.Event()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()  # a request still hanging returns at once
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.auth.append(self.headers.get("Authorization", ""))
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        self.server.auth.append(self.headers.get("Authorization", ""))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        question = question_of(body)
        self.server.questions.append(question)
        if "HANG" in question:
            self.server._stop.wait(self.server.hang_s)
        if "BROKEN" in question:
            self._json(500, {"error": {"message": "scripted server error", "type": "server_error"}})
            return
        text = "this is not JSON {" if "MALFORMED" in question else json.dumps(
            {"long_answer": scripted_answer(question)})
        self._json(200, completion(text, body))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (its timeout) before the reply
            pass

    def log_message(self, *args: object) -> None:
        pass


def question_of(body: dict[str, Any]) -> str:
    """The question of the request's last user message (the text after ``question:``, else the whole text)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    return text.partition("question:")[2].strip() or text


def completion(text: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": len(text.split()), "total_tokens": 10}}

