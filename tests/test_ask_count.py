"""``disambig ask --program dfa --dataset DIR --scope DB_ID``: a count program asked one question over the chunk
scope of a hand-made aggregation folder, with a scripted LM; clear errors when the scope is missing or wrong."""

from __future__ import annotations

import json
import re

import pytest
from program_fakes import scripted_lm
from test_dfa import CHUNKS, dfa_rules, plan
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data.loaders import aggregation_corpus
from disambig.data.spiderqa import scope_ids
from disambig.errors import ConfigurationError

runner = CliRunner()
QUESTION = "How many flights go to Ashley?"


@pytest.fixture
def aggregation(tmp_path):
    """The five flight chunks in scope ``flights`` and one chunk of scope ``trains``; one question (gold 3)."""
    folder = tmp_path / "flights-qa"
    folder.mkdir()
    chunks = [{**c, "db_id": "flights"} for c in CHUNKS] + [
        {"id": "t", "title": "", "text": "Train 7 arrives in Ashley.", "db_id": "trains"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    row = {"id": "q1", "question": QUESTION, "gold_count": 3, "gold_chunk_ids": ["a", "d", "e"], "scope": "flights",
           "corpus": "corpus.jsonl"}
    (folder / "questions.jsonl").write_text(json.dumps(row) + "\n")
    return str(folder)


def judge(user: str) -> dict:
    """The flights of the numbered chunks shown that arrive in Ashley (10, 13 and 14 among a-e)."""
    lines = re.findall(r"\[(\d+)\] (Flight \d+ .*)", user)
    return {"entities": [{"name": re.search(r"Flight \d+", text).group(0), "chunks": [int(n)],
                          "justification": "stated"} for n, text in lines if "in Ashley" in text]}


@pytest.fixture
def scripted(monkeypatch):
    # the planner keeps the chunks naming Ashley (a, c, d, e; the trains scope is not searched), judged complete
    rules = {**dfa_rules([plan(["Ashley"])], ["complete"]), "List every entity of the given type": judge}
    lm, engine = scripted_lm(rules)
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    return engine


def test_the_corpus_and_scopes_of_an_aggregation_folder(aggregation, asqa_file):
    corpus = aggregation_corpus(aggregation)
    assert corpus.endswith("flights-qa/corpus.jsonl") and scope_ids(corpus) == ["flights", "trains"]
    with pytest.raises(ConfigurationError, match="no count questions over a chunk corpus"):
        aggregation_corpus(asqa_file)


def test_ask_dfa_counts_over_the_scope_of_a_dataset(aggregation, scripted):
    result = runner.invoke(app, ["ask", QUESTION, "--program", "dfa", "--dataset", aggregation, "--scope", "flights",
                                 "--option", "features=tfidf"])  # tf-idf batching features: no embedding model
    assert result.exit_code == 0, result.output
    assert "A: 3: Flight 10, Flight 13, Flight 14" in result.output
    judged = [user for phrase, user in scripted.calls if phrase == "List every entity of the given type"]
    assert judged and not any("Train 7" in user for user in judged)


@pytest.mark.parametrize(("args", "match"), [
    (["--program", "dfa"], "'dfa' counts over a chunk scope; pass --dataset DIR"),
    (["--program", "map-count", "--dataset", "{data}"], "--scope is missing; pass --scope DB_ID, one of: flights, "
                                                         "trains"),
    (["--program", "dfa", "--dataset", "{data}", "--scope", "buses"], "--scope 'buses' is not a scope of"),
    (["--program", "closed-book", "--dataset", "{data}", "--scope", "flights"], "'closed-book' counts over no chunk"),
    (["--program", "dfa", "--dataset", "{asqa}", "--scope", "flights"], "no count questions over a chunk corpus"),
])
def test_ask_refuses_a_missing_or_wrong_scope_before_any_lm_call(aggregation, asqa_file, scripted, args, match):
    args = [a.format(data=aggregation, asqa=asqa_file) for a in args]
    result = runner.invoke(app, ["ask", QUESTION, *args])
    assert result.exit_code == 2 and match in " ".join(result.output.split()), result.output
    assert scripted.calls == []


def test_ask_interactive_puts_the_clarification_to_the_user_and_rewrites_with_the_reply(aggregation, scripted):
    scripted.rules["Write one short question to the user"] = lambda user: {
        "clarification_question": "Does 'to Ashley' mean arriving there or passing through [via]?",
        "options": ["arrives in Ashley", "passes through Ashley"]}
    rewrite = scripted.rules["that follows the clarifications"]
    scripted.rules["that follows the clarifications"] = lambda user: {  # the rewrite follows the user's reply
        **rewrite(user), "rewritten_question": "How many flights pass through Ashley?"
        if "A: passes through Ashley" in user else "How many flights arrive in Ashley?"}
    result = runner.invoke(app, ["ask", QUESTION, "--program", "dfa", "--dataset", aggregation, "--scope", "flights",
                                 "--option", "features=tfidf", "--interactive"], input="2\n")
    assert result.exit_code == 0, result.output
    assert "passing through [via]?" in result.output and "2. passes through Ashley" in result.output
    assert "Counted as: How many flights pass through Ashley?" in result.output


@pytest.mark.parametrize(("args", "match"), [
    (["--program", "map-count"], "asks no clarification questions"),
    (["--program", "dfa", "--option", "disambiguation=direct"], "disambiguation='direct', which asks nothing"),
])
def test_ask_interactive_is_refused_where_nothing_would_be_asked(aggregation, scripted, args, match):
    result = runner.invoke(app, ["ask", QUESTION, *args, "--dataset", aggregation, "--scope", "flights",
                                 "--interactive"])
    assert result.exit_code == 2 and match in " ".join(result.output.split()), result.output
