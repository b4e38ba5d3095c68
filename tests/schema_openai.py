"""A scripted OpenAI-compatible LM server on loopback that answers any JSON schema: every program's steps run on it
through the real remote-LM path (``--lm openai/scripted --api-base URL``), with no model and no network.

``GET /v1/models`` lists ``scripted``. ``POST /v1/chat/completions`` answers with a JSON object filled from the
request's ``response_format`` schema: every property present, a string as ``scripted FIELD: QUESTION`` (the question
of the last user message), an enum's first value, the integer 1 (the first numbered passage), 0.5, ``true``, one item
per array (its ``minItems`` when more). A request without a schema gets ``{"long_answer": ...}``. The server counts
the completions it answered, and writes no file.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai_fakes import completion, question_of

MODEL = "scripted"


class SchemaOpenAI(ThreadingHTTPServer):
    """The server; ``start()`` serves it from a daemon thread, ``stop()`` shuts it down."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.completions = 0
        self._count = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> SchemaOpenAI:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: SchemaOpenAI

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        question = (question_of(body).splitlines() or [""])[0].strip()[:200]
        reply = fill(schema, schema or {}, question) if schema else {"long_answer": f"scripted answer: {question}"}
        with self.server._count:
            self.server.completions += 1
        self._json(200, completion(json.dumps(reply), body))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def fill(schema: dict[str, Any], root: dict[str, Any], question: str, name: str = "") -> Any:
    """A value that ``schema`` accepts (``$ref`` resolved in ``root``'s ``$defs``), made from ``question``."""
    if "$ref" in schema:
        return fill(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root, question, name)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill(options[0], root, question, name)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "string")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    if kind == "object":
        return {key: fill(sub, root, question, key) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [fill(schema.get("items") or {}, root, question, name) for _ in range(max(1, schema.get("minItems", 1)))]
    return {"integer": 1, "number": 0.5, "boolean": True, "null": None}.get(kind, f"scripted {name}: {question}")
