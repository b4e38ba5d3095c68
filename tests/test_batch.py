"""disambig batch on the local engine: input formats, kept columns, errors per row, resuming, the process cache,
and evaluation through stored batch answers (scripted LM built from DISAMBIG_LM_FACTORY, no model, no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from batch_fakes import FACTORY, POISON, scripted_answer, scripted_lm
from pickle_scan import pickles_under

from disambig.errors import ConfigurationError
from disambig.optimizers.artifact import save_artifact
from disambig.optimizers.batch import ANSWER_COLUMNS, answer_examples, run_batch
from disambig.optimizers.batch_io import read_table, write_table
from disambig.programs import build_program


@pytest.fixture
def scripted(tmp_path, monkeypatch) -> Path:
    """The scripted LM for every pyfunc load; returns the file where each LM call logs its question."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    monkeypatch.setenv("DISAMBIG_SCRIPTED_LOG", str(log))
    monkeypatch.setenv("DISAMBIG_SCRIPTED_BUILDS", str(tmp_path / "builds.txt"))
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    return log


@pytest.fixture
def state(tmp_path) -> str:
    """Closed-book (one LM call, no retriever) saved as a compiled state with its manifest."""
    program = build_program("closed-book")
    return str(save_artifact(program, tmp_path / "art" / "plain.json", {"program": "closed-book", "optimizer": "none"}))


def questions(n: int, poison: int | None = None) -> list[dict]:
    return [{"id": f"q{i}", "question": f"Who won prize {i}?{' ' + POISON if i == poison else ''}", "topic": i % 2}
            for i in range(n)]


def write_questions(path: Path, rows: list[dict]) -> Path:
    write_table(pd.DataFrame(rows), path)
    return path


def calls(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_local_batch_answers_every_row_and_keeps_input_columns(tmp_path, scripted, state):
    source = write_questions(tmp_path / "in.jsonl", questions(5))
    result = run_batch(state, source, tmp_path / "out.jsonl", engine="local")
    out = read_table(tmp_path / "out.jsonl")
    assert (result.answered, result.failed, result.skipped) == (5, 0, 0)
    assert list(out.columns) == ["id", "question", "topic", *ANSWER_COLUMNS]
    assert list(out["long_answer"]) == [scripted_answer(f"Who won prize {i}?") for i in range(5)]
    assert list(out["topic"]) == [0, 1, 0, 1, 0]
    assert all(e is None for e in out["error"])
    assert out["trace"][0]["lm_calls"] == 1 and out["trace"][0]["output_tokens"] > 0
    assert out["interpretations"][0] == [] and out["passage_ids"][0] == []
    assert pickles_under(tmp_path) == []


def test_a_failing_row_keeps_its_error_and_a_rerun_answers_only_what_is_missing(tmp_path, scripted, state):
    source = write_questions(tmp_path / "in.jsonl", questions(6, poison=2))
    first = run_batch(state, source, tmp_path / "out.jsonl")
    out = read_table(tmp_path / "out.jsonl")
    assert (first.answered, first.failed) == (6, 1)
    assert "poisoned question" in out["error"][2] and out["long_answer"][2] == ""
    assert [e is None for e in out["error"]] == [True, True, False, True, True, True]

    again = run_batch(state, source, tmp_path / "out.jsonl")
    assert (again.answered, again.failed, again.skipped) == (1, 1, 5)  # only the failed row is tried again
    assert sorted(calls(scripted)) == sorted([q["question"] for q in questions(6, poison=2)] + [questions(6, 2)[2][
        "question"]])
    assert len(read_table(tmp_path / "out.jsonl")) == 6


def test_without_ids_rows_resume_by_question_text(tmp_path, scripted, state):
    rows = [{"question": q["question"]} for q in questions(3)]
    write_questions(tmp_path / "in.csv", rows[:2])
    run_batch(state, tmp_path / "in.csv", tmp_path / "out.csv")
    write_questions(tmp_path / "in.csv", rows)
    result = run_batch(state, tmp_path / "in.csv", tmp_path / "out.csv")
    assert (result.answered, result.skipped) == (1, 2)
    assert list(read_table(tmp_path / "out.csv")["question"]) == [r["question"] for r in rows]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_every_format_reads_questions_and_writes_nested_answers(tmp_path, scripted, state, suffix):
    source = write_questions(tmp_path / f"in{suffix}", questions(3))
    run_batch(state, source, tmp_path / f"out{suffix}")
    out = read_table(tmp_path / f"out{suffix}")
    assert list(out["long_answer"]) == [scripted_answer(f"Who won prize {i}?") for i in range(3)]
    assert out["trace"][2]["lm_calls"] == 1 and list(out["passage_ids"][2]) == []
    assert not any(out["error"])


def test_an_input_column_named_like_an_answer_column_is_kept_apart(tmp_path, scripted, state):
    source = write_questions(tmp_path / "in.jsonl", [{"question": "Who?", "long_answer": "gold"}])
    run_batch(state, source, tmp_path / "out.jsonl")
    row = read_table(tmp_path / "out.jsonl").iloc[0]
    assert row["input_long_answer"] == "gold" and row["long_answer"] == scripted_answer("Who?")


@pytest.mark.parametrize(("rows", "name", "kwargs", "match"), [
    ([{"text": "Who?"}], "in.jsonl", {}, "no 'question' column"),
    ([{"question": ""}], "in.jsonl", {}, "no question text"),
    ([{"question": "Who?"}], "in.txt", {}, "suffix"),
    ([{"question": "Who?"}], "in.jsonl", {"engine": "dask"}, "engine 'dask' is unknown"),
    ([{"question": "Who?"}], "in.jsonl", {"engine": "spark", "partitions": 0}, "partitions=0"),
])
def test_bad_inputs_are_refused_with_the_fix(tmp_path, state, rows, name, kwargs, match):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigurationError, match=match):
        run_batch(state, path, tmp_path / "out.jsonl", **kwargs)


