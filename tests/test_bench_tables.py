"""``bench/quality/spiderqa_table.py``, ``amd_table.py``, ``passage_talk.py`` and ``bench/cost/speed_table.py``:
tables made from stored runs, without an LM."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def spiderqa(folder: Path) -> Path:
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", [{"id": f"c{i}", "title": "t", "text": f"row {i}", "db_id": "db"}
                                          for i in range(4)])
    write_jsonl(folder / "questions.jsonl", [
        {"id": "q1", "question": "How many rows?", "gold_count": 4, "gold_chunk_ids": ["c0", "c1", "c2", "c3"],
         "scope": "db", "corpus": "corpus.jsonl"},
        {"id": "q2", "question": "How many even rows?", "gold_count": 2, "gold_chunk_ids": ["c0", "c2"],
         "scope": "db", "corpus": "corpus.jsonl"}])
    return folder


def count_run(folder: Path, dataset: Path, rows: list[dict], commit: str = "abc123") -> Path:
    folder.mkdir()
    (folder / "params.json").write_text(json.dumps({"dataset": str(dataset), "split": "all", "lm_model": "m.gguf"}))
    trace = {"lm_calls": 2, "input_tokens": 90, "output_tokens": 10, "seconds": 3.0, "retrieval_calls": 0}
    write_jsonl(folder / "results.jsonl", [{"code": {"commit": commit, "dirty": False}, "trace": trace, **r}
                                           for r in rows])
    return folder


def test_spiderqa_table_rescores_stored_counts_on_the_common_questions(tmp_path, bench):
    table = bench("bench.quality.spiderqa_table")
    dataset = spiderqa(tmp_path / "sq")
    exact = count_run(tmp_path / "runs-a", dataset, [
        {"id": "q1", "prediction": {"count": 4, "retained_chunk_ids": ["c0", "c1"]}, "error": None},
        {"id": "q2", "prediction": {"count": 3, "retained_chunk_ids": ["c0", "c2"]}, "error": None}])
    failed = count_run(tmp_path / "runs-b", dataset, [  # a failure counts 0 even if a count was stored
        {"id": "q1", "prediction": {"count": 4, "retained_chunk_ids": ["c0"]}, "error": "timeout"}])
    rows = {r["name"]: r for r in (table.summary(table.scored(run), ["q1"]) for run in (exact, failed))}
    assert rows["runs-a"]["ace_mean"] == 0 and rows["runs-a"]["recall"] == 0.5 and rows["runs-a"]["exact"] == 1
    assert rows["runs-b"]["ace_mean"] == 4 and rows["runs-b"]["recall"] == 0 and rows["runs-b"]["failures"] == 1
    both = table.summary(table.scored(exact), ["q1", "q2"])
    assert both["nace_median"] == pytest.approx(0.25) and both["ace_mean"] == 0.5 and both["lm_calls"] == 2
    text = table.section("runs", [table.scored(exact), table.scored(failed)])
    assert "1 questions every run answered" in text and "| `runs-b` | 1 | 1 | 1.000 |" in text
    assert "| DFA | 0.262 | 0.143 | 4.000 | 0.891 |" in text


def test_amd_table_reads_gains_against_the_searching_retriever(tmp_path, bench):
    table = bench("bench.quality.amd_table")
    code = {"commit": "abc123", "dirty": False}
    plain = [{"retriever": name, "dataset": "dbpedia-entity-5k", "queries": 40, "code": code,
              "metrics": {"ndcg@10": value, "recall@100": 0.9, "mrr@10": 0.5}}
             for name, value in (("bm25", 0.30), ("dense", 0.50))]
    spent = {"made_lm_calls": 5.0, "made_input_tokens": 900.0, "made_output_tokens": 600.0, "made_seconds": 40.0,
             "from_cache": 40}
    expanded = [{"retriever": name, "dataset": "dbpedia-entity-5k", "queries": 40, "code": code, "lm": "m.gguf",
                 "expansion": spent, "metrics": {"ndcg@10": value, "recall@100": 0.9, "mrr@10": 0.5}}
                for name, value in (("amd-sparse", 0.35), ("amd-dense", 0.45))]
    folder = tmp_path / "amd"
    folder.mkdir()
    (folder / "dbpedia-plain.json").write_text(json.dumps(plain))
    (folder / "dbpedia-amd.json").write_text(json.dumps(expanded))
    text = table.section(folder, table.load_rows(folder))
    assert "| `amd-sparse` | 0.3500 | +0.0500 |" in text and "| `amd-dense` | 0.4500 | -0.0500 |" in text
    assert "| 5.0 | 900 + 600 | 40 | 40/40 | `abc123` | 0.3352 |" in text
    assert text.index("`bm25`") < text.index("`amd-sparse`") < text.index("`dense`") < text.index("`amd-dense`")


def test_amd_table_gives_a_paired_interval_where_both_rows_hold_each_querys_scores(tmp_path, bench):
    table = bench("bench.quality.amd_table")
    code = {"commit": "abc123", "dirty": False}
    spent = {"made_lm_calls": 5.0, "made_input_tokens": 900.0, "made_output_tokens": 600.0, "made_seconds": 40.0,
             "from_cache": 0}

    def row(name: str, values: list[float], **extra) -> dict:
        per_query = {f"q{i}": {"ndcg@10": v, "recall@100": 1.0, "mrr@10": 1.0} for i, v in enumerate(values)}
        return {"retriever": name, "dataset": "/cache/asqa-ir30", "split": "dev", "queries": len(values),
                "code": code, "per_query": per_query, **extra,
                "metrics": {"ndcg@10": sum(values) / len(values), "recall@100": 1.0, "mrr@10": 1.0}}

    base = [0.2, 0.4, 0.6, 0.8] * 5
    rows = [row("bm25", base), row("amd-sparse", [v + 0.1 for v in base], lm="m", expansion=spent),
            row("dense", base), row("amd-dense", [v + (0.1 if i % 2 else -0.1) for i, v in enumerate(base)],
                                    lm="m", expansion=spent)]
    (tmp_path / "asqa.json").write_text(json.dumps(rows))
    text = table.section(tmp_path, table.load_rows(tmp_path), "amd15")
    # better by 0.1 on every query: a zero-wide interval above 0; up and down by 0.1 in turn: a tie
    assert "| `amd-sparse` | 0.6000 | +0.1000 [+0.1000, +0.1000] better |" in text
    assert "| `amd-dense` | 0.5000 | +0.0000 [-0.0" in text and "] tie |" in text
    assert "#### ASQA retrieval set (20 dev questions over the wiki slice)" in text
    assert "--results " + str(tmp_path) + " --section amd15`" in text
    old = [{**r, "per_query": {}} for r in rows[:2]]  # rows written before per-query scores: the means' difference
    (tmp_path / "asqa.json").write_text(json.dumps(old))
    assert "| `amd-sparse` | 0.6000 | +0.1000 | 1.0000 |" in table.section(tmp_path, table.load_rows(tmp_path))


def test_amd_table_names_a_compiled_expansion_after_its_retriever(tmp_path, bench):
    table = bench("bench.quality.amd_table")
    code = {"commit": "abc123", "dirty": False}
    spent = {"made_lm_calls": 5.0, "made_input_tokens": 900.0, "made_output_tokens": 600.0, "made_seconds": 40.0,
             "from_cache": 0}
    rows = [{"retriever": "amd-sparse", "dataset": "runs/asqa-retrieval", "queries": 50, "code": code, "lm": "m",
             "expansion": spent, "expansion_state": state, "metrics": {"ndcg@10": value, "recall@100": 1, "mrr@10": 1}}
            for state, value in (("artifacts/amd/bootstrap.json", 0.6), (None, 0.7))]
    (tmp_path / "asqa.json").write_text(json.dumps(rows))
    text = table.section(tmp_path, table.load_rows(tmp_path))
    assert text.index("| `amd-sparse` | 0.7000 |") < text.index("| `amd-sparse [bootstrap.json]` | 0.6000 |")
    hot = [{**rows[1], "temperature": 1.0, "metrics": {"ndcg@10": 0.5, "recall@100": 1, "mrr@10": 1}}]
    (tmp_path / "asqa-hot.json").write_text(json.dumps(hot))
    text = table.section(tmp_path, table.load_rows(tmp_path))
    assert "| `amd-sparse [temperature 1.0]` | 0.5000 |" in text and "temperature 0.5, 1.0 (the poster" in text
    tallied = [{**rows[1], "variant": "answers unreflected",
                "reflection": {"queries": 50, "questioning_failed": 15, "answers": 104, "kept": 0}}]
    (tmp_path / "asqa-unreflected.json").write_text(json.dumps(tallied))
    text = table.section(tmp_path, table.load_rows(tmp_path))
    assert "could not be parsed for 15 (searched with the query alone); reflection kept 0 of the 104" in text
    assert "ASQA retrieval set" in text and "poster" not in text.split("####")[1]



def test_speed_table_averages_seconds_calls_and_tokens_per_question(tmp_path, bench):
    speed = bench("bench.cost.speed_table")
    run = tmp_path / "runs" / "m-vanilla"
    run.mkdir(parents=True)
    (run / "params.json").write_text(json.dumps({"program": "vanilla-rag", "dataset": "q.jsonl", "lm": "local:m"}))
    traces = [{"seconds": 30.0, "lm_calls": 2, "input_tokens": 1000, "reused_prompt_tokens": 0, "output_tokens": 100},
              {"seconds": 10.0, "lm_calls": 2, "input_tokens": 1200, "reused_prompt_tokens": 600, "output_tokens": 50},
              {"seconds": 20.0, "lm_calls": 3, "input_tokens": 800, "reused_prompt_tokens": 300, "output_tokens": 30}]
    write_jsonl(run / "results.jsonl", [{"id": f"q{i}", "code": {"commit": "abc123", "dirty": False}, "trace": t,
                                         "prediction": {"long_answer": "x"}, "error": None}
                                        for i, t in enumerate(traces)])
    row = speed.measure(run)
    # mean (30 + 10 + 20) / 3 = 20; without the first (10 + 20) / 2 = 15; median 20; calls 7 / 3; reused 900 / 3
    assert (row["n"], row["mean"], row["rest"], row["median"]) == (3, 20.0, 15.0, 20.0)
    assert row["calls"] == pytest.approx(7 / 3) and row["reused"] == 300 and row["generated"] == 60
    assert row["interval"].low <= 20.0 <= row["interval"].high and row["value"] is None
    assert "| local:m | vanilla-rag | 3 | 20.0 [" in speed.table([row]) and "| 1,000 (300) | 60 | – | `abc123` | – |" \
        in speed.table([row])
    sittings = [("start", 0, "CPU A"), ("end", 2, "CPU A"), ("start", 2, "CPU B"), ("end", 3, "CPU B")]  # resumed
    (run / "machine.jsonl").write_text("".join(json.dumps({"event": e, "rows": n, "cpu": c}) + "\n"
                                               for e, n, c in sittings))
    assert "| `abc123` | CPU A, CPU B | – |" in speed.table([speed.measure(run)])



def test_speed_table_sets_a_later_run_beside_the_earlier_run_of_the_same_program(tmp_path, bench):
    speed = bench("bench.cost.speed_table")

    def run(folder: str, commit: str, seconds: list[float], answers: list[str]):
        path = tmp_path / folder / "m-diva"
        path.mkdir(parents=True)
        (path / "params.json").write_text(json.dumps({"program": "diva", "dataset": "q.jsonl", "lm": "local:m"}))
        write_jsonl(path / "results.jsonl", [{"id": f"q{i}", "code": {"commit": commit, "dirty": False},
                                              "trace": {"seconds": s}, "prediction": {"long_answer": a}, "error": None}
                                             for i, (s, a) in enumerate(zip(seconds, answers, strict=True))])
        return speed.measure(path)

    before = run("before", "old111", [40.0, 60.0, 50.0], ["a", "b", "c"])
    after = run("after", "new222", [20.0, 30.0], ["a", "B"])  # the third question not answered yet
    text = speed.table([before, after], {("local:m", "diva", "q.jsonl"): before})
    # on q0 and q1: (20 + 30) / (40 + 60) = 0.50; one of the two answers unchanged
    line = next(line for line in text.splitlines() if "`new222`" in line)
    assert "| 0.50 [" in line and "of `old111`, 1/2 same answers |" in line
    assert next(line for line in text.splitlines() if "`old111`" in line).endswith("| – |")
    after["answers"][1] = None  # a failed question is left out of the pairing: one question left, no ratio
    assert speed.table([after], {("local:m", "diva", "q.jsonl"): before}).splitlines()[-1].endswith("| – |")


def test_speed_table_takes_the_earlier_runs_from_the_first_folder_only(tmp_path, bench, monkeypatch, capsys):
    speed = bench("bench.cost.speed_table")
    for folder, commit, seconds in [("a", "old111", 40.0), ("b", "new222", 20.0), ("c", "new333", 10.0)]:
        path = tmp_path / folder / "m-diva"
        path.mkdir(parents=True)
        (path / "params.json").write_text(json.dumps({"program": "diva", "dataset": "q.jsonl", "lm": "local:m"}))
        write_jsonl(path / "results.jsonl", [{"id": f"q{i}", "code": {"commit": commit, "dirty": False},
                                              "trace": {"seconds": seconds}, "prediction": {"long_answer": "a"},
                                              "error": None} for i in range(3)])
    monkeypatch.setattr("sys.argv", ["speed_table", "--runs", *(str(tmp_path / f) for f in "abc")])
    speed.main()
    lines = {line.split("`")[1]: line for line in capsys.readouterr().out.splitlines() if line.startswith("| local")}
    assert lines["old111"].endswith("| – |")
    assert "| 0.50 [0.50, 0.50] of `old111`, 3/3 same answers |" in lines["new222"]
    assert "| 0.25 [0.25, 0.25] of `old111`, 3/3 same answers |" in lines["new333"]

def test_passage_talk_bench_cleans_stored_rows_without_changing_them(tmp_path, bench):
    talk = bench("bench.quality.passage_talk")
    stored = [{"id": "q1", "prediction": {"long_answer": "The passage states that Koepka won. He won in 2017.",
                                          "interpretations": [{"question": "Who won?", "answer": "Koepka"}]}},
              {"id": "q2", "prediction": None, "error": "timeout"}]
    cleaned, changed = talk.cleaned_rows(stored)
    assert cleaned[0]["prediction"]["long_answer"] == "Koepka won. He won in 2017." and changed == 1
    assert cleaned[1] == stored[1] and stored[0]["prediction"]["long_answer"].startswith("The passage")
    assert (talk.naming(stored), talk.naming(cleaned)) == (1, 0)


def test_a_zero_scored_question_is_counted_where_its_answer_is_first_missing():
    import dspy

    from bench.quality.answerable import STAGES, gold_answers, padded, stage

    example = dspy.Example(interpretations=[{"question": "q1", "answers": ["The Beatles"]},
                                            {"question": "q2", "answers": ["1964"]}])
    golds = gold_answers(example)
    assert golds == [" 1964 ", " beatles "]  # articles and case gone, whole words
    corpus = padded("The Beatles toured in 1965. Rolling Stones.")
    assert stage(golds, padded("Nothing here about 19645."), "", "") == STAGES[0]  # no whole-word match
    assert stage(golds, corpus, padded("The Rolling Stones."), "") == STAGES[1]
    assert stage(golds, corpus, padded("Beatles!"), padded("It was the Stones.")) == STAGES[2]
    assert stage(golds, corpus, padded("Beatles!"), padded("The Beatles, in 1965.")) == STAGES[3]


def test_diva_composed_at_a_threshold_answers_closed_book_only_when_no_reading_reaches_it():
    from bench.quality.diva_thresholds import compose

    diva = {"a": {"trace": {"notes": {"yes_probabilities": [0.2, 0.65]}}},
            "b": {"trace": {"notes": {"yes_probabilities": [0.9, 0.95]}}},
            "c": {"trace": {"notes": {}}}}  # no reading verified: Useless at any threshold
    rac = {q: {"id": q, "from": "rac"} for q in "abc"}
    closed = {q: {"id": q, "from": "closed"} for q in "abcd"}  # d: no DIVA row, left out
    rows, counts = compose(diva, rac, closed, 0.6)
    assert [r["from"] for r in rows] == ["rac", "rac", "closed"]
    assert counts == {"Useful": 1, "PartialUseful": 1, "Useless": 1}
    rows, counts = compose(diva, rac, closed, 0.7)
    assert [r["from"] for r in rows] == ["closed", "rac", "closed"] and counts["Useful"] == 1


def test_cut_answers_counts_long_answers_that_end_mid_sentence(tmp_path, bench, monkeypatch):
    cut = bench("bench.quality.cut_answers")
    run = tmp_path / "vanilla-rag-asqa"
    run.mkdir()
    (run / "params.json").write_text(json.dumps({"dataset": "asqa", "code": {"commit": "abc123"}}))
    note = 'Sources disagree on "Q?": A (T1) vs B (T2).'
    answers = [("The episode in question is titled", ""), ('It is "Yesterday".', ""), ("The song ", note),
               ("Klose scored 16 goals (a record)", ""), ("Done!", note)]
    write_jsonl(run / "results.jsonl", [
        {"id": f"q{i}", "code": {"commit": "abc123", "dirty": False}, "error": None,
         "prediction": {"long_answer": (a + " " + n).strip() if n else a, "conflict_note": n}}
        for i, (a, n) in enumerate(answers)])
    (row,) = [cut.measure(run)]
    # the title cut off, and "The song" once the note is taken off; a closing quote or bracket ends a sentence
    assert (row["answers"], row["cut"]) == (5, 2) and row["endings"] == ["The episode in question is titled",
                                                                          "The song"]
    assert "| vanilla-rag | asqa | 5 | 2 | 40% |" in cut.table([row])
    # --first: the answers to the split's first questions only (here q1 and q2, the split's order)
    monkeypatch.setattr(cut, "first_ids", lambda run_params, n: {"q1", "q2"} if n == 2 else set())
    assert (cut.measure(run, first=2)["answers"], cut.measure(run, first=2)["cut"]) == (2, 1)
