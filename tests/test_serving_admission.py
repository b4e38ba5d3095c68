"""Past capacity the served program queues with a bound and refuses the overflow at once: HTTP 503, a Retry-After
header and a one-line JSON reason, while every admitted request is answered, each with its own answer.

Checked in this process on one event loop (httpx's ASGI transport, requests sent together with ``asyncio.gather``):
first on a stand-in app held behind a gate, so the counts are exact; then on MLflow's scoring app for a closed-book
state with the scripted LM of ``batch_fakes`` slowed to 1 s a call, as ``disambig serve`` stacks it.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from batch_fakes import FACTORY, scripted_answer

from disambig.programs import build_program
from disambig.serving.admission import AdmissionLimit
from disambig.serving.app import BodyLimit


def gated_app(gate: asyncio.Event, entered: list[str]):
    """An ASGI app that reads the body, waits for ``gate``, then answers 200 with the body it read."""

    async def app(scope, receive, send):
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        entered.append(body.decode())
        await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


async def wait_for(condition, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_two_answered_three_queued_and_the_rest_refused_at_once():
    """Limits 2 + 3 and 8 requests: requests 0-4 are held (2 answering, 3 waiting), 5-7 are refused while the gate
    is still closed, /ping gets through meanwhile, and opening the gate answers 0-4 with their own bodies."""

    async def scenario():
        gate, entered = asyncio.Event(), []
        limit = AdmissionLimit(gated_app(gate, entered), max_concurrent=2, max_queue=3)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=limit), base_url="http://x") as client:
            held = [asyncio.create_task(client.post("/invocations", content=f"r{i}")) for i in range(5)]
            await wait_for(lambda: limit.active == 2 and limit.waiting == 3)
            refused = await asyncio.gather(*(client.post("/invocations", content=f"r{i}") for i in range(5, 8)))
            ping = asyncio.create_task(client.get("/ping"))
            await wait_for(lambda: "" in entered)  # not limited: it reaches the app while the queue is full
            gate.set()
            answered = await asyncio.gather(*held)
            return limit, entered, answered, refused, await ping

    limit, entered, answered, refused, ping = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert [(r.status_code, r.text) for r in answered] == [(200, f"r{i}") for i in range(5)]
    assert sorted(entered) == ["", "r0", "r1", "r2", "r3", "r4"]  # the ping's empty body; r5-r7 never reached the app
    for response in refused:
        assert response.status_code == 503
        assert response.headers["retry-after"].isdigit() and int(response.headers["retry-after"]) >= 1
        reason = response.json()
        assert reason["error_code"] == "SERVER_BUSY" and "\n" not in reason["message"]
        assert "2 requests being answered and 3 waiting" in reason["message"]
        assert "--max-concurrent 2, --max-queue 3" in reason["message"]
    assert ping.status_code == 200
    assert (limit.active, limit.waiting) == (0, 0)


@pytest.mark.parametrize(("concurrent", "queue"), [(0, 4), (2, -1)])
def test_limits_below_their_minimum_are_refused(concurrent, queue):
    with pytest.raises(ValueError, match=f"max_concurrent={concurrent} must be at least 1 and max_queue={queue}"):
        AdmissionLimit(gated_app(asyncio.Event(), []), max_concurrent=concurrent, max_queue=queue)


def test_the_scoring_app_answers_every_admitted_question_with_its_own_answer_and_refuses_the_overflow(
        tmp_path, monkeypatch):
    """One answered at a time, two waiting, 1 s per LM call: of 8 questions sent together, 3 are answered, each
    with the scripted answer to its own question, and 5 get 503 within a fraction of the first answer's second."""
    from mlflow.pyfunc import scoring_server

    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import save_pyfunc

    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    monkeypatch.setenv("DISAMBIG_SCRIPTED_DELAY", "1.0")
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    model = scoring_server.load_model_with_mlflow_config(save_pyfunc(state, tmp_path / "model"))
    app = AdmissionLimit(BodyLimit(scoring_server.init(model), max_bytes=10_000), max_concurrent=1, max_queue=2)
    questions = [f"Who won prize {i}?" for i in range(8)]

    async def ask_all():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x",
                                     timeout=30) as client:
            async def ask(question: str) -> tuple[float, httpx.Response]:
                response = await client.post("/invocations", content=json.dumps({"inputs": [question]}),
                                             headers={"Content-Type": "application/json"})
                return asyncio.get_running_loop().time(), response

            began = asyncio.get_running_loop().time()
            return began, await asyncio.gather(*(ask(q) for q in questions))

    began, replies = asyncio.run(asyncio.wait_for(ask_all(), 60))
    answered = {q: r.json()["predictions"][0] for q, (_, r) in zip(questions, replies, strict=True)
                if r.status_code == 200}
    refused = [(when - began, r) for _, (when, r) in zip(questions, replies, strict=True) if r.status_code == 503]
    assert len(answered) == 3 and len(refused) == 5, [r.status_code for _, r in replies]
    for question, row in answered.items():
        assert (row["question"], row["long_answer"], row["error"]) == (question, scripted_answer(question), "")
    assert all(seconds < 0.9 for seconds, _ in refused)  # at once, not after a turn
    assert all(r.json()["error_code"] == "SERVER_BUSY" and "retry-after" in r.headers for _, r in refused)