def test_an_output_of_no_known_format_is_refused_before_any_row_is_asked(tmp_path, scripted, state):
    source = write_questions(tmp_path / "in.jsonl", questions(2))
    with pytest.raises(ConfigurationError, match="suffix '.txt'"):
        run_batch(state, source, tmp_path / "out.txt")
    assert calls(scripted) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["art", "in.jsonl"]


def test_a_model_that_is_no_model_is_refused(tmp_path):
    source = write_questions(tmp_path / "in.jsonl", questions(1))
    with pytest.raises(ConfigurationError, match="compiled state JSON"):
        run_batch(str(tmp_path / "missing.json"), source, tmp_path / "out.jsonl")


def test_the_lm_is_built_once_per_process_across_model_loads(tmp_path, scripted, state):
    source = write_questions(tmp_path / "in.jsonl", questions(2))
    run_batch(state, source, tmp_path / "a.jsonl")
    run_batch(state, source, tmp_path / "b.jsonl")  # a second pyfunc load in this process
    builds = (tmp_path / "builds.txt").read_text().split()
    assert len(builds) <= 1  # 0 when an earlier test in this process already built it for the same settings


def test_eval_through_stored_batch_answers_gives_the_local_report(tmp_path, scripted, state, asqa_file):
    import dspy

    from disambig.data import load_dataset
    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.run_setup import resolve_metrics
    from disambig.settings import Settings

    examples = load_dataset(asqa_file, split="all")
    metrics = resolve_metrics(["str-em", "rouge-l", "d-f1", "dr"], Settings())
    config = EvalConfig(program="closed-book", dataset=asqa_file, split="all", lm="scripted")
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    local = run_eval(config, build_program("closed-book"), examples, metrics, tmp_path / "local", track=False)
    stored = answer_examples(state, examples, tmp_path / "batch" / "results.jsonl", engine="local")
    batch = run_eval(config, stored, examples, metrics, tmp_path / "batch", track=False)
    assert batch.report["metrics"] == local.report["metrics"]
    assert (batch.report["questions"], batch.report["failures"]) == (len(examples), 0)
    assert batch.report["efficiency"]["lm_calls_per_q"] == local.report["efficiency"]["lm_calls_per_q"] == 1


def stopping_after(rows: int):
    """A ``local_answerer`` killed (KeyboardInterrupt) when a call would take it past ``rows`` questions."""
    from disambig.optimizers import batch

    real = batch.local_answerer

    def make(location, settings):
        answer, asked = real(location, settings), []

        def answer_or_die(questions):
            if len(asked) + len(questions) > rows:
                raise KeyboardInterrupt
            asked.extend(questions)
            return answer(questions)

        return answer_or_die

    return make


def kept_rows(out: Path) -> list[dict]:
    """What a killed batch left on disk: its output table and the rows journalled since the table's last write."""
    from disambig.optimizers.batch_journal import AnswerJournal

    frames = [read_table(out) if out.exists() else None, AnswerJournal(out).table()]
    return [row for frame in frames if frame is not None for row in frame.to_dict("records")]


def test_a_batch_killed_early_keeps_every_row_it_answered_and_the_rerun_adds_only_the_rest(tmp_path, scripted, state,
                                                                                            monkeypatch):
    from disambig.optimizers import batch

    source, out = write_questions(tmp_path / "in.csv", questions(5)), tmp_path / "out.csv"
    real = batch.local_answerer
    monkeypatch.setattr(batch, "local_answerer", stopping_after(3))
    with pytest.raises(KeyboardInterrupt):
        run_batch(state, source, out)
    kept = kept_rows(out)
    assert sorted(r["id"] for r in kept) == ["q0", "q1", "q2"]  # 3 of 5 answered before the kill, none lost
    assert all(r["long_answer"] == scripted_answer(r["question"]) for r in kept)

    monkeypatch.setattr(batch, "local_answerer", real)
    again = run_batch(state, source, out)
    assert (again.answered, again.skipped) == (2, 3)
    rows = read_table(out)
    assert sorted(rows["id"]) == [f"q{i}" for i in range(5)] and not any(rows["error"])  # each row once
    assert sorted(calls(scripted)) == sorted(q["question"] for q in questions(5))  # no question asked twice
    assert kept_rows(out) == rows.to_dict("records")  # the journal is folded in and emptied


def test_a_journal_line_torn_by_a_kill_is_asked_again(tmp_path, scripted, state, monkeypatch):
    from disambig.optimizers import batch
    from disambig.optimizers.batch_journal import AnswerJournal

    source, out = write_questions(tmp_path / "in.jsonl", questions(3)), tmp_path / "out.jsonl"
    real = batch.local_answerer
    monkeypatch.setattr(batch, "local_answerer", stopping_after(1))
    with pytest.raises(KeyboardInterrupt):
        run_batch(state, source, out)
    assert [r["id"] for r in kept_rows(out)] == ["q0"]
    journal = AnswerJournal(out)
    with journal.path.open("a", encoding="utf-8") as handle:  # the kill came in the middle of writing row q1
        handle.write('{"id": "q1", "question": "Who won prize 1?", "long_answer": "Scrip')
    monkeypatch.setattr(batch, "local_answerer", real)
    again = run_batch(state, source, out)
    assert (again.answered, again.skipped) == (2, 1)  # q1 (torn) and q2; q0 was kept whole
    assert sorted(read_table(out)["id"]) == ["q0", "q1", "q2"] and not journal.path.exists()
