"""Fuzzed command lines of the commands whose work is heavy: ``serve`` (fetches a model from the MLflow store, starts
MLflow's scoring server), ``lm serve`` and ``lm check`` (assemble and load the embedded model, start a server, call
the LM), ``data fetch`` (downloads), ``data spiderqa`` and ``data asqa-retrieval`` (build benchmark folders) and
``compile route`` (builds the LM and the hybrid retriever, then every candidate answers).

Each generated command line holds one hostile value in a command line that would otherwise start that work, and must
be refused before it starts: exit 2 with one ``error:`` line (or Click's usage error), no traceback, no file in the
working folder changed, no child process, within ``CASE_SECONDS``, and no tripwire touched: the embedded model located
or set up, an LM called, a server started, a process spawned, a download, a retriever built, a question answered."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_support import FUZZ, changed, snapshot, working_folder
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data.fetch import NAMES
from disambig.lm.models import EMBEDDED_MODELS
from disambig.lm.repetition import LoopRule
from disambig.lm.threads import usable_cores
from disambig.metrics import metric_names
from disambig.settings import MAX_CTX, PASSAGE_FRAMINGS

FEWER = settings(FUZZ, max_examples=FUZZ.max_examples // 2)  # eight fuzz tests here: the addition's ~30 s budget
CASE_SECONDS = 20
CORES = usable_cores()  # --threads and --parallel of an in-process model above this are refused
TRIPWIRES = {
    "disambig.lm.spec.local_file": "the model file was located (an embedded model is assembled there)",
    "disambig.lm.llama_engine.LlamaEngine.__init__": "an in-process model was set up",
    "disambig.lm.server.serve": "the LM server started",
    "disambig.cli.process_group.run_as_group": "MLflow's scoring server started",
    "disambig.data.fetch._load": "a dataset was downloaded from the hub",
    "huggingface_hub.hf_hub_download": "a file was downloaded from the hub",
    "disambig.retrieval.build_retriever": "a retriever was built",
    "disambig.evaluation.session.run_eval": "a candidate answered questions",
}


class RealWork(Exception):
    """A tripwire: the command went on to the work it should have refused before."""


class TookTooLong(Exception):
    """The case ran past ``CASE_SECONDS``."""


def tripwire(what: str):
    def fire(*args, **kwargs):
        raise RealWork(what)

    return fire


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """A data root holding AmbigNQ only (compile route's detector reads it): ``asqa`` and ``wiki-slice`` are not
    found."""
    folder = tmp_path_factory.mktemp("data")
    (folder / "ambignq").mkdir()
    shutil.copy(Path(__file__).parent / "fixtures" / "ambignq-mini.jsonl", folder / "ambignq" / "dev.jsonl")
    return folder


@pytest.fixture
def tripwires(monkeypatch, tmp_path, data_root):
    """Every tripwire set; the cache and the data root in folders nothing else reads; no tracking store set."""
    from dspy.clients.base_lm import BaseLM

    for target, what in TRIPWIRES.items():
        monkeypatch.setattr(target, tripwire(what))
    monkeypatch.setattr(BaseLM, "__call__", tripwire("an LM was called"))
    monkeypatch.setattr(BaseLM, "acall", tripwire("an LM was called"))
    monkeypatch.setattr(subprocess.Popen, "__init__", tripwire("a process was started"))
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DISAMBIG_DATA_DIR", str(data_root))
    for name in ("MLFLOW_TRACKING_URI", "DISAMBIG_LM", "DISAMBIG_THREADS", "DISAMBIG_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``TookTooLong`` in the block once ``seconds`` have passed."""
    def expire(signum, frame):
        raise TookTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def children() -> set[int]:
    """The processes whose parent is this one (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
    return found


@contextlib.contextmanager
def own_environment() -> Iterator[None]:
    """The process's variables put back after the block: options such as --passage-framing, --api-base and
    --parallel-calls export themselves for the processes a command starts, and one case must not refuse the next."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(args: list[str]):
    with own_environment(), deadline(CASE_SECONDS):
        return CliRunner().invoke(app, args)


def refused(template: Path, args: list[str]) -> None:
    """Run ``args`` in a copy of ``template``: a refusal in one line, before any work, changing no file."""
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        before, running = snapshot(folder), children()
        result = run(args)
        assert not isinstance(result.exception, RealWork | TookTooLong), f"{args!r}: {result.exception}"
        output = result.output
        assert result.exit_code == 2, (args, result.exit_code, output[-2000:], result.exception)
        assert "Traceback" not in output, output[-2000:]
        errors = [line.strip() for line in output.splitlines() if line.startswith("error:")]
        assert (len(errors) == 1 and output.strip().splitlines()[-1] == errors[0]) or (  # the error is the last line
            "Usage:" in output and not errors), (args, output[-2000:])
        assert changed(before, snapshot(folder)) == [], args
        assert children() == running, args


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    """A port something listens on while the module runs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The working folder every case starts from: inputs each command accepts (questions, an ASQA file with evidence
    and its corpus, a Spider question file and database, a file with a GGUF header), and files a refused command must
    not touch (a README.md, a questions.jsonl, a text file, a folder)."""
    from retrieval_fakes import write_corpus
    from test_asqa_retrieval import CORPUS, ROWS
    from test_spiderqa import QUESTIONS, make_database

    folder = tmp_path_factory.mktemp("template")
    shutil.copy(Path(__file__).parent / "fixtures" / "asqa-mini.jsonl", folder / "q.jsonl")
    (folder / "asqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    write_corpus(folder / "slice.jsonl", CORPUS)
    make_database(folder / "spider" / "database")
    (folder / "spider" / "dev.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    (folder / "model.gguf").write_bytes(b"GGUF" + bytes(60))
    (folder / "notes.gguf").write_bytes(b"not a model")
    (folder / "README.md").write_text("mine", encoding="utf-8")
    (folder / "questions.jsonl").write_text("mine", encoding="utf-8")
    (folder / "afile").write_text("x", encoding="utf-8")
    (folder / "adir").mkdir()
    (folder / "adir" / "keep.txt").write_text("x", encoding="utf-8")
    return folder


# ---- hostile values shared by the commands -------------------------------------------------------------------------


ARGV_CHARS = st.one_of(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                       st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00)]))
"""What a command line carries: any character but NUL (argv holds C strings), and bytes that are not UTF-8 as Python
reads them (lone surrogates, by surrogateescape)."""


