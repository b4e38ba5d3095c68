"""Shared fixtures: DSPy settings reset after every test; the embedded LM loaded once per session. Slow modules run
first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One BLAS thread per test process (and the commands it starts): each pytest-xdist worker already has a core, and
# OpenBLAS's own threads spin after every call whatever OMP_WAIT_POLICY says, taking the other worker's core. With two
# threads the logistic fits of tests/test_route_cascade*.py took 3-9x the CPU. Read when OpenBLAS loads (with numpy,
# after this file).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules holding a slow test first, each kept whole and in order: pytest-xdist's worksteal then starts the
    minute-long tests early and ends on short ones, instead of one worker running a long test while the other idles."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # a stable sort: the order within each group is kept


@pytest.fixture(autouse=True)
def _restore_disambig_environment():
    """The ``DISAMBIG_*`` variables as they were before the test: commands export their options there (``--lm``,
    ``--threads``, ``--verifier-lm``...) for the LMs a run builds later, and one test's run must not set the next's."""
    saved = {name: value for name, value in os.environ.items() if name.startswith("DISAMBIG_")}
    yield
    for name in [name for name in os.environ if name.startswith("DISAMBIG_") and name not in saved]:
        del os.environ[name]
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _reset_dspy():
    import dspy

    yield
    dspy.configure(lm=None, adapter=None)


@pytest.fixture(scope="session")
def local_lm():
    """The embedded SmolLM2 as a ``dspy.LM`` (real model, loaded once; the small model keeps these tests fast)."""
    from disambig.lm import make_lm

    lm = make_lm("local:smollm2", max_tokens=64)
    yield lm
    lm.engine.close()


@pytest.fixture
def corpus(tmp_path):
    """The tiny four-passage corpus of ``retrieval_fakes`` written as JSONL; returns its path."""
    from retrieval_fakes import write_corpus

    return write_corpus(tmp_path / "tiny.jsonl")


@pytest.fixture
def settings(tmp_path):
    """Settings whose index cache lives in the test's own folder."""
    from disambig.settings import Settings

    return Settings(cache_dir=str(tmp_path / "cache"))


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def asqa_file() -> str:
    """Six hand-made questions in ASQA format (train: 1, 2, 5; dev: 4, 6; test: 3);
    ``tests/fixtures/asqa-mini.jsonl``."""
    return str(FIXTURES / "asqa-mini.jsonl")


@pytest.fixture
def ambignq_file() -> str:
    """Four hand-made questions in AmbigNQ format, one with ``nq_answer`` (``tests/fixtures/ambignq-mini.jsonl``)."""
    return str(FIXTURES / "ambignq-mini.jsonl")


@pytest.fixture
def index_cache(tmp_path, monkeypatch):
    """The index commands' cache in the test's own folder, with the bag-of-words embedder instead of MiniLM (the
    CLI tests of the index commands use it for every test: ``pytestmark = pytest.mark.usefixtures(...)``)."""
    from retrieval_fakes import VocabEmbedder

    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: VocabEmbedder())
    return tmp_path / "cache"
