"""SpiderQA builder on a hand-made database: counts, evidence, paraphrases, drops, templates, loading, metrics.

The database (built here, never a Spider file):

    airports(code PK, city)        1 APG 'Aberdeen '   2 ABR Aberdeen   3 ASY Ashley   4 ABI Abilene
    airlines(uid PK, name, country) 1 United Airlines USA   2 Delta USA   3 JetBlue NULL
    flights(airline, no, source, dest)
        1: 1 10 ' APG' ASY    2: 1 11 ABR ASY    3: 2 12 ASY APG    4: 2 13 ABI ASY    5: 1 14 APG ABI

Flights from Aberdeen to Ashley after trimming: 10 (APG) and 11 (ABR) -> 2; on the raw file only 11 joins
(' APG' != 'APG', and APG's city is 'Aberdeen ') -> 1. Evidence: flights 1, 2, airports 1, 2 (sources), 3 (dest).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from disambig.data.spiderqa import (
    BuildReport,
    TableSchema,
    build_spiderqa,
    choose_templates,
    default_template,
    load_scope,
    open_trimmed,
    render,
    table_schemas,
    template_error,
)

FROM_TO = ('SELECT count(*) FROM flights AS T1 JOIN airports AS T2 ON T1.source = T2.code JOIN airports AS T3 '
           'ON T1.dest = T3.code WHERE T2.city = "Aberdeen" AND T3.city = "Ashley"')
QUESTIONS = [
    {"db_id": "air", "question": "How many flights go from Aberdeen to Ashley?", "query": FROM_TO},
    {"db_id": "air", "question": "Count the flights from Aberdeen to Ashley.", "query": FROM_TO.lower() + " ;"},
    {"db_id": "air", "question": "How many different countries do airlines come from?",
     "query": "SELECT count(DISTINCT country) FROM airlines"},
    {"db_id": "air", "question": "How many airlines are from Canada?",
     "query": "SELECT count(*) FROM airlines WHERE country = 'Canada'"},
    {"db_id": "air", "question": "Which airlines are there?", "query": "SELECT name FROM airlines"},
    {"db_id": "air", "question": "How many flights does each airline have?",
     "query": "SELECT airline, count(*) FROM flights GROUP BY airline"},
    {"db_id": "air", "question": "How many flights does United Airlines operate?",
     "query": "SELECT count(*) FROM flights WHERE airline = 1"},
    {"db_id": "air", "question": "How many airlines have a known country?",
     "query": "SELECT count(country) FROM airlines"},
    {"db_id": "gone", "question": "How many things?", "query": "SELECT count(*) FROM things"},
]


def make_database(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "air.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE airports (code TEXT PRIMARY KEY, city TEXT);
        CREATE TABLE airlines (uid INTEGER PRIMARY KEY, name TEXT, country TEXT);
        CREATE TABLE flights (airline INTEGER REFERENCES airlines(uid), no INTEGER, source TEXT, dest TEXT);
        INSERT INTO airports VALUES ('APG', 'Aberdeen '), ('ABR', 'Aberdeen'), ('ASY', 'Ashley'), ('ABI', 'Abilene');
        INSERT INTO airlines VALUES (1, 'United Airlines', 'USA'), (2, 'Delta', 'USA'), (3, 'JetBlue', NULL);
        INSERT INTO flights VALUES (1, 10, ' APG', 'ASY'), (1, 11, 'ABR', 'ASY'), (2, 12, 'ASY', 'APG'),
                                   (2, 13, 'ABI', 'ASY'), (1, 14, 'APG', 'ABI');
    """)
    con.commit()
    con.close()
    return path


@pytest.fixture
def spider(tmp_path: Path) -> tuple[Path, Path]:
    make_database(tmp_path / "database")
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return questions, tmp_path / "database"


@pytest.fixture
def built(spider, tmp_path: Path) -> tuple[BuildReport, Path]:
    out = tmp_path / "spiderqa"
    return build_spiderqa(*spider, out, ext=True), out


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_counts_and_evidence_sizes(built) -> None:
    report, out = built
    kept = {q["question"]: q for q in rows(out / "questions.jsonl")}
    assert list(kept) == ["How many flights go from Aberdeen to Ashley?",
                          "How many different countries do airlines come from?",
                          "How many flights does United Airlines operate?", "How many airlines have a known country?"]
    trip = kept["How many flights go from Aberdeen to Ashley?"]
    assert (trip["gold_count"], trip["raw_sql_count"]) == (2, 1)
    assert sorted(trip["gold_chunk_ids"]) == ["spider/air/airports/1", "spider/air/airports/2", "spider/air/airports/3",
                                              "spider/air/flights/1", "spider/air/flights/2"]
    assert trip["gold_items"] == [["spider/air/flights/1", "spider/air/airports/1", "spider/air/airports/3"],
                                  ["spider/air/flights/2", "spider/air/airports/2", "spider/air/airports/3"]]
    assert trip["paraphrases"] == ["Count the flights from Aberdeen to Ashley."]
    countries = kept["How many different countries do airlines come from?"]  # USA only; JetBlue's NULL not counted
    assert countries["gold_count"] == 1
    assert countries["gold_chunk_ids"] == ["spider/air/airlines/1", "spider/air/airlines/2"]
    assert countries["query_type"] == "count-distinct"
    assert kept["How many flights does United Airlines operate?"]["gold_count"] == 3  # flights 10, 11, 14
    known = kept["How many airlines have a known country?"]  # count(country) skips the NULL
    assert (known["gold_count"], len(known["gold_chunk_ids"])) == (2, 2)
    assert all(len(q["gold_items"]) == q["gold_count"] for q in kept.values())