def word(max_size: int = 16):
    return st.text(ARGV_CHARS, min_size=1, max_size=max_size).filter(lambda s: not s.startswith("-"))


def whole(text: str) -> int | None:
    """``text`` as Click reads a whole number (``int()``: ``" 5"``, ``"+5"``, ``"5_0"``, ``"٣"`` are numbers)."""
    try:
        return int(text)
    except ValueError:
        return None


def bad_count(minimum: int = 1, maximum: int | None = None):
    """Below ``minimum``, above ``maximum`` (when there is one), or not a whole number at all."""
    too_big = [st.integers(maximum + 1, 10**20).map(str)] if maximum is not None else []
    return st.one_of(st.integers(max_value=minimum - 1).map(str), *too_big,
                     st.sampled_from(["", " ", "nan", "inf", "1.5", "1e3", "0x10", "99999999999999999999999x"]),
                     word(8).filter(lambda s: whole(s) is None))


def is_guard(text: str) -> bool:
    try:
        LoopRule.parse(text)
    except ValueError:
        return False
    return True


BAD_NUMBER = st.one_of(st.sampled_from(["nan", "inf", "-inf", "0", "-1", "-1e-9", "", "one", "1,5"]),
                       st.floats(max_value=0).map(str))  # for a number that must be positive and finite
BAD_WEIGHT = st.one_of(st.sampled_from(["nan", "inf", "-inf", "-1", "-1e-9", "", "one", "1,5"]),
                       st.floats(max_value=-1e-9).map(str))  # for one that must be finite and at least 0
BAD_HOST = st.sampled_from(["192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1", "fe80::1", "", "\udcff",
                           "a..b"])  # addresses this machine cannot listen on, and names that fail without a lookup
