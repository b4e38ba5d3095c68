"""Served replies finished as the in-process engine finishes them (``disambig.lm.served_replies``), without a model."""

from __future__ import annotations

import json

import pytest

from disambig.lm.repetition import LoopRule
from disambig.lm.served_replies import CURRENT, ServedRequest, finish_reply, take_wishes
from disambig.lm.server import OpenAIRequests

RULE = LoopRule.parse("6x3")
LOOP = "the cup was won by the home side " * 4


def chat_reply(content: str, finish: str = "stop") -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": finish}], "usage": {"completion_tokens": 9}}).encode()


def test_log_probability_wishes_are_taken_out_of_what_the_server_sees():
    body = {"messages": [], "logprobs": True, "top_logprobs": 5,
            "response_format": {"type": "json_object", "schema": {"type": "object"}}}
    out, request = take_wishes(body, RULE)
    assert "logprobs" not in out and "top_logprobs" not in out and out["response_format"] == body["response_format"]
    assert request == ServedRequest(top_logprobs=5, schema={"type": "object"}, rule=RULE)
    assert body["logprobs"] is True  # the caller's dict is left as it was


@pytest.mark.parametrize(("fields", "top"), [({}, None), ({"logprobs": False, "top_logprobs": 3}, None),
                                             ({"logprobs": True}, 1), ({"logprobs": True, "top_logprobs": 0}, 1),
                                             ({"logprobs": True, "top_logprobs": "3"}, 1)])
def test_the_number_of_alternatives(fields, top):
    assert take_wishes({"messages": [], **fields}, None)[1].top_logprobs == top


def test_a_looped_reply_is_cut_and_finishes_as_stop():
    reply = json.dumps({"answer": f"It was 1998. {LOOP}"})
    finished = json.loads(finish_reply(chat_reply(reply, "length"), ServedRequest(rule=RULE, looped=True)))
    choice = finished["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert json.loads(choice["message"]["content"])["answer"] == "It was 1998."
    assert finished["usage"] == {"completion_tokens": 9}


def test_a_capped_json_reply_ends_at_its_last_whole_sentence():
    capped = '{"answer": "It was 1998. The final was in Par'
    choice = json.loads(finish_reply(chat_reply(capped, "length"), ServedRequest()))["choices"][0]
    assert json.loads(choice["message"]["content"]) == {"answer": "It was 1998."}
    assert choice["finish_reason"] == "length"


def test_a_finished_reply_keeps_its_text_and_gets_the_recorded_log_probabilities():
    tokens = [{"token": "Yes", "logprob": -0.1, "bytes": [89, 101, 115], "top_logprobs": []}]
    request = ServedRequest(top_logprobs=2, logprobs=tokens)
    choice = json.loads(finish_reply(chat_reply('{"a": "b"}'), request))["choices"][0]
    assert choice["message"]["content"] == '{"a": "b"}' and choice["logprobs"] == {"content": tokens, "refusal": None}


@pytest.mark.parametrize("body", [b"not json", b'{"error": {"message": "no"}}', b'{"choices": []}', b"[1]"])
def test_other_bodies_pass_unchanged(body):
    assert finish_reply(body, ServedRequest(rule=RULE, looped=True)) == body


class LoopingApp:
    """An ASGI chat server whose "generation" loops and tells the request's guard so, as the hooked model would."""

    def __init__(self) -> None:
        self.seen: dict = {}

    async def __call__(self, scope, receive, send):
        self.seen = json.loads((await receive())["body"])
        request = CURRENT.get()
        request.looped = True
        request.logprobs = []
        body = chat_reply(json.dumps({"answer": f"It was 1998. {LOOP}"}))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"999")]})
        await send({"type": "http.response.body", "body": body[:10], "more_body": True})
        await send({"type": "http.response.body", "body": body[10:], "more_body": False})


def test_the_middleware_finishes_the_reply_with_its_new_length():
    import asyncio

    app = LoopingApp()
    body = json.dumps({"messages": [], "logprobs": True, "top_logprobs": 2}).encode()
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
    asyncio.run(OpenAIRequests(app, "m", rule=RULE)(scope, receive, send))
    assert "logprobs" not in app.seen and "top_logprobs" not in app.seen
    start, reply = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    assert dict(start["headers"])[b"content-length"] == str(len(reply)).encode()
    choice = json.loads(reply)["choices"][0]
    assert json.loads(choice["message"]["content"]) == {"answer": "It was 1998."}
    assert choice["logprobs"] == {"content": [], "refusal": None}
    assert CURRENT.get() is None


class RecordingApp:
    """An ASGI app that only notes that it was called (the model would have been asked)."""

    def __init__(self) -> None:
        self.called = False

    async def __call__(self, scope, receive, send):
        self.called = True
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


@pytest.mark.parametrize(("path", "fields"), [
    ("/v1/chat/completions", {"messages": [], "stream": True, "logprobs": True, "top_logprobs": 2}),
    ("/v1/completions", {"prompt": "Hi", "logprobs": 2}),
    ("/v1/completions", {"prompt": "Hi", "logprobs": 0}),  # 0 alternatives still asks for the chosen token's
])
def test_log_probabilities_the_model_cannot_give_are_refused_before_it_is_asked(path, fields):
    # loaded without logits_all, llama-cpp-python raises on these (a 500, or a stream broken after its 200 header)
    import asyncio

    app, sent = RecordingApp(), []

    async def receive():
        return {"type": "http.request", "body": json.dumps(fields).encode(), "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    asyncio.run(OpenAIRequests(app, "m", rule=RULE)(scope, receive, send))
    assert not app.called and sent[0]["status"] == 400
    error = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["error"]
    assert error["param"] == "logprobs" and "non-streamed /v1/chat/completions" in error["message"]


@pytest.mark.parametrize(("path", "fields"), [
    ("/v1/chat/completions", {"messages": [], "stream": True}),
    ("/v1/chat/completions", {"messages": [], "stream": True, "logprobs": False}),
    ("/v1/completions", {"prompt": "Hi"}),
    ("/v1/completions", {"prompt": "Hi", "logprobs": None}),
])
def test_requests_without_log_probabilities_still_reach_the_model(path, fields):
    import asyncio

    app = RecordingApp()

    async def receive():
        return {"type": "http.request", "body": json.dumps(fields).encode(), "more_body": False}

    async def send(message):
        pass

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    asyncio.run(OpenAIRequests(app, "m", rule=RULE)(scope, receive, send))
    assert app.called