def test_dropped_questions_are_reported_with_reasons(built) -> None:
    report, out = built
    assert report.dropped == {
        "paraphrase of a kept question (same database and SQL)": 1,
        "gold count 0 (no evidence; NACE undefined)": 1,
        "not a scalar COUNT question (enumeration)": 1,
        "not a scalar COUNT question (grouped or other aggregate)": 1,
        "database file missing": 1,
    }
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "aggregation" and manifest["questions"] == 4 and manifest["chunks"] == 12
    assert "database file missing" in (out / "README.md").read_text(encoding="utf-8")


def test_every_gold_chunk_is_in_the_corpus(built) -> None:
    _, out = built
    corpus = {c["id"]: c for c in rows(out / "corpus.jsonl")}
    assert len(corpus) == 12  # 4 airports + 3 airlines + 5 flights, one row per chunk
    for file in ("questions.jsonl", "questions-ext.jsonl"):
        for q in rows(out / file):
            assert set(q["gold_chunk_ids"]) <= set(corpus)
    assert corpus["spider/air/airports/1"]["text"] == "Airports record: code is APG; city is Aberdeen."  # trimmed
    assert corpus["spider/air/airlines/3"]["text"].endswith("country is unknown.")


def test_extension_turns_enumerations_into_counts(built) -> None:
    report, out = built
    ext = rows(out / "questions-ext.jsonl")
    assert [(q["source_question"], q["gold_count"]) for q in ext] == [("Which airlines are there?", 3)]
    assert ext[0]["question"].startswith("How many distinct answers")
    assert report.questions_ext == 1


def test_rows_per_chunk_packs_rows_and_maps_evidence(spider, tmp_path: Path) -> None:
    out = tmp_path / "packed"
    build_spiderqa(*spider, out, rows_per_chunk=2)
    corpus = {c["id"] for c in rows(out / "corpus.jsonl")}
    assert len(corpus) == 7  # airports 2 + airlines 2 + flights 3
    trip = rows(out / "questions.jsonl")[0]
    assert sorted(trip["gold_chunk_ids"]) == ["spider/air/airports/1", "spider/air/airports/3", "spider/air/flights/1"]
    assert set(trip["gold_chunk_ids"]) <= corpus


def test_max_chunks_drops_larger_databases_with_a_reason(spider, tmp_path: Path) -> None:
    # air renders as 12 chunks (4 airports, 3 airlines, 5 flights): a cap of 12 keeps it, 11 drops it
    kept = build_spiderqa(*spider, tmp_path / "kept", ext=True, max_chunks=12)
    capped = build_spiderqa(*spider, tmp_path / "capped", ext=True, max_chunks=11)
    assert kept.questions > 0 and kept.chunks == 12
    assert capped.questions == 0 and capped.questions_ext == 0 and capped.chunks == 0
    reason = "database larger than 11 chunks (max_chunks)"
    assert capped.dropped[reason] == kept.questions and capped.dropped_ext[reason] == kept.questions_ext
    assert json.loads((tmp_path / "capped" / "manifest.json").read_text())["options"]["max_chunks"] == 11
    with pytest.raises(ValueError, match="max_chunks"):
        build_spiderqa(*spider, tmp_path / "bad", max_chunks=0)
    asked: list[str] = []  # a database over the cap costs no template-writing LM call
    build_spiderqa(*spider, tmp_path / "asked", write_template=lambda schema: asked.append(schema.name) or "",
                   max_chunks=11)
    assert asked == []
    build_spiderqa(*spider, tmp_path / "asked", write_template=lambda schema: asked.append(schema.name) or "",
                   max_chunks=12, rows_per_chunk=2)
    assert sorted(asked) == ["airlines", "airports", "flights"]


