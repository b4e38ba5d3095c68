"""pyserini's prebuilt BM25 indexes, offline: a four-passage Lucene index that the test writes where pyserini keeps
``wikipedia-dpr-100w`` (``$PYSERINI_CACHE/indexes/{file stem}.{md5}/``, raw ``"Title"\\ntext`` contents as DPR's) is
fetched without network, searched by ``prebuilt:wikipedia-dpr-100w``, and a missing one names the fetch command."""

from __future__ import annotations

import json

import pytest
from retrieval_fakes import PASSAGES
from typer.testing import CliRunner

from disambig.cli import app
from disambig.retrieval import build_retriever
from disambig.retrieval.prebuilt import prebuilt_folder
from disambig.retrieval.store import IndexMissingError

NAME = "wikipedia-dpr-100w"


@pytest.fixture
def no_network(monkeypatch):
    from disambig.retrieval.java import pyserini_lucene

    pyserini_lucene()  # starts the JVM as the retrievers do, before pyserini.util imports pyserini
    import pyserini.util

    def refuse(*args, **kwargs):
        raise AssertionError("tried to download")

    monkeypatch.setattr(pyserini.util, "download_url", refuse)


@pytest.fixture
def pyserini_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    return tmp_path / "pyserini"


def write_dpr_like_index(folder) -> None:
    """Lucene over ``PASSAGES`` as pyserini's DPR index stores them: id, and contents ``"Title"\\ntext``."""
    from disambig.retrieval.java import pyserini_lucene

    _, index_lucene = pyserini_lucene()
    indexer = index_lucene.LuceneIndexer(args=["-index", str(folder), "-storeRaw"], threads=1)
    indexer.add_batch_raw([json.dumps({"id": p["id"], "contents": f'"{p["title"]}"\n{p["text"]}'}) for p in PASSAGES])
    indexer.close()


def test_a_fetched_index_in_pyserinis_layout_opens_and_searches_offline(pyserini_cache, no_network, settings):
    folder = prebuilt_folder(NAME)
    stem, md5 = "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6", "7b58c08da992b2ea7e96667f0b176651"
    assert folder == pyserini_cache / "indexes" / f"{stem}.{md5}"
    write_dpr_like_index(folder)

    fetched = CliRunner().invoke(app, ["index", "fetch", NAME], env={"COLUMNS": "300"})
    assert fetched.exit_code == 0 and f"prebuilt:{NAME}" in fetched.output and str(folder) in fetched.output

    retriever = build_retriever("bm25", f"prebuilt:{NAME}", settings, auto_build=False)
    assert retriever.size == 4
    (top,) = retriever.search("zebra stripes", 1)
    assert (top.id, top.title, top.text) == ("p2", "Zebra", "A zebra has black and white stripes.")


def test_a_prebuilt_index_not_fetched_names_the_fetch_command(pyserini_cache, no_network, settings):
    with pytest.raises(IndexMissingError, match=rf"not in pyserini's cache .*`disambig index fetch {NAME}`"):
        build_retriever("bm25", f"prebuilt:{NAME}", settings, auto_build=False)