BAD_PORT = st.one_of(st.integers(max_value=0).map(str), st.integers(65536, 10**12).map(str),
                     st.sampled_from(["", "http", "80a", "BUSY"]))
MISSING = word(12).map(lambda s: "missing/" + s.replace("/", "_"))
BAD_LM = st.one_of(
    st.sampled_from(["", " ", "local:", "local:adir", "local:afile", "local:notes.gguf", "local:missing.gguf",
                     "local:/nonexistent/m.gguf", "gpt4", "zzz/yy", "a b/c", "\udcff/x", "local:\udcff", "local:~0",
                     "local:~/no/such/m.gguf"]),
    word(12).filter(lambda s: "/" not in s and not s.strip().startswith("local")),  # no provider
    word(12).filter(lambda s: s not in (*EMBEDDED_MODELS, "model.gguf")).map(lambda s: f"local:{s}"),
    word(12).map(lambda s: f"no-such-provider-{s.replace('/', '_')}/model"),
)


def replaced(args: list[str], flag: str, value: str) -> list[str]:
    """``args`` with ``flag``'s value replaced by ``value`` (added when ``flag`` is not there)."""
    if flag not in args:
        return [*args, flag, value]
    at = args.index(flag) + 1
    return [*args[:at], value, *args[at + 1:]]


def with_ports(args: list[str], busy: int) -> list[str]:
    return [str(busy) if a == "BUSY" else a for a in args]


# ---- serve ---------------------------------------------------------------------------------------------------------

SERVE = ["serve", "models:/m/1"]  # with the model fetched (a stand-in), this would start the server
SERVE_ARGS = st.one_of(
    word(30).filter(lambda s: not s.startswith(("models:/", "runs:/"))).map(lambda v: ["serve", v]),
    BAD_HOST.map(lambda v: [*SERVE, "--host", v]),
    BAD_PORT.map(lambda v: [*SERVE, "--port", v]),
    st.sampled_from(["--timeout", "--max-request-bytes", "--max-concurrent", "--read-timeout", "--write-timeout",
                     "--parallel-calls"]).flatmap(lambda flag: bad_count().map(lambda v: [*SERVE, flag, v])),
    bad_count(0).map(lambda v: [*SERVE, "--max-queue", v]),
    st.one_of(bad_count(2), st.integers(2, 20).map(str)).map(lambda v: [*SERVE, "--max-connections", v]),
    word().filter(lambda s: s not in PASSAGE_FRAMINGS).map(lambda v: [*SERVE, "--passage-framing", v]),
)


@FEWER
@given(args=SERVE_ARGS)
def test_serve_refuses_bad_arguments_before_it_fetches_the_model(template, tripwires, busy_port, monkeypatch, args):
    monkeypatch.setattr("disambig.cli.serve_cmd.downloaded", tripwire("the model was fetched"))
    port = [] if "--port" in args else ["--port", str(free_port())]
    refused(template, [*with_ports(args, busy_port), *port])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """An empty MLflow store (MLflow makes its tables once: a few seconds)."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("store") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}", registry_uri=f"sqlite:///{path}").search_registered_models()
    return path


STORE_CASES = st.one_of(
    st.tuples(st.one_of(
        st.builds(lambda n, v: f"models:/{n}/{v}", word(12), st.one_of(word(6), st.integers().map(str))),
        st.builds(lambda n, a: f"models:/{n}@{a}", word(12), word(6)),
        word(20).map(lambda r: f"runs:/{r}"),
        st.sampled_from(["models:/", "runs:/", "models:/m-", "runs:/../x/m", "models://host/a/1"])), st.just("")),
    st.tuples(st.just("models:/m/1"), st.sampled_from([
        "sqlite:///missing.db", "sqlite:///adir", "sqlite:///afile", "sqlite:///q.jsonl", "sqlite:///notes.gguf",
        "sqlite:///spider/database/air.sqlite", "sqlite:///", "zzz://x", "postgresql://x/y", "mysql://x/y", "adir",
        "missing-folder", "file:///nonexistent/mlruns", "http://", "http://[::1", "http://127.0.0.1:CLOSED"])),
)


@FEWER
@given(case=STORE_CASES)
def test_serve_refuses_a_model_or_a_store_it_cannot_read(template, tripwires, store, case):
    """Model URIs of any text against an empty store, and stores that are missing, not MLflow's or not answering."""
    model_uri, tracking = case
    tracking = (tracking or f"sqlite:///{store}").replace("CLOSED", str(free_port()))  # nothing listens there
    before = snapshot(store.parent)
    refused(template, ["serve", model_uri, "--tracking-uri", tracking, "--port", str(free_port())])
    assert changed(before, snapshot(store.parent)) == []