def test_written_templates_are_validated_and_fall_back(spider, tmp_path: Path) -> None:
    con = open_trimmed(spider[1] / "air.sqlite")
    schemas = {s.name: s for s in table_schemas(con, "air")}
    good = "Airport {code} serves the city of {city}."
    report = BuildReport(out="")

    def writer(schema: TableSchema) -> str:
        return {"airports": good, "airlines": "Airline {uid} is {name}."}.get(schema.name) or 1 / 0

    chosen = choose_templates(list(schemas.values()), writer, report)
    assert chosen["airports"] == good and report.templates["air.airports"]["source"] == "llm"
    assert chosen["airlines"] == default_template(schemas["airlines"])  # 'country' missing
    assert "missing ['country']" in report.templates["air.airlines"]["source"]
    assert "ZeroDivisionError" in report.templates["air.flights"]["source"]
    assert render(good, schemas["airports"], ("APG", "Aberdeen")) == "Airport APG serves the city of Aberdeen."


@pytest.mark.parametrize("template, error", [
    ("", "empty"),
    ("{code} {code} {city}", "repeated ['code']"),
    ("{code} in {town}", "unknown ['town']"),
    ("{code} in {city} }", "unbalanced"),
])
def test_bad_templates_are_rejected(spider, template: str, error: str) -> None:
    schema = next(s for s in table_schemas(open_trimmed(spider[1] / "air.sqlite"), "air") if s.name == "airports")
    assert error in template_error(template, schema)


def test_template_writer_with_a_scripted_lm(spider) -> None:
    import dspy
    from program_fakes import scripted_lm

    from disambig.signatures.dfa import WriteRowTemplate

    lm, engine = scripted_lm({"sentence template": lambda user: {"template": "Airport {code} is in {city}."}})
    predictor = dspy.Predict(WriteRowTemplate)
    report = BuildReport(out="")
    schemas = [s for s in table_schemas(open_trimmed(spider[1] / "air.sqlite"), "air") if s.name == "airports"]
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        chosen = choose_templates(schemas, lambda s: predictor(
            database=s.db_id, table=s.name, columns=[c.placeholder for c in s.columns], foreign_keys=[],
            sample_rows=[]).template, report)
    assert chosen["airports"] == "Airport {code} is in {city}." and len(engine.calls) == 1


def test_the_folder_loads_as_an_aggregation_dataset(built) -> None:
    from disambig.data import load_dataset
    from disambig.data.loaders import dataset_format
    from disambig.metrics import default_metrics

    _, out = built
    examples = load_dataset(str(out))
    assert len(examples) == 4 and dataset_format(str(out)) == "aggregation"
    first = examples[0]
    assert (first.gold_count, first.scope, first.dataset) == (2, "air", "spiderqa")
    assert Path(first.corpus) == out / "corpus.jsonl"
    assert set(first.inputs().keys()) == {"question", "scope", "corpus"}
    assert len(load_scope(first.corpus, first.scope)) == 12
    assert default_metrics("aggregation") == ["ace", "nace", "chunk-recall"]
    ext = load_dataset(str(out / "questions-ext.jsonl"))
    assert ext[0].gold_count == 3 and Path(ext[0].corpus) == out / "corpus.jsonl"


def test_gold_judging_demo_points_at_each_counted_items_evidence(built) -> None:
    from disambig.data import load_dataset
    from disambig.optimizers.gold import with_gold_fields

    _, out = built
    first = load_dataset(str(out))[0]  # flights 10 and 11 from Aberdeen to Ashley
    trip = with_gold_fields(first, "dfa")
    lines = trip.chunks.splitlines()
    shown = {int(line[1:line.index("]")]): line for line in lines}
    assert [e.name for e in trip.entities] == ["airline is 1; no is 10; source is APG",
                                               "airline is 1; no is 11; source is ABR"]
    assert all(e.name in shown[e.chunks[0]] for e in trip.entities)  # named by words the chunk states
    # the count baselines also output `entities` (as names): they get no half-filled demo from these rows
    assert not hasattr(with_gold_fields(first, "llm-only-count"), "entities")
    for entity, item in zip(trip.entities, trip.gold_items, strict=True):
        assert len(entity.chunks) == len(item) and all(n in shown for n in entity.chunks)
    cited = {n for e in trip.entities for n in e.chunks}
    assert len(lines) == len(cited) + 2  # the evidence chunks, interleaved with two that evidence nothing
    assert "no is 10" in shown[trip.entities[0].chunks[0]] and "no is 11" in shown[trip.entities[1].chunks[0]]
    assert "city is Ashley" in shown[trip.entities[0].chunks[-1]] and len(trip.entities[0].chunks) == 3
    assert set(trip.inputs().keys()) == {"question", "scope", "corpus"}


