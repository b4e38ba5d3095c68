"""Fuzzed command lines and files of the tools around the programs: ``score`` (prediction rows of any shape, bad
--dataset/--metric/--out), ``search`` (any query, -k, retriever, corpus), ``index build`` (corpus rows of any shape,
bad shard sizes, FAISS factories and search options) and ``route predict`` (another program's or a broken artifact,
question tables of any bytes, bad --out). Each ends in exit 0, or exit 2 with one ``error:`` line (or Click's usage
error), never a traceback; a refused command leaves every file as it was, and no command writes outside its own
output (a refused index build may keep its resumable ``.partial`` work folder, which nothing opens as an index)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from dspy.utils import DummyLM
from fuzz_support import FUZZ, TEXT, changed, snapshot, working_folder
from hypothesis import given, settings
from hypothesis import strategies as st
from program_fakes import use_in_cli
from retrieval_fakes import VocabEmbedder, write_corpus
from route_fakes import FakeHybrid
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import metric_names

FEWER = settings(FUZZ, max_examples=FUZZ.max_examples // 2)  # eight fuzz tests here: the suite's ~30 s budget
ROUTE_STATE = "art/route/q/policy.json"
OTHER_STATE = "art/closed-book/q/plain.json"
WORDS = ("zebra", "stripes", "lion", "ants", "penguin", "ice")
CORPUS = [{"id": f"p{i}", "title": WORDS[i].title(), "text": f"The {WORDS[i]} and the {WORDS[(i + 1) % 6]}."}
          for i in range(6)]

SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(**TEXT), max_size=12)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=5)


def word(max_size: int = 16):
    return st.text(st.characters(**TEXT), min_size=1, max_size=max_size).filter(lambda s: not s.startswith("-"))


def file_name(suffix: str):
    return word(10).map(lambda s: "".join(c if c.isalnum() else "_" for c in s) + suffix)


def count(valid: bool = True):
    """-k, --limit, --shard-size...: mostly hostile (zero, negative, huge, not a number), sometimes a fine one."""
    bad = st.one_of(st.integers(max_value=0).map(str), st.just("99999999999999999999"),
                    st.text(st.characters(**TEXT), max_size=6).filter(lambda s: not s.strip().isdigit()))
    return st.one_of(bad, st.integers(1, 8).map(str)) if valid else bad


@st.composite
def mangled(draw, good: dict) -> dict:
    """``good`` with one field removed, or replaced by any JSON value."""
    row = dict(good)
    key = draw(st.sampled_from(sorted(row)))
    if draw(st.booleans()):
        del row[key]
    else:
        row[key] = draw(JSON)
    return row


def lines_of(rows) -> st.SearchStrategy[bytes]:
    """A file of JSON lines drawn from ``rows``, mixed with lines that are not JSON objects or not UTF-8."""
    line = st.one_of(rows.map(lambda r: json.dumps(r).encode()), rows.map(lambda r: json.dumps(r).encode()),
                     JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=30),
                     st.sampled_from([b"", b"\xef\xbb\xbf{}", b'{"id": "x", "text":', b"\xff\xfe"]))
    return st.lists(line, min_size=0, max_size=5).map(lambda ls: b"\n".join(x.replace(b"\n", b" ") for x in ls))


def outcome(result) -> None:
    """Exit 0, or exit 2 with one ``error:`` line or Click's usage error; never a traceback."""
    output = result.output
    assert result.exit_code in (0, 2), (result.exit_code, output[-2000:], result.exception)
    assert "Traceback" not in output, output[-2000:]
    if result.exit_code == 2:
        errors = [line for line in output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 or ("Usage:" in output and not errors), output[-2000:]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The working folder every case starts from: questions, predictions, a corpus with its dense index built, a
    compiled route and a compiled closed-book."""
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program
    from disambig.programs.route import LinearModel, RoutePolicy
    from disambig.retrieval.factory import ensure_index

    folder = tmp_path_factory.mktemp("template")
    rows = [json.loads(line) for line in (Path(__file__).parent / "fixtures" / "asqa-mini.jsonl").read_text()
            .splitlines()]
    shutil.copy(Path(__file__).parent / "fixtures" / "asqa-mini.jsonl", folder / "q.jsonl")
    (folder / "p.jsonl").write_text("".join(json.dumps(good_prediction(r)) + "\n" for r in rows), encoding="utf-8")
    write_corpus(folder / "corpus.jsonl", CORPUS)
    ensure_index("dense", str(folder / "corpus.jsonl"), folder / "cache", VocabEmbedder())
    (folder / "questions.csv").write_text("id,question\na,Who wrote Moby Dick?\n", encoding="utf-8")
    route = build_program("route", FakeHybrid(), candidates=["closed-book"], allow=["clarify"])
    route.policy_ = RoutePolicy("answer:closed-book", None, LinearModel(
        ("dense_gap",), ("answer:closed-book", "clarify"), *map(np.array, ([0.0], [1.0], [[0.0]], [5.0]))))
    save_artifact(route, folder / ROUTE_STATE, {"program": "route", "retriever": "hybrid:wiki-slice",
                                                "knobs": {"candidates": ["closed-book"], "allow": ["clarify"]}})
    save_artifact(build_program("closed-book"), folder / OTHER_STATE, {"program": "closed-book", "optimizer": "none"})
    (folder / "broken").mkdir()
    (folder / "broken" / "policy.json").write_text((folder / ROUTE_STATE).read_text()[:40], encoding="utf-8")
    shutil.copy(folder / ROUTE_STATE.replace("policy.json", "manifest.json"), folder / "broken" / "manifest.json")
    return folder


def good_prediction(row: dict) -> dict:
    return {"id": row["id"], "question": row["question"], "long_answer": "It was Canberra.", "answers": ["Canberra"],
            "interpretations": [{"question": row["question"], "answer": "Canberra", "passage_ids": ["p1"]}],
            "passages": [{"id": "p1", "title": "Australia", "text": "Canberra is the capital."}]}


def run_case(template: Path, monkeypatch, args: list[str], files: dict[str, bytes] | None = None,
             may_write: tuple[str, ...] = ()) -> None:
    """Run ``args`` in a copy of the template (with ``files`` written first); check the outcome and that nothing but
    ``may_write`` changed (and, after a refusal, nothing at all but a build's resumable work folder)."""
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "Herman Melville."}] * 20, adapter=CompactJSONAdapter()))
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: VocabEmbedder())
    monkeypatch.setattr("disambig.optimizers.loading._build_retriever", lambda spec, settings: FakeHybrid())
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        for name, data in (files or {}).items():
            (folder / name).write_bytes(data)
        monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(folder / "cache"))
        before = snapshot(folder)
        result = CliRunner().invoke(app, args)
        outcome(result)
        bookkeeping = ("cache/corpus-hashes.json", "cache/index-locks/")  # remembered hashes, lock files
        allowed = may_write + bookkeeping if result.exit_code == 0 else bookkeeping
        moved = changed(before, snapshot(folder), allowed)
        assert [n for n in moved if ".partial/" not in n] == [], (result.exit_code, result.output[-500:])


