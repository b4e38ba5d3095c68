"""Fuzzed requests to the served program, through the app ``disambig serve`` runs (``serving.app.create_app``: MLflow's
scoring server behind the body-size and admission limits) in this process: bodies of any JSON shape, nulls, numbers
where text belongs, unicode edge cases (lone surrogates, NUL, bidi controls, combining marks), bytes that are not
JSON, wrong content types and a 10 MB body. Each gets an answer per question (a failed row carries its error) or a
4xx with the reason: never a 500, a stack trace, or a file written beside the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_fakes import FACTORY, scripted_answer
from fuzz_support import FUZZ, TEXT, changed, snapshot
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

ODD = ["\ud800", "\udfff", "\x00", "\u202e", "\u200b", "\ufeff", "e\u0301", "\U0001f600", "\uffff", "ǅ", "İ", "ß"]
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(**TEXT), max_size=20)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=8)
QUESTION = st.one_of(st.text(st.characters(**TEXT), min_size=1, max_size=40),
                     st.lists(st.sampled_from(ODD), min_size=1, max_size=4).map(lambda s: "Who won " + "".join(s)),
                     JSON)
PAYLOAD = st.one_of(
    QUESTION.map(lambda q: {"inputs": [q]}),
    st.lists(QUESTION, max_size=3).map(lambda qs: {"inputs": qs}),
    st.lists(QUESTION, max_size=3).map(lambda qs: {"dataframe_records": [{"question": q} for q in qs]}),
    st.lists(QUESTION, max_size=3).map(lambda qs: {"dataframe_split": {"columns": ["question"],
                                                                       "data": [[q] for q in qs]}}),
    st.dictionaries(st.sampled_from(["inputs", "instances", "dataframe_records", "dataframe_split", "params", "x"]),
                    JSON, max_size=2),
    JSON,
)
BODY = st.one_of(PAYLOAD.map(lambda p: json.dumps(p).encode()),  # lone surrogates travel as \\ud800 escapes
                 st.binary(max_size=60))
CONTENT_TYPE = st.sampled_from(["application/json", "application/json", "text/csv", "text/plain", ""])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app for a closed-book state saved as a pyfunc model, with the scripted LM; its folder for snapshots."""
    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import save_pyfunc
    from disambig.programs import build_program
    from disambig.serving.app import MODEL_PATH_ENV, create_app

    folder = tmp_path_factory.mktemp("served")
    patch = pytest.MonkeyPatch()
    patch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    patch.setenv("DISAMBIG_CACHE_DIR", str(folder / "cache"))
    state = save_artifact(build_program("closed-book"), folder / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    patch.setenv(MODEL_PATH_ENV, save_pyfunc(state, folder / "model"))
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        yield client, folder
    patch.undo()


def check_response(response, body: bytes) -> None:
    assert response.status_code != 500 and response.status_code < 600, response.text[-2000:]
    assert "Traceback" not in response.text and "unexpected error" not in response.text.lower(), response.text[-2000:]
    if response.status_code == 200:
        predictions = response.json()["predictions"]
        sent = json.loads(body)
        rows = sent.get("inputs", sent.get("dataframe_records")) if isinstance(sent, dict) else None
        if isinstance(rows, list):
            assert len(predictions) == len(rows)
        for answer in predictions:
            assert answer["error"] or answer["long_answer"] == scripted_answer(answer["question"].strip())
    else:  # MLflow's reason: a JSON message, or a line of text for a content type it does not take (415)
        said = response.json().get("message") if "json" in response.headers["content-type"] else response.text
        assert 400 <= response.status_code < 500 and said.strip(), response.text[-2000:]


@FUZZ
@given(body=BODY, content_type=CONTENT_TYPE)
def test_a_hostile_request_gets_answers_per_row_or_a_4xx_with_its_reason(served, body, content_type):
    client, folder = served
    before = snapshot(folder)
    response = client.post("/invocations", content=body, headers={"Content-Type": content_type})
    check_response(response, body)
    assert changed(before, snapshot(folder), allowed=("cache/",)) == []


@pytest.mark.parametrize("size", [1_000_001, 10_000_000])
def test_a_big_body_is_refused_with_413(served, size):
    client, _ = served
    body = json.dumps({"inputs": ["Who won " + "x" * size]}).encode()
    response = client.post("/invocations", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and "over the server's limit" in response.json()["message"]


def test_the_served_folder_holds_only_what_save_wrote(served):
    _, folder = served
    assert not any(Path(p).name.endswith(".tmp") for p in snapshot(folder))
