"""Every state, artifact, manifest, params, report and results file is replaced whole (``disambig.data.atomic``): a
write that dies half-way leaves the old file, and no writer outside that module opens a target file for writing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from disambig.data.atomic import write_json, write_text
from disambig.evaluation.records import QuestionResult, ResultLog

ROOT = Path(__file__).resolve().parents[1]
AUDITED = ("optimizers", "evaluation", "data", "disambig", "programs")  # retrieval/: see docs/reliability.md
WRITES = re.compile(r"\.write_text\(|\.write_bytes\(|json\.dump\(|open\([^)]*[\"'][wx]b?[\"']|\.open\([\"'][wx]"
                    r"|\.savefig\((?!image)|\.to_(parquet|csv)\((?!data|index)")
FOLDER_AT_ONCE = {"data/asqa_retrieval.py"}  # writes into a temporary folder that replaces the old one by rename


def test_a_write_that_dies_half_way_leaves_the_old_file_whole(tmp_path, monkeypatch):
    target = write_json(tmp_path / "manifest.json", {"a": 1})

    def killed(*args):
        raise KeyboardInterrupt  # the process stops between writing the new bytes and the rename

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_json(target, {"a": 2, "b": "x" * 10_000})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # the temporary file is gone too


def test_the_new_file_keeps_non_ascii_text_and_ordinary_permissions(tmp_path):
    path = write_text(tmp_path / "sub" / "r.json", "é—🙂\n")
    assert path.read_text(encoding="utf-8") == "é—🙂\n" and oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_result_line_cut_before_its_newline_is_kept_apart_from_the_next_append(tmp_path):
    log = ResultLog(tmp_path / "results.jsonl")
    row = QuestionResult(id="q1", question="?", prediction={}, scores={})
    log.path.write_text(json.dumps(row.__dict__), encoding="utf-8")  # a whole row whose newline the kill cut off
    assert [r.id for r in log.load()] == ["q1"]
    log.append(QuestionResult(id="q2", question="?", prediction={}, scores={}))
    assert [r.id for r in log.load()] == ["q1", "q2"]


@pytest.mark.parametrize("text", ["line\u2028separator", "next\x85line", "para\u2029graph", "plain é"])
def test_a_row_whose_text_holds_a_unicode_line_break_is_kept_on_resume(tmp_path, text):
    log = ResultLog(tmp_path / "results.jsonl")
    log.append(QuestionResult(id="q1", question=text, prediction={"long_answer": text}, scores={}))
    log.append(QuestionResult(id="q2", question="?", prediction={}, scores={}))
    assert [(r.id, r.question) for r in log.load()] == [("q1", text), ("q2", "?")]
    assert [(r.id, r.question) for r in log.load()] == [("q1", text), ("q2", "?")]  # the file was not rewritten


def test_dropping_failed_rows_keeps_a_row_whose_text_holds_a_unicode_line_break(tmp_path):
    log = ResultLog(tmp_path / "results.jsonl")
    log.append(QuestionResult(id="q1", question="a\u2028b", prediction={}, scores={}))
    log.append(QuestionResult(id="q2", question="?", prediction=None, scores={}, error="RuntimeError: down"))
    log.load()
    log.drop({"q2"})
    assert [(r.id, r.question) for r in log.load()] == [("q1", "a\u2028b")]


def test_a_last_row_torn_inside_a_character_is_asked_again_not_a_crash(tmp_path):
    from disambig.optimizers.batch_journal import AnswerJournal

    log = ResultLog(tmp_path / "results.jsonl")
    log.append(QuestionResult(id="q1", question="?", prediction={}, scores={}))
    torn = json.dumps({"id": "q2", "question": "café"}, ensure_ascii=False).encode()
    with log.path.open("ab") as handle:
        handle.write(torn[: torn.index("é".encode()) + 1])  # the kill came between the two bytes of "é"
    assert [r.id for r in log.load()] == ["q1"]
    journal = AnswerJournal(tmp_path / "out.jsonl")
    journal.append([{"id": "a", "question": "?"}])
    with journal.path.open("ab") as handle:
        handle.write(torn[: torn.index("é".encode()) + 1])
    assert list(journal.table()["id"]) == ["a"]


def test_no_writer_opens_a_target_file_outside_the_atomic_module():
    found = []
    for folder in AUDITED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name in FOLDER_AT_ONCE or name == "data/atomic.py":
                continue
            found += [f"{name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                      if WRITES.search(line)]
    assert found == []