# ---- score --------------------------------------------------------------------------------------------------------

QUESTIONS = [json.loads(line) for line in (Path(__file__).parent / "fixtures" / "asqa-mini.jsonl").read_text()
             .splitlines()]
PREDICTION = st.one_of(
    st.sampled_from(QUESTIONS).map(good_prediction),
    st.sampled_from(QUESTIONS).map(good_prediction).flatmap(mangled),
    st.sampled_from(QUESTIONS).flatmap(lambda r: st.builds(  # an eval results row: the answer under "prediction"
        lambda p: {"id": r["id"], "question": r["question"], "prediction": p},
        st.one_of(st.just(good_prediction(r)), JSON))),
)
OUT = st.one_of(file_name(".json"), st.sampled_from([".", "cache", "p.jsonl", "q.jsonl", "p.jsonl/s.json",
                                                      "new/dir/s.json"]))


@FEWER
@given(data=lines_of(PREDICTION))
def test_score_reads_prediction_rows_of_any_shape(template, monkeypatch, data):
    run_case(template, monkeypatch, ["score", "preds.jsonl", "--dataset", "q.jsonl", "--out", "s.json"],
             {"preds.jsonl": data}, may_write=("s.json",))


@FEWER
@given(args=st.one_of(
    OUT.map(lambda v: ["--out", v]),
    word().filter(lambda s: s.strip() not in metric_names()).map(lambda v: ["--metric", v]),
    st.one_of(file_name(".jsonl"), st.sampled_from(["", ".", "cache", "p.jsonl", "corpus.jsonl"])).map(
        lambda v: ["--dataset", v]),
    st.sampled_from(["", ".", "missing"]).map(lambda v: ["--reader", v]),
    count().map(lambda v: ["--proxy-top", v]),
))
def test_score_refuses_bad_arguments_in_one_line(template, monkeypatch, args):
    args = args if "--dataset" in args else ["--dataset", "q.jsonl", *args]
    out = args[args.index("--out") + 1] if "--out" in args else "-"
    run_case(template, monkeypatch, ["score", "p.jsonl", *args], may_write=(out,))


