"""``disambig index build`` options of the dense index: --faiss-factory, --nprobe, --ef-search."""

from __future__ import annotations

import json

import index_cli
import pytest
from retrieval_fakes import VocabEmbedder

pytestmark = pytest.mark.usefixtures("index_cache")


def invoke(*args: str):
    return index_cli.invoke("index", "build", *args)


def manifest(index_cache) -> dict:
    (folder,) = (index_cache / "indexes").glob("*-dense-*[!.]*")
    return json.loads((folder / "manifest.json").read_text())


def test_factory_then_nprobe_without_rebuild_then_default_is_up_to_date(corpus, index_cache):
    forced = invoke("--corpus", corpus, "--kind", "dense", "--faiss-factory", "IVF1,SQ8", "--nprobe", "3")
    assert forced.exit_code == 0 and "built" in forced.output, forced.output
    assert (manifest(index_cache)["faiss_factory"], manifest(index_cache)["search"]) == ("IVF1,SQ8", {"nprobe": 3})
    tuned = invoke("--corpus", corpus, "--kind", "dense", "--nprobe", "5")
    assert tuned.exit_code == 0 and "up to date" in tuned.output
    assert manifest(index_cache)["search"] == {"nprobe": 5}
    exact = invoke("--corpus", corpus, "--kind", "dense", "--faiss-factory", "Flat")
    assert "built" in exact.output and manifest(index_cache)["faiss_index"] == "IndexFlatIP"


def test_a_factory_faiss_rejects_is_one_clear_line(corpus):
    result = invoke("--corpus", corpus, "--kind", "dense", "--faiss-factory", "IVF4,Nonsense")
    assert result.exit_code != 0
    assert "faiss cannot make index 'IVF4,Nonsense' for 6-d vectors" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("factory", ["IVF64,Flat", "PQ2"])  # 64 lists, or 256 PQ centroids, from 4 passages
def test_a_factory_the_corpus_cannot_train_is_one_clear_line_and_loses_no_encoding(corpus, index_cache, factory,
                                                                                      monkeypatch):
    embedder = VocabEmbedder()
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: embedder)
    result = invoke("--corpus", corpus, "--kind", "dense", "--faiss-factory", factory)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert " ".join(result.output.split()).startswith(f"error: faiss cannot train index '{factory}' on 4 vectors")
    assert not [p for p in (index_cache / "indexes").iterdir() if not p.name.endswith(".partial")]  # nothing published
    (shard,) = (index_cache / "indexes").glob("*.partial/shards/00000.json")  # the encoded shard is kept for the rerun
    assert invoke("--corpus", corpus, "--kind", "dense", "--faiss-factory", "Flat").exit_code == 0
    assert manifest(index_cache)["faiss_factory"] == "Flat" and not shard.exists() and embedder.calls == 1  # not again