# ---- lm serve, lm check --------------------------------------------------------------------------------------------

LM_SERVE = ["lm", "serve", "--model", "local:model.gguf"]  # a GGUF header: this would start the server
LM_SERVE_ARGS = st.one_of(
    BAD_LM.map(lambda v: replaced(LM_SERVE, "--model", v)),
    st.sampled_from(["openai/gpt-4o-mini", "ollama_chat/qwen2.5"]).map(lambda v: replaced(LM_SERVE, "--model", v)),
    BAD_HOST.map(lambda v: [*LM_SERVE, "--host", v]),
    BAD_PORT.map(lambda v: [*LM_SERVE, "--port", v]),
    bad_count(1, CORES).map(lambda v: [*LM_SERVE, "--parallel", v]),
    bad_count(1, CORES).map(lambda v: [*LM_SERVE, "--threads", v]),
    bad_count(256, MAX_CTX).map(lambda v: [*LM_SERVE, "--ctx", v]),
    BAD_NUMBER.map(lambda v: [*LM_SERVE, "--repeat-penalty", v]),
    st.one_of(word(8), st.sampled_from(["0x3", "3x1", "x", "6x", "offf"])).filter(lambda s: not is_guard(s)).map(
        lambda v: [*LM_SERVE, "--repetition-guard", v]),
    st.one_of(st.integers(max_value=-1).map(str), st.just(str(10**15)), st.sampled_from(["", "lots", "1.5"])).map(
        lambda v: [*LM_SERVE, "--prompt-cache-mb", v]),
)


@FEWER
@given(args=LM_SERVE_ARGS)
def test_lm_serve_refuses_bad_arguments_before_the_model_or_the_server(template, tripwires, busy_port, args):
    port = [] if "--port" in args else ["--port", str(free_port())]
    refused(template, [*with_ports(args, busy_port), *port])


@FEWER
@given(args=st.one_of(BAD_LM.map(lambda v: ["lm", "check", "--lm", v]),
                      bad_count(1, CORES).map(lambda v: ["lm", "check", "--lm", "local:model.gguf", "--threads", v])))
def test_lm_check_refuses_bad_arguments_before_the_model_or_a_call(template, tripwires, args):
    refused(template, args)


# ---- data fetch, data spiderqa, data asqa-retrieval ----------------------------------------------------------------

NOT_A_REPO_ID = st.one_of(
    st.sampled_from(["", "a/b/c", "-x", "a--b", "a..b", "x" * 97, "owner/", "/name", "a b"]),
    word(20).filter(lambda s: re.search(r"[^A-Za-z0-9._/-]", s)))
FETCH_ARGS = st.one_of(
    st.one_of(word(12).filter(lambda s: not {p.strip() for p in s.split(",")} <= {"", *NAMES}),
              st.sampled_from(["", ",", " , ", ",,"])).map(lambda v: ["data", "fetch", "--only", v]),
    st.sampled_from(["afile", "afile/data", "q.jsonl/x"]).map(lambda v: ["data", "fetch", "--only", "asqa",
                                                                         "--out", v]),
    st.one_of(MISSING, st.sampled_from(["afile", "adir", "q.jsonl", "spider", "~0/database"])).map(
        lambda v: ["data", "fetch", "--only", "spider", "--spider-db-dir", v]),
    NOT_A_REPO_ID.map(lambda v: ["data", "fetch", "--only", "spider", "--spider-db-repo", v]),
)


@FEWER
@given(args=FETCH_ARGS)
def test_data_fetch_refuses_bad_arguments_before_any_download(template, tripwires, args):
    refused(template, args)