# ---- search -------------------------------------------------------------------------------------------------------

QUERY = st.one_of(st.text(st.characters(**TEXT), max_size=30), st.sampled_from(["zebra lion", " ", "\t\n", "x" * 5000]))
SEARCH = ["search", "zebra lion", "-k", "3", "-r", "dense", "--corpus", "corpus.jsonl"]  # answers: exit 0


def replaced(args: list[str], flag: str, value: str) -> list[str]:
    """``args`` with ``flag``'s value (or the first argument, for ``flag`` None) replaced by ``value``."""
    at = args.index(flag) + 1 if flag else 1
    return [*args[:at], value, *args[at + 1:]]


@FEWER
@given(args=st.one_of(  # one hostile part in a search that otherwise answers
    QUERY.map(lambda v: replaced(SEARCH, "", v)),
    count().map(lambda v: replaced(SEARCH, "-k", v)),
    st.one_of(st.sampled_from(["bm25", "hybrid"]), word().filter(lambda s: s.strip() not in ("dense", "bm25",
                                                                                          "hybrid"))).map(
        lambda v: replaced(SEARCH, "-r", v)),
    st.sampled_from(["q.jsonl", "", ".", "cache", "missing.jsonl", "prebuilt:nothing"]).map(
        lambda v: replaced(SEARCH, "--corpus", v)),
    st.sampled_from([["--temperature", "0.5"], ["--expansion-state", "missing.json"], ["--temperature", "-1"]]).map(
        lambda extra: [*SEARCH, *extra]),
))
def test_search_answers_or_refuses_in_one_line(template, monkeypatch, args):
    run_case(template, monkeypatch, args)


# ---- index build --------------------------------------------------------------------------------------------------

PASSAGE = st.one_of(st.sampled_from(CORPUS), st.sampled_from(CORPUS).flatmap(mangled))
FACTORY = st.one_of(st.sampled_from(["Flat", "IVF2,Flat", "IVF64,Flat", "PQ2", "HNSW8", "IVF4,Nonsense", ""]),
                    word(10))


@FEWER
@given(data=lines_of(PASSAGE), shard=st.integers(1, 4))
def test_index_build_reads_corpus_rows_of_any_shape(template, monkeypatch, data, shard):
    run_case(template, monkeypatch, ["index", "build", "--corpus", "c.jsonl", "--kind", "dense", "--shard-size",
                                     str(shard)], {"c.jsonl": data}, may_write=("cache/indexes/",))


@FEWER
@given(args=st.one_of(
    FACTORY.map(lambda v: ["--faiss-factory", v]),
    count().map(lambda v: ["--shard-size", v]),
    count().map(lambda v: ["--nprobe", v]),
    count().map(lambda v: ["--ef-search", v]),
    word().map(lambda v: ["--kind", v]).filter(lambda a: a[1].strip() not in ("bm25", "dense", "all")),
    word().map(lambda v: ["--engine", v]).filter(lambda a: a[1].strip() not in ("local", "spark")),
    word().map(lambda v: ["--master", v]),
    st.sampled_from(["", ".", "cache", "q.jsonl", "missing.jsonl", "prebuilt:nothing"]).map(lambda v: ["--corpus", v]),
))
def test_index_build_refuses_bad_arguments_in_one_line(template, monkeypatch, args):
    base = ["index", "build", "--kind", "dense"] if "--kind" not in args else ["index", "build"]
    corpus = [] if "--corpus" in args else ["--corpus", "corpus.jsonl"]
    run_case(template, monkeypatch, [*base, *corpus, *args], may_write=("cache/indexes/",))


