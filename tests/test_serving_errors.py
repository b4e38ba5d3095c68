"""The served program's error replies carry the status and the reason, never the server's stack trace."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from disambig.serving.errors import HideStackTraces


def replying(status: int, payload: dict):
    async def app(scope, receive, send):
        body = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body[:5], "more_body": True})
        await send({"type": "http.response.body", "body": body[5:]})

    return app


def test_an_error_reply_loses_its_stack_trace_and_keeps_the_rest():
    payload = {"error_code": "BAD_REQUEST", "message": "no columns", "stack_trace": "Traceback ... /srv/app.py"}
    response = TestClient(HideStackTraces(replying(400, payload))).post("/invocations", content=b"")
    assert response.status_code == 400 and response.json() == {"error_code": "BAD_REQUEST", "message": "no columns"}
    assert int(response.headers["content-length"]) == len(response.content)


def test_a_success_passes_through_untouched():
    payload = {"predictions": [{"stack_trace": "a field of an answer is the program's business"}]}
    response = TestClient(HideStackTraces(replying(200, payload))).post("/invocations", content=b"")
    assert response.status_code == 200 and response.json() == payload


def test_the_served_app_hides_mlflows_stack_trace_for_a_body_it_cannot_parse(tmp_path, monkeypatch):
    from batch_fakes import FACTORY

    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import save_pyfunc
    from disambig.programs import build_program
    from disambig.serving.app import MODEL_PATH_ENV, create_app

    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    monkeypatch.setenv(MODEL_PATH_ENV, save_pyfunc(state, tmp_path / "model"))
    response = TestClient(create_app()).post("/invocations", content=b"\n", headers={"Content-Type": "text/csv"})
    assert response.status_code == 400 and "No columns to parse" in response.json()["message"]
    assert "stack_trace" not in response.json() and "Traceback" not in response.text