SPIDERQA = ["data", "spiderqa", "--questions", "spider/dev.json", "--databases", "spider/database", "--out", "sqa"]
ASQA_RETRIEVAL = ["data", "asqa-retrieval", "--dataset", "asqa.jsonl", "--corpus", "slice.jsonl", "--out", "bench"]
BAD_OUT = st.sampled_from([".", "afile", "afile/x", "spider", "spider/dev.json/x", "q.jsonl"])
BAD_INPUT = st.one_of(MISSING, st.sampled_from(["", " ", ".", "adir", "afile", "notes.gguf", "README.md", "q.jsonl",
                                                "slice.jsonl", "spider/dev.json", "spider", "asqa", "wiki-slice",
                                                "~0/q.jsonl", "~/no/such/q.jsonl"]))


@FEWER
@given(args=st.one_of(
    BAD_INPUT.filter(lambda v: v != "spider/dev.json").map(lambda v: replaced(SPIDERQA, "--questions", v)),
    BAD_INPUT.map(lambda v: replaced(SPIDERQA, "--databases", v)),
    BAD_OUT.map(lambda v: replaced(SPIDERQA, "--out", v)),
    bad_count().map(lambda v: [*SPIDERQA, "--rows-per-chunk", v]),
    bad_count().map(lambda v: [*SPIDERQA, "--max-chunks", v]),
    BAD_NUMBER.map(lambda v: [*SPIDERQA, "--max-rows-per-question", v]),
    BAD_LM.map(lambda v: [*SPIDERQA, "--lm", v]),
))
def test_data_spiderqa_refuses_bad_arguments_before_it_builds(template, tripwires, args):
    refused(template, args)


@FEWER
@given(args=st.one_of(
    BAD_INPUT.filter(lambda v: v != "asqa.jsonl").map(lambda v: replaced(ASQA_RETRIEVAL, "--dataset", v)),
    BAD_INPUT.filter(lambda v: v != "slice.jsonl").map(lambda v: replaced(ASQA_RETRIEVAL, "--corpus", v)),
    BAD_OUT.map(lambda v: replaced(ASQA_RETRIEVAL, "--out", v)),
    bad_count().map(lambda v: [*ASQA_RETRIEVAL, "--limit", v]),
    st.one_of(word(10).filter(lambda s: not {p.strip() for p in s.split(",")} <= {"", "train", "dev", "test"}),
              st.sampled_from(["", ",", "all", "train,all"])).map(lambda v: [*ASQA_RETRIEVAL, "--splits", v]),
))
def test_data_asqa_retrieval_refuses_bad_arguments_before_it_builds(template, tripwires, args):
    refused(template, args)


# ---- compile route -------------------------------------------------------------------------------------------------

ROUTE = ["compile", "route", "--dataset", "q.jsonl", "--candidates", "closed-book,vanilla-rag", "--no-track", "--out",
         "art", "--runs", "runs"]  # with the LM and the retriever, this would run both candidates
CASCADE = [*ROUTE[:4], "--cascade", "closed-book,vanilla-rag", *ROUTE[6:]]
PROGRAM_NAMES = ("closed-book", "vanilla-rag", "adf", "diva", "diva-no-adapt", "dtv-pseudo", "iterative-rag",
                 "per-reading-rag", "rac-top20", "verdict")


