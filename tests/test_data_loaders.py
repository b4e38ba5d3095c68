"""Loaders: named sets under the data root, the hash split rule, malformed rows reported with file and line.

The first two tests read the real benchmark files from the data root (``../shared/data`` here); a machine
without them fails with the data root's one-line error naming both remedies.
"""

from __future__ import annotations

import json

import pytest

from disambig.data import load_corpus, load_dataset
from disambig.data.corpus import load_beir_qrels, load_beir_queries
from disambig.data.jsonl import MalformedRowError
from disambig.data.splits import bucket, split_of
from disambig.errors import ConfigurationError


def test_named_sets_under_the_data_root_have_the_documented_sizes():
    assert len(load_dataset("asqa")) == 780
    assert len(load_dataset("ambignq")) == 1597
    assert len(load_corpus("wiki-slice")) == 8840
    assert len(load_corpus("dbpedia-entity-5k")) == 5000
    assert len(load_beir_queries("dbpedia-entity-5k")) == 50
    assert sum(len(docs) for docs in load_beir_qrels("dbpedia-entity-5k").values()) == 3709


def test_split_is_sha1_of_the_normalised_question_mod_100():
    # sha1("who is the original artist of sound of silence?") mod 100 = 59: the last train bucket (0-59).
    assert bucket("Who is the original artist of sound of silence?") == 59
    assert split_of("Who is the original artist of sound of silence?") == "train"
    assert bucket("  WHO is the original   artist of sound of silence?\n") == 59  # case and spaces do not count


def test_a_question_in_both_sets_lands_in_the_same_split():
    ambignq = {ex.question: ex for ex in load_dataset("ambignq")}
    shared = [ex.question for ex in load_dataset("asqa") if ex.question in ambignq]
    assert shared
    for split in ("train", "dev", "test"):
        asqa_ids = {ex.question for ex in load_dataset("asqa", split=split)}
        ambignq_ids = {ex.question for ex in load_dataset("ambignq", split=split)}
        assert all((q in asqa_ids) == (q in ambignq_ids) for q in shared)


def test_unknown_split_is_refused(asqa_file):
    with pytest.raises(ValueError, match="unknown split 'validation'; choose one of train, dev, test, all"):
        load_dataset(asqa_file, split="validation")


def test_fixture_files_load_in_the_common_schema(asqa_file, ambignq_file):
    asqa = load_dataset(asqa_file)
    assert [ex.id for ex in asqa] == ["mini-1", "mini-2", "mini-3", "mini-4", "mini-5", "mini-6"]
    assert asqa[0].interpretations[1] == {"question": "Who wrote the screenplay of the 1956 film Moby Dick?",
                                          "answers": ["Ray Bradbury"]}
    assert len(asqa[2].long_answers) == 2 and asqa[0].evidence[0]["title"] == "Moby-Dick"
    ambignq = load_dataset(ambignq_file)
    # amb-2: the first multipleQAs annotation gives the interpretations; the singleAnswer one does not add one.
    assert [len(ex.interpretations) for ex in ambignq] == [1, 2, 2, 1]


ASQA_ROW = {"id": "1", "question": "Who?", "qa_pairs": [{"question": "Who, a?", "short_answers": ["A"]}]}


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([json.dumps(ASQA_ROW), "{not json"], r"bad.jsonl:2: not valid JSON"),
        ([json.dumps(ASQA_ROW), "", "[1, 2]"], r"bad.jsonl:3: expected a JSON object, got list"),
        ([json.dumps({"id": "2", "qa_pairs": []})], r"bad.jsonl:1: missing field\(s\) question"),
        ([json.dumps({**ASQA_ROW, "qa_pairs": [{"question": "q"}]})], r"bad.jsonl:1: unexpected structure"),
        ([json.dumps({"id": "3", "question": "q"})], r"bad.jsonl:1: neither 'qa_pairs' \(ASQA\) nor 'annotations'"),
        ([json.dumps({"id": "4", "question": "q", "annotations": [{"type": "odd"}]})],
         r"bad.jsonl:1: unknown annotation type 'odd'"),
    ],
)
def test_malformed_question_rows_name_file_and_line(tmp_path, lines, match):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(MalformedRowError, match=match):
        load_dataset(str(path))


def test_a_line_that_is_not_json_gets_the_parsers_whole_reason(tmp_path):
    path = tmp_path / "bad.jsonl"
    # the string opens with the quote at index 24 of line 2, which json reports as column 25
    path.write_text(json.dumps(ASQA_ROW) + '\n{"id": "1", "question": "unterminated\n', encoding="utf-8")
    with pytest.raises(MalformedRowError) as refused:
        load_dataset(str(path))
    assert str(refused.value) == (f"{path}:2: not valid JSON (Unterminated string starting at column 25); fix or "
                                  "remove the line")


def test_a_question_file_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    from disambig.optimizers.batch_io import read_questions

    latin1 = {"id": "2", "question": "Who wrote Les Misérables?", "qa_pairs": []}
    lines = [json.dumps(ASQA_ROW), json.dumps(latin1, ensure_ascii=False)]
    (tmp_path / "bad.jsonl").write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    # "é" is byte 0xe9 in Latin-1, after the 42 characters before it on line 2
    with pytest.raises(MalformedRowError, match=r"bad.jsonl:2: not UTF-8 text \(byte 0xe9 at byte 43 of the line\); "
                                                r"save the file as UTF-8"):
        load_dataset(str(tmp_path / "bad.jsonl"))
    (tmp_path / "bad.csv").write_bytes("question\nWho?\nQui a écrit?\n".encode("latin-1"))
    with pytest.raises(MalformedRowError, match=r"bad.csv:3: not UTF-8 text \(byte 0xe9 at byte 7 of the line\)"):
        read_questions(tmp_path / "bad.csv")


def test_a_leading_byte_order_mark_is_not_an_error(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(ASQA_ROW).encode() + b"\n")
    assert [ex.question for ex in load_dataset(str(path))] == ["Who?"]


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([{"id": "a", "text": "x"}, {"title": "t", "text": "y"}], r"c.jsonl:2: missing field\(s\) id"),
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], r"c.jsonl:2: duplicate passage id 'a'"),
        ([{"id": "a", "text": None}], r"c.jsonl:1: 'text' must be a string, got NoneType"),
    ],
)
def test_malformed_corpus_rows_name_file_and_line(tmp_path, rows, match):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ConfigurationError, match=match):
        load_corpus(str(path))


def test_malformed_beir_files_name_file_and_line(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n" + json.dumps({"_id": "q2"}))
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\n")
    with pytest.raises(MalformedRowError, match=r"queries.jsonl:2: missing field\(s\) text"):
        load_beir_queries(str(tmp_path))
    with pytest.raises(MalformedRowError, match=r"test.tsv:3: expected query-id, corpus-id and an integer score"):
        load_beir_qrels(str(tmp_path))
    assert load_corpus(str(tmp_path)) == [{"id": "d1", "title": "", "text": "x"}]