# ---- route predict ------------------------------------------------------------------------------------------------

ARTIFACT = st.one_of(st.just(ROUTE_STATE), st.just(ROUTE_STATE),
                     st.sampled_from([OTHER_STATE, "broken/policy.json", "missing.json", "art", "q.jsonl", ""]))
QUESTION_ROW = st.one_of(st.builds(lambda q: {"question": q}, word(30)), st.builds(lambda v: {"question": v}, JSON),
                         JSON.filter(lambda v: isinstance(v, dict)))


@FEWER
@given(artifact=ARTIFACT, out=st.one_of(file_name(".jsonl"), st.sampled_from(
           ["d.txt", ".", "art", "q.jsonl", "questions.csv", "p.jsonl/d.jsonl", "new/d.jsonl"])),
       limit=st.one_of(st.just([]), count().map(lambda v: ["--limit", v])))
def test_route_predict_refuses_bad_arguments_in_one_line(template, monkeypatch, artifact, out, limit):
    run_case(template, monkeypatch, ["route", "predict", "--artifact", artifact, "--questions", "questions.csv",
                                     "--out", out, *limit], may_write=(out,))


@FEWER
@given(data=lines_of(QUESTION_ROW), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_route_predict_reads_question_tables_of_any_bytes(template, monkeypatch, data, suffix):
    run_case(template, monkeypatch, ["route", "predict", "--artifact", ROUTE_STATE, "--questions", f"t{suffix}",
                                     "--out", "d.jsonl"], {f"t{suffix}": data}, may_write=("d.jsonl",))


# ---- what the fuzz found (each was a traceback, a clobbered input or a message naming no file) ---------------------

FOUND = [
    (["score", "bad.jsonl", "--dataset", "q.jsonl"], {"bad.jsonl": b'{"question": "Q?", "interpretations": [1]}'},
     "error: prediction row 1: 'interpretations' must be a list of {question, answer, passage_ids} objects, got "
     "list [1]"),
    (["score", "bad.jsonl", "--dataset", "q.jsonl"], {"bad.jsonl": b'{"question": "Q?", "prediction": 5}'},
     "error: bad.jsonl:1: 'prediction' must be an object (or null for a failed question), got int"),
    (["score", "p.jsonl", "--dataset", "q.jsonl", "--out", "."], {},
     "error: --out '.' is a folder; give the file to write, e.g. 'out.json'"),
    (["score", "p.jsonl", "--dataset", "q.jsonl", "--out", "p.jsonl"], {},  # it overwrote the predictions
     "error: --out 'p.jsonl' is the predictions file being read; write to another file"),
    (["score", "p.jsonl", "--dataset", "q.jsonl", "--out", "p.jsonl/s.json"], {},
     "error: --out 'p.jsonl/s.json': 'p.jsonl' is a file, not a folder; write elsewhere"),
    (["score", "p.jsonl", "--dataset", "cache"], {},
     "error: dataset folder 'cache' has no questions.jsonl; give a JSONL file of questions, a BEIR folder, or a "
     "folder `disambig data spiderqa` built"),
    (["route", "predict", "--artifact", ROUTE_STATE, "--questions", "t.csv", "--out", "d.jsonl"],
     {"t.csv": b"question\nWho?\nWhat?,extra\n"},
     "error: 't.csv' is not a CSV table (Error tokenizing data. C error: Expected 1 fields in line 3, saw 2); give "
     "a header line naming the columns, then one row per line"),
    (["route", "predict", "--artifact", ROUTE_STATE, "--dataset", "q.jsonl", "--out", "q.jsonl"], {},
     "error: --out 'q.jsonl' is the question file being read; write to another file"),
]


@pytest.mark.parametrize(("args", "files", "message"), FOUND)
def test_what_the_fuzz_found_is_one_line_and_changes_no_file(template, monkeypatch, args, files, message):
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "x"}], adapter=CompactJSONAdapter()))
    monkeypatch.setattr("disambig.optimizers.loading._build_retriever", lambda spec, settings: FakeHybrid())
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        before = snapshot(folder)
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and result.output.strip() == message, result.output
        assert changed(before, snapshot(folder)) == []