def is_pair(text: str) -> bool:
    """Two distinct route candidates, comma-separated (a valid --cascade)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return len(parts) == 2 and len(set(parts)) == 2 and set(parts) <= set(PROGRAM_NAMES)


ROUTE_ARGS = st.one_of(
    word().filter(lambda s: s not in metric_names() and s != "dr").map(lambda v: [*ROUTE, "--metric", v]),
    st.one_of(word(20).filter(lambda s: not {p.strip() for p in s.split(",")} <= {"", *PROGRAM_NAMES}),
              st.sampled_from(["", ",", "closed-book,closed-book", "dfa", "route", "closed-book,amd"])).map(
        lambda v: replaced(ROUTE, "--candidates", v)),
    st.one_of(word(10).filter(lambda s: not {p.strip() for p in s.split(",")} <= {"", "abstain"}),
              st.just("clarify")).map(lambda v: [*ROUTE, "--allow", v]),
    st.one_of(word(12), st.sampled_from(["=", ".=", "closed-book=1", ".k=1", "closed-book.=1"]),
              word(8).map(lambda k: f"closed-book.{k.replace('=', '')}=1"),
              word(8).filter(lambda p: p.strip() and p not in ("closed-book", "vanilla-rag") and "." not in p
                             and "=" not in p).map(lambda p: f"{p}.k=1")).map(lambda v: [*ROUTE, "--option", v]),
    BAD_WEIGHT.map(lambda v: [*ROUTE, "--cost-weight", v]),
    st.one_of(st.sampled_from([" ", ".", "..", "../x", "a/b", "/tmp/x"]),
              word(8).map(lambda s: f"{s}/x")).map(lambda v: [*ROUTE, "--name", v]),
    st.sampled_from(["afile", "afile/x", "q.jsonl"]).map(lambda v: replaced(ROUTE, "--out", v)),
    st.sampled_from(["afile", "afile/x", "q.jsonl", "README.md/runs"]).map(lambda v: replaced(ROUTE, "--runs", v)),
    BAD_INPUT.filter(lambda v: v not in ("q.jsonl", "asqa.jsonl")).map(lambda v: replaced(ROUTE, "--dataset", v)),
    BAD_LM.map(lambda v: [*ROUTE, "--lm", v]),
    st.one_of(st.sampled_from(["closed-book", "closed-book,vanilla-rag,adf", "closed-book,dfa", ","]),
              word(20).filter(lambda s: "," in s and not is_pair(s))).map(lambda v: replaced(CASCADE, "--cascade", v)),
    st.one_of(BAD_WEIGHT, st.sampled_from(["1", "1.5", "0.5,2", "0.4,high", ",x"])).filter(lambda v: v.strip()).map(
        lambda v: [*CASCADE, "--cascade-thresholds", v]),
    st.sampled_from(["--train", "--val", "--threads"]).flatmap(lambda flag: bad_count().map(
        lambda v: [*ROUTE, flag, v])),
    bad_count(10).map(lambda v: [*ROUTE, "--detector-train", v]),
)


@FEWER
@given(args=ROUTE_ARGS)
def test_compile_route_refuses_bad_arguments_before_the_lm_the_retriever_or_any_answer(template, tripwires, args):
    refused(template, args)


def test_the_stand_ins_start_the_work_a_hostile_value_must_prevent(template, tripwires, busy_port, store):
    """Without the hostile value each command line goes on to its work (a tripwire), or does it (exit 0): the fuzz
    cases above are refused for their hostile value, not for their setting."""
    port, located = str(free_port()), TRIPWIRES["disambig.lm.spec.local_file"]
    for args, work in [
        (["serve", "models:/m/1", "--tracking-uri", f"sqlite:///{store}", "--port", port],
         TRIPWIRES["disambig.cli.process_group.run_as_group"]),
        ([*LM_SERVE, "--port", port], located),
        (["lm", "check", "--lm", "local:model.gguf", "--threads", "1"], located),
        (["data", "fetch", "--only", "spider", "--spider-db-dir", "spider/database"],
         TRIPWIRES["disambig.data.fetch._load"]),
        (SPIDERQA, "exit 0"),
        (ASQA_RETRIEVAL, "exit 0"),
        (ROUTE, located),  # the LM is built before the retriever
        (CASCADE, located),
    ]:
        with working_folder() as folder:
            shutil.copytree(template, folder, dirs_exist_ok=True)
            if args[0] == "serve":
                # the store holds no model: fetching is as far as serve goes, so fetch a stand-in folder instead
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr("disambig.cli.serve_cmd.downloaded",
                                  lambda uri, store: contextlib.nullcontext(str(folder)))
                    result = run(args)
            else:
                result = run(args)
        seen = "exit 0" if result.exit_code == 0 else str(result.exception)
        assert seen == work, (args, result.exit_code, result.output[-1000:], result.exception)