def test_count_metrics_read_the_prediction(built) -> None:
    import dspy

    from disambig.metrics import get_metric

    _, out = built
    from disambig.data import load_dataset

    example = load_dataset(str(out))[0]  # gold 2, five gold chunks
    pred = dspy.Prediction(count=3, retained_chunk_ids=["spider/air/flights/1", "spider/air/airports/1"])
    assert get_metric("ace")(example, pred) == 1.0
    assert get_metric("nace")(example, pred) == pytest.approx(0.5)
    assert get_metric("chunk-recall")(example, pred) == pytest.approx(2 / 5)
    assert get_metric("count-score")(example, dspy.Prediction(long_answer="2: a, b")) == pytest.approx(1.0)


def test_cli_builds_the_folder(spider, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from disambig.cli.app import app

    out = tmp_path / "cli-out"
    result = CliRunner().invoke(app, ["data", "spiderqa", "--questions", str(spider[0]), "--databases",
                                      str(spider[1]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 questions over 1 databases" in " ".join(result.output.split())
    assert (out / "questions.jsonl").is_file() and not (out / "questions-ext.jsonl").exists()


@pytest.mark.parametrize(("out", "message"), [
    (".", "--out '.' holds files not written by `disambig data spiderqa`; pass a new or empty folder"),  # it wrote
    ("dev.json/sqa", "--out 'dev.json/sqa': 'dev.json' is a file, not a folder; write elsewhere"),  # a traceback
])
def test_cli_refuses_an_out_it_would_clobber_or_cannot_write_before_building(spider, tmp_path, monkeypatch, out,
                                                                            message) -> None:
    """Found by fuzzing the command line: ``--out .`` overwrote the working folder's README.md and questions.jsonl,
    and an --out through a file failed with a traceback once the benchmark was built."""
    from typer.testing import CliRunner

    from disambig.cli.app import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("mine")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = CliRunner().invoke(app, ["data", "spiderqa", "--questions", "dev.json", "--databases", "database",
                                      "--out", out])
    assert (result.exit_code, " ".join(result.output.split())) == (2, f"error: {message}")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and (tmp_path / "README.md").read_text() == "mine"


@pytest.mark.parametrize(("args", "files", "message"), [
    (["--max-rows-per-question", "nan"], {}, "max_rows_per_question=nan must be a positive number (rows per kept "
                                             "question)"),  # no cap, in silence
    (["--max-rows-per-question", "-1"], {}, "max_rows_per_question=-1.0 must be a positive number (rows per kept "
                                            "question)"),  # every database dropped
    (["--max-rows-per-question", "0"], {}, "max_rows_per_question=0.0 must be a positive number (rows per kept "
                                           "question)"),  # no cap
    (["--databases", "."], {}, "--databases '.' holds none of the 2 database(s) the questions name (looked for "
                               "air.sqlite and air/air.sqlite); give the database folder of the Spider release"),
    (["--questions", "q.json"], {"q.json": b"{not json"}, "question file 'q.json' is not JSON (Expecting property "
     "name enclosed in double quotes); give Spider's dev.json (a JSON list of {db_id, question, query}) or one such "
     "object a line"),  # the parser's bare message
    (["--questions", "q.json"], {"q.json": b"\xff\xfe"}, "question file 'q.json' is not UTF-8 text; give Spider's "
     "dev.json (a JSON list of {db_id, question, query}) or one such object a line"),  # a traceback
    (["--questions", "q.json"], {"q.json": b"[1]"}, "q.json: question 1 is a JSON int, not an object of db_id, "
                                                    "question and query"),  # a traceback
    (["--questions", "q.json"], {"q.json": b'[{"db_id": [], "question": "?", "query": "?"}]'},
     "q.json: question 1's db_id must be text"),  # a traceback
    (["--questions", "q.json"], {"q.json": b"[]"}, "question file 'q.json' holds no question"),  # an empty benchmark
    (["--lm", ""], {}, "LM spec is empty; use 'local', 'local:NAME', 'local:/path/model.gguf' or "
                       "'provider/model'"),  # built with the deterministic templates, as if no --lm were given
])
def test_cli_refuses_bad_inputs_in_one_line_and_writes_nothing(spider, tmp_path, monkeypatch, args, files,
                                                               message) -> None:
    """Found by fuzzing the command line; a --databases without any of the questions' databases built an empty
    benchmark (exit 0)."""
    from typer.testing import CliRunner

    from disambig.cli.app import app

    monkeypatch.chdir(tmp_path)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    given = dict(zip(args[::2], args[1::2], strict=True))
    given = {"--questions": "dev.json", "--databases": "database", **given, "--out": "sqa"}
    result = CliRunner().invoke(app, ["data", "spiderqa", *[part for pair in given.items() for part in pair]])
    assert (result.exit_code, " ".join(result.output.split())) == (2, f"error: {message}")
    assert not (tmp_path / "sqa").exists()
