"""A damaged index through the command line: ``disambig search`` and ``disambig index build`` (without ``--force``)
end in one ``error:`` line naming the damaged file and the rebuild command, exit code 2, no traceback. Before,
``index build`` called every damaged index "up to date" (exit 0), and a damaged manifest or passage store was
reported by its folder only."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from index_cli import invoke
from retrieval_fakes import FailingEmbedder, Interrupted, write_corpus

from disambig.retrieval.factory import ensure_index

pytestmark = pytest.mark.usefixtures("index_cache")


def cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def garble(path: Path) -> None:
    path.write_bytes(b"\x00not what it should be" * 50)


DAMAGES: dict[str, tuple[str, Callable[[Path], None], str]] = {  # kind, what is done to the index folder, file named
    "vectors.npy cut in half": ("dense", lambda f: cut(f / "vectors.npy"), "vectors.npy"),
    "FAISS file garbled": ("dense", lambda f: garble(f / "faiss.index"), "faiss.index"),
    "FAISS file cut in half": ("dense", lambda f: cut(f / "faiss.index"), "faiss.index"),
    "dense manifest cut": ("dense", lambda f: cut(f / "manifest.json"), "manifest.json"),
    "dense passage store garbled": ("dense", lambda f: garble(f / "passages.sqlite"), "passages.sqlite"),
    "bm25 manifest cut": ("bm25", lambda f: cut(f / "manifest.json"), "manifest.json"),
    "bm25 passage store garbled": ("bm25", lambda f: garble(f / "passages.sqlite"), "passages.sqlite"),
    "Lucene segments file cut": ("bm25", lambda f: cut(next((f / "lucene").glob("segments_*"))), "lucene"),
    "Lucene files garbled": ("bm25", lambda f: [garble(p) for p in (f / "lucene").glob("_0*")], "lucene"),
    "Lucene folder gone": ("bm25", lambda f: shutil.rmtree(f / "lucene"), "lucene"),
}
SEARCH_NEEDS_NOT = {"vectors.npy cut in half"}  # search reads no vectors file (the reranker does: test_retrieval_dense)


def damaged(index_cache: Path, corpus: str, name: str) -> tuple[str, Path, str]:
    kind, damage, file = DAMAGES[name]
    assert invoke("index", "build", "--corpus", corpus, "--kind", "all").exit_code == 0
    (folder,) = (index_cache / "indexes").glob(f"*-{kind}-*")
    damage(folder)
    return kind, folder, file


def assert_one_error_line(result, folder: Path, file: str, rebuild: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and str(folder) in line and file in line and f"`{rebuild}`" in line, line


@pytest.mark.parametrize("name", [n for n in DAMAGES if n not in SEARCH_NEEDS_NOT])
def test_search_of_a_damaged_index_is_one_line_naming_the_file_and_the_rebuild_command(corpus, index_cache, name):
    kind, folder, file = damaged(index_cache, corpus, name)
    result = invoke("search", "zebra", "--corpus", corpus, "--retriever", kind, "-k", "2")
    assert_one_error_line(result, folder, file, f"disambig index build --corpus {corpus} --kind {kind} --force")


@pytest.mark.parametrize("name", DAMAGES)
def test_index_build_of_a_damaged_index_is_one_line_not_up_to_date(corpus, index_cache, name):
    kind, folder, file = damaged(index_cache, corpus, name)
    result = invoke("index", "build", "--corpus", corpus, "--kind", kind)
    assert_one_error_line(result, folder, file, f"disambig index build --corpus {corpus} --kind {kind} --force")
    forced = invoke("index", "build", "--corpus", corpus, "--kind", kind, "--force")
    assert forced.exit_code == 0, forced.output  # as the line says
    assert invoke("search", "zebra", "--corpus", corpus, "--retriever", kind, "-k", "2").exit_code == 0


def test_index_build_over_a_damaged_shard_is_one_line_naming_it_and_the_rebuild_command(tmp_path, index_cache):
    corpus = write_corpus(tmp_path / "c.jsonl", [{"id": f"d{i}", "title": "", "text": f"zebra {i}"}
                                                 for i in range(150)])
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, index_cache, FailingEmbedder(2), shard_size=50)
    (shard,) = (index_cache / "indexes").glob("*.partial/shards/00001.npy")
    cut(shard)
    result = invoke("index", "build", "--corpus", corpus, "--kind", "dense", "--shard-size", "50")
    assert_one_error_line(result, shard.parent.parent, "shards/00001.npy",
                          f"disambig index build --corpus {corpus} --kind dense --force")
    assert "does not match its checksum" in result.output


def test_an_intact_index_is_still_up_to_date(corpus):
    assert invoke("index", "build", "--corpus", corpus, "--kind", "all").exit_code == 0
    again = invoke("index", "build", "--corpus", corpus, "--kind", "all")
    assert again.exit_code == 0 and again.output.count("up to date") == 2, again.output
