"""Program constructor arguments from the command line: ``--option KEY=VALUE`` (or ``--set``) on ask, eval and
compile, read as JSON when it parses, checked against the program's signature, recorded in eval's params and in
compile manifests."""

from __future__ import annotations

import json

import pytest
from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm
from test_adf import QUESTION, RULES, AxisEmbedder, TableRetriever, corpus
from typer.testing import CliRunner

from disambig.cli import app
from disambig.cli.options import parse_program_options
from disambig.errors import ConfigurationError
from disambig.programs import build_program, program_options

runner = CliRunner()
# style=asqa writes the distinguishing HyDE passage (ambignq's rule only knows the entity one)
ASQA_RULES = RULES | {"Write a detailed factual passage": lambda user: {"passage": "hyde"}}


@pytest.fixture
def scripted(monkeypatch):
    """The CLI's LM is a scripted one and its retriever a table over ten Men passages (one axis)."""
    lm, engine = scripted_lm(ASQA_RULES)
    searcher = TableRetriever(corpus({"Men": 10}))
    searcher.embedder = AxisEmbedder(("Men",))
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: searcher)
    return engine


def test_values_are_json_when_they_parse_else_text():
    parsed = parse_program_options(["style=asqa", "k=3", "tau_var=0.5", "strict=true", "fusion=null",
                                    "eta=[1, 2]", "uncertain=a=b"], "adf")
    assert parsed == {"style": "asqa", "k": 3, "tau_var": 0.5, "strict": True, "fusion": None, "eta": [1, 2],
                      "uncertain": "a=b"}
    assert parse_program_options([], "closed-book") == {}


@pytest.mark.parametrize(("items", "program", "error", "match"), [
    (["style"], "adf", ValueError, "not KEY=VALUE"),
    (["=asqa"], "adf", ValueError, "not KEY=VALUE"),
    (["k=1", "k=2"], "adf", ValueError, "given twice"),
    (["colour=red"], "adf", ConfigurationError, "takes no option 'colour'; its options: embedder, profile, style"),
    (["k=3"], "closed-book", ConfigurationError, "'closed-book' takes no option 'k'; its options: $"),
    (["retriever=bm25"], "verdict", ConfigurationError, "takes no option 'retriever'"),
    (["k=3"], "nope", ConfigurationError, "unknown program 'nope'"),
])
def test_bad_options_are_refused_naming_the_valid_keys(items, program, error, match):
    with pytest.raises(error, match=match):
        parse_program_options(items, program)


def test_options_beside_a_compiled_artifact_are_refused():
    with pytest.raises(ConfigurationError, match="compiled --artifact is rebuilt with the ones it was compiled with"):
        parse_program_options(["k=3"], "adf", artifact="artifacts/adf/asqa/labeled-fewshot.json")


def test_verdict_takes_its_long_answer_form():
    options = parse_program_options(["long_answer=list", "k=10"], "verdict")
    program = build_program("verdict", retriever=FakeRetriever(), embedder=FakeEmbedder(), **options)
    assert (program.long_answer, program.k) == ("list", 10)
    assert program_options("verdict")[:3] == ["embedder", "k", "relax"]


def test_ask_builds_the_program_with_its_options(scripted):
    result = runner.invoke(app, ["ask", QUESTION, "--program", "adf", "--option", "style=asqa",
                                 "--set", "profile=authors"])
    assert result.exit_code == 0, result.output
    # authors/asqa always decomposes, even over passages on one axis; its HyDE step is the distinguishing passage
    assert "authors profile" in result.output and "decomposed" in result.output
    assert "Write a detailed factual passage" in [phrase for phrase, _ in scripted.calls]


def test_ask_refuses_an_unknown_option_before_any_work(scripted):
    result = runner.invoke(app, ["ask", QUESTION, "--program", "adf", "--option", "colour=red"])
    assert result.exit_code == 2 and "its options: embedder, profile, style" in result.output
    assert scripted.calls == []


def test_eval_records_the_options_in_its_params(scripted, tmp_path, asqa_file):
    out = tmp_path / "run"
    args = ["eval", "adf", "--dataset", asqa_file, "--limit", "1", "--metric", "rouge-l", "--no-track",
            "--out", str(out), "--option", "profile=authors"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    recorded = {"profile": "authors", "style": "asqa"}  # the style follows the file's ASQA rows
    assert json.loads((out / "params.json").read_text())["options"] == recorded
    assert json.loads((out / "report.json").read_text())["params"]["options"] == recorded
    resumed = runner.invoke(app, [*args[:-1], "profile=paper"])  # the same folder with other options is another run
    assert resumed.exit_code == 2 and "different options" in resumed.output


def test_a_run_folder_from_before_options_resumes(tmp_path, asqa_file, monkeypatch):
    lm, _ = scripted_lm({"": lambda user: {"long_answer": "It was Paul Simon."}})
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    out = tmp_path / "run"
    args = ["eval", "closed-book", "--dataset", asqa_file, "--limit", "1", "--metric", "rouge-l", "--no-track",
            "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    params = json.loads((out / "params.json").read_text())
    del params["options"]
    (out / "params.json").write_text(json.dumps(params))
    assert runner.invoke(app, args).exit_code == 0


def test_adf_takes_its_style_from_the_dataset_unless_given(scripted, tmp_path, asqa_file):
    runs, hyde = {}, {}
    for name, extra in (("auto", []), ("given", ["--option", "style=ambignq"])):
        out, before = tmp_path / name, len(scripted.calls)
        result = runner.invoke(app, ["eval", "adf", "--dataset", asqa_file, "--limit", "1", "--metric", "rouge-l",
                                     "--no-track", "--out", str(out), "--option", "profile=authors", *extra])
        assert result.exit_code == 0, result.output
        runs[name] = json.loads((out / "params.json").read_text())["options"]
        hyde[name] = [phrase for phrase, _ in scripted.calls[before:]].count("Write a detailed factual passage")
    assert runs == {"auto": {"profile": "authors", "style": "asqa"},
                    "given": {"profile": "authors", "style": "ambignq"}}
    # the authors' ASQA style always decomposes and writes the distinguishing passage; their AmbigNQ style answers
    # these one-topic passages directly
    assert hyde["auto"] > 0 and hyde["given"] == 0


def test_the_format_option_is_added_only_where_a_program_takes_it():
    from disambig.programs.registry import with_format_option

    assert with_format_option("adf", "ambignq", {}) == {"style": "ambignq"}
    assert with_format_option("adf", "beir", {"k": 3}) == {"k": 3}  # no style for that format: the default stays
    assert with_format_option("adf", "asqa", {"style": "ambignq"}) == {"style": "ambignq"}
    assert with_format_option("vanilla-rag", "asqa", {}) == {}


def test_compile_records_the_options_as_knobs(scripted, tmp_path, asqa_file):
    result = runner.invoke(app, ["compile", "adf", "--dataset", asqa_file, "--metric", "rouge-l", "--optimizer",
                                 "labeled-fewshot", "--train", "2", "--val", "1", "--no-track", "--out", str(tmp_path),
                                 "--option", "profile=authors", "--option", "tau_sep=0.3"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "adf" / "asqa-mini" / "manifest.json").read_text())["labeled-fewshot"]
    assert manifest["knobs"] == {"profile": "authors", "tau_sep": 0.3, "style": "asqa"}
