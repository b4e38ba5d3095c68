"""Requests the served program refuses, and how: a question that is not text and a table without a question column
get HTTP 400 with the reason; a body over the size limit gets HTTP 413 before it is read. Checked on
``CompiledProgram.predict`` and through MLflow's scoring app behind ``BodyLimit`` in this process (scripted LM of
``batch_fakes``, a closed-book state saved as a pyfunc model; no server process, no model)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from batch_fakes import FACTORY, scripted_answer
from dspy.utils import DummyLM
from starlette.testclient import TestClient

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.serving.app import BodyLimit
from disambig.serving.model import BadRequest, CompiledProgram


@pytest.fixture
def served() -> CompiledProgram:
    model = CompiledProgram()
    model.program, model.adapter = build_program("closed-book"), CompactJSONAdapter()
    model.lm = DummyLM([{"long_answer": "Person X won it."}] * 4, adapter=CompactJSONAdapter())
    return model


@pytest.mark.parametrize(("request_input", "reason"), [
    ([123], "row 0: question must be text, got int 123"),
    (np.array([123]), "row 0: question must be text, got int 123"),  # `{"inputs": [123]}` over HTTP
    ([{"question": "Who won prize 1?"}, {"question": True}], "row 1: question must be text, got bool True"),
    (pd.DataFrame({"question": [1.5]}), "row 0: question must be text, got float 1.5"),
    (pd.DataFrame({"q": ["Who won prize 1?"]}), "input needs a 'question' column, got columns ['q']"),
    ({"questions": ["Who won prize 1?"]}, "input needs a 'question' field, got fields ['questions']"),
])
def test_a_request_that_is_not_a_table_of_questions_is_refused_with_400_and_its_reason(served, request_input,
                                                                                         reason):
    with pytest.raises(BadRequest) as refused:
        served.predict(None, request_input)
    assert refused.value.message.startswith(reason)
    assert refused.value.get_http_status_code() == 400
    assert served.lm.history == []  # nothing reached the LM


def test_text_questions_and_empty_cells_are_still_answered_row_by_row(served):
    answered, empty = served.predict(None, [{"question": "Who won prize 1?"}, {"question": None}])
    assert answered["error"] == "" and empty["error"] == "ValueError: the row has no question"


@pytest.mark.parametrize("blank", ["", " ", "\r", "\n\t "])
def test_a_question_of_only_whitespace_is_that_rows_error_not_a_call(served, blank):
    (row,) = served.predict(None, [{"question": blank}])
    assert row["error"] == "ValueError: the row has no question" and served.lm.history == []


def echo_app(seen: list):
    """A tiny ASGI app that answers 200 with the size of the body it read."""

    async def app(scope, receive, send):
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        seen.append(len(body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})

    return app


def test_a_body_over_the_limit_is_refused_with_413_before_the_app_sees_it():
    seen: list[int] = []
    client = TestClient(BodyLimit(echo_app(seen), max_bytes=100))
    assert client.post("/invocations", content=b"x" * 100).text == "100"  # at the limit: passed on whole
    declared = client.post("/invocations", content=b"x" * 101)
    assert declared.status_code == 413 and declared.json()["error_code"] == "REQUEST_TOO_LARGE"
    assert "request body of 101 bytes is over the server's limit of 100 bytes" in declared.json()["message"]
    streamed = client.post("/invocations", content=iter([b"x" * 60, b"x" * 60]))  # chunked: no Content-Length
    assert streamed.status_code == 413 and "over 100 bytes" in streamed.json()["message"]
    assert seen == [100]


@pytest.fixture
def scoring_client(tmp_path, monkeypatch) -> TestClient:
    """MLflow's scoring app for a closed-book state saved as a pyfunc model, behind a 2 kB limit."""
    from mlflow.pyfunc import scoring_server

    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import save_pyfunc

    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    model = scoring_server.load_model_with_mlflow_config(save_pyfunc(state, tmp_path / "model"))
    return TestClient(BodyLimit(scoring_server.init(model), max_bytes=2_000))


@pytest.mark.parametrize(("payload", "status", "said"), [
    ({"inputs": ["Who won prize 1?"]}, 200, scripted_answer("Who won prize 1?")),
    ({"inputs": [123]}, 400, "question must be text, got int 123"),
    ({"dataframe_split": {"columns": ["q"], "data": [["Who won prize 1?"]]}}, 400,
     "input needs a 'question' column, got columns ['q']"),
    ({"inputs": ["Who won prize 1?" + " really" * 300]}, 413, "over the server's limit of 2,000 bytes"),
])
def test_the_scoring_app_answers_or_says_why_not(scoring_client, payload, status, said):
    response = scoring_client.post("/invocations", content=json.dumps(payload),
                                   headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    assert said in response.text
    assert "unexpected error" not in response.text
