"""``bench/scale/scale_table.py``: the Scale tables of docs/benchmarks.md made from small stored rows (hand-written
here in
the layouts bench/scale.py, bm25_scale.py, passage_lookup.py and scale_ndcg.py write), and written between their
markers with the rest of the file untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scale_table(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.scale import scale_table

    return scale_table


def search(nprobe, p50, p95, recall, default=False) -> dict:
    return {"nprobe": nprobe, "default": default, "p50_ms": p50, "p95_ms": p95, "recall_at_100": recall}


def store(folder: Path, rows: dict[str, object]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, content in rows.items():
        (folder / name).write_text(json.dumps(content), encoding="utf-8")
    return folder


def test_dense_rows_mark_the_default_index_and_nprobe_and_say_what_a_file_does_not_record(scale_table, tmp_path):
    """Three files, written out of order: the real slice before the stamps existed (no code, no load), 100k Gaussian
    vectors (Flat is the default up to 100k) and 120k mixture vectors, where Flat is forced and IVF1024,SQ8 the default
    (cells_for(120,000): 4·√120,000 ≈ 1,386, nearest power of two 1,024), its searches stored default first."""
    old_flat = {"factory": "Flat", "vectors": 8840, "build_s": 0.04, "peak_build_rss_mb": 82.2, "disk_mb": 12.94,
                "search": [search(None, 0.218, 12.53, 1.0, default=True)]}
    flat = {"factory": "Flat", "vectors": 120_000, "build_s": 1.26, "peak_build_rss_mb": 1234.4, "disk_mb": 175.78,
            "search": [search(None, 10.04, 14.96, 1.0, default=True)], "code": "abc123def456", "load1": [2.5, 3.0]}
    ivf = {"factory": "IVF1024,SQ8", "vectors": 120_000, "build_s": 12.34, "peak_build_rss_mb": 512.0, "disk_mb": 46.7,
           "search": [search(64, 1.5, 4.0, 0.9876, default=True), search(16, 0.081, 3.2, 0.9),
                      search(512, 6.0, 71.94, 0.99)], "code": "abc123def456", "load1": [3.0, 4.25]}
    gaussian = {**flat, "vectors": 100_000, "code": "fed321", "load1": [1.0, 1.5]}
    stored = store(tmp_path / "scale", {"120000-mixture.json": [flat, ivf], "100000.json": [gaussian],
                                        "8840.json": [old_flat], "bm25.json": []})

    files = scale_table.dense_files(stored)
    assert [(path.name, generator) for path, generator in files] == [
        ("8840.json", "real"), ("120000-mixture.json", "mixture"), ("100000.json", "gaussian")]
    assert scale_table.dense_table(files).splitlines() == [
        "| vectors | index | build s | peak MB | disk MB | nprobe | p50 ms | p95 ms | recall@100 |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| 8,840 (real) | Flat (default) | 0.0 | 82 | 12.9 | – | 0.22 | 12.5 | 1.000 |",
        "| 120k (mixture) | Flat (forced) | 1.3 | 1,234 | 175.8 | – | 10.0 | 15.0 | 1.000 |",
        # nprobe ascending; 0.081 ms below 0.1 keeps three decimals, 71.94 from 10 up one
        "| 120k (mixture) | IVF1024,SQ8 (default) | 12.3 | 512 | 46.7 | 16 | 0.081 | 3.20 | 0.900 |",
        "| | | | | | **64 (default)** | 1.50 | 4.00 | **0.988** |",
        "| | | | | | 512 | 6.00 | 71.9 | 0.990 |",
        "| 100k (gaussian) | Flat (default) | 1.3 | 1,234 | 175.8 | – | 10.0 | 15.0 | 1.000 |",
        "",
        # the 120k file's load: from its first build's start (2.5) to its last search's end (4.25)
        "Code and 1-minute load average (at the start → the end of a file's builds and searches) the rows record: "
        "`8840.json` code not recorded, load not recorded; `120000-mixture.json` code `abc123def456`, load 2.50 → "
        "4.25; `100000.json` code `fed321`, load 1.00 → 1.50."]


def test_generators_bold_the_real_slices_first_nprobe_reaching_the_target(scale_table):
    """Recall stored by nprobe as strings, not in order: 7, 16, 128 once sorted; the real slice first reaches 0.95
    at 16 (0.951), the Gaussian's 0.96 at 128 is not bolded (only the real slice's is)."""
    def generator(score, recalls):
        return {"score_at_1": score, "score_at_10": score / 2, "score_at_100": score / 4, "factory": "IVF226,SQ8",
                "recall_at_100_by_nprobe": dict(zip(("16", "7", "128"), recalls, strict=True))}

    check = {"real": generator(0.7, [0.951, 0.64, 0.99]), "mixture": generator(0.46, [0.9, 0.78, 0.993]),
             "gaussian": generator(0.33, [0.42, 0.25, 0.96])}
    assert scale_table.generators_table(check).splitlines() == [
        "| 8,640 vectors, 200 queries | 1st neighbour | 10th | 100th | recall@100, nprobe 7 | 16 | 128 (of 226) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| real wiki slice | 0.700 | 0.350 | 0.175 | 0.640 | **0.951** | 0.990 |",
        "| mixture | 0.460 | 0.230 | 0.115 | 0.780 | 0.900 | 0.993 |",
        "| gaussian | 0.330 | 0.165 | 0.083 | 0.250 | 0.420 | 0.960 |",  # 0.33 / 4 is 0.08250000000000000389 in binary
        "",
        "Rows of the check: code not recorded."]


def test_bm25_and_passage_lookup_rows_with_their_code_and_load(scale_table):
    bm25 = [{"passages": 100_000, "build_s": 30.11, "peak_rss_mb": 955.8, "lucene_mb": 52.74, "store_mb": 65.67,
             "p50_ms": 14.19, "p95_ms": 32.91, "p50_k10_ms": 1.194, "p95_k10_ms": 7.52},  # before the stamps
            {"passages": 5_000_000, "build_s": 333.8, "peak_rss_mb": 2393.2, "lucene_mb": 2622.69,
             "store_mb": 3315.53, "p50_ms": 23.2, "p95_ms": 49.9, "p50_k10_ms": 10.0, "p95_k10_ms": 25.87,
             "code": "812619c87c2c", "load1": 2.64}]
    assert scale_table.bm25_table(bm25).splitlines()[2:] == [
        "| 100k | 30.1 | 956 | 52.7 | 65.7 | 14.2 / 32.9 | 1.19 / 7.52 |",
        "| 5M | 333.8 | 2,393 | 2,622.7 | 3,315.5 | 23.2 / 49.9 | 10.0 / 25.9 |",
        "",
        "Code and 1-minute load average (at the end of each size's run) the rows record: 100k code not recorded, "
        "load not recorded; 5M code `812619c87c2c`, load 2.64."]
    stamp = {"code": "812619c87c2c", "load1": 2.09}
    lookup = [{"corpus": "wiki-slice", "passages": 8840, "store": "list (in memory)", "build_s": 0.0048,
               "memory_mb": 1.918, "disk_mb": 0.0, "by_row_ms": [0.0031, 0.0071], "by_id_ms": [0.0108, 0.0162],
               **stamp},
              {"corpus": "synthetic (216 chars)", "passages": 1_000_000, "store": "SQLite (on disk)", "build_s": 2.37,
               "memory_mb": 0.0, "disk_mb": 237.6, "by_row_ms": [0.2657, 12.94], "by_id_ms": [0.5045, 16.8], **stamp}]
    assert scale_table.passage_lookup_table(lookup).splitlines()[2:] == [
        "| 8,840 wiki-slice | list (in memory) | 0.0 | 1.9 MB | – | 0.003 / 0.007 | 0.011 / 0.016 |",  # no file
        "| 1M synthetic (216 chars) | SQLite (on disk) | 2.4 | 0 | 238 MB | 0.27 / 12.9 | 0.50 / 16.8 |",  # no RAM
        "",
        "Code and 1-minute load average (at the end of the run) the rows record: all rows code `812619c87c2c`, "
        "load 2.09."]


def test_ndcg_rows_take_their_delta_from_the_exact_row_when_they_do_not_store_it(scale_table):
    """nprobe 64 is the default for 226 cells (max(64, 226 // 64)); its row predates ``delta_vs_exact``:
    0.7646 - 0.7649 = -0.0003. The nprobe 16 row stores its own and no code."""
    label = "asqa-retrieval dev (wiki slice, 8,840)"
    rows = [{"set": label, "factory": "Flat", "nprobe": None, "queries": 50, "ndcg@10": 0.7649, "recall@100": 0.919,
             "mrr@10": 0.85, "code": {"commit": "bc8caf53f966", "dirty": True, "diff": "a0c54dd42aaa"}},
            {"set": label, "factory": "IVF226,SQ8", "nprobe": 64, "queries": 50, "ndcg@10": 0.7646,
             "recall@100": 0.919, "mrr@10": 0.85, "code": "e4c06ebc7b29"},
            {"set": label, "factory": "IVF226,SQ8", "nprobe": 16, "queries": 50, "ndcg@10": 0.7412,
             "recall@100": 0.8733, "mrr@10": 0.8504, "delta_vs_exact": -0.0237}]
    assert scale_table.ndcg_table(rows).splitlines() == [
        "| set (queries) | index | nprobe | nDCG@10 | Δ vs exact | Recall@100 | MRR@10 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        "| asqa-retrieval dev (wiki slice, 8,840) (50) | Flat | – | 0.7649 | | 0.919 | 0.850 |",
        "| | IVF226,SQ8 | **64 (default)** | 0.7646 | **−0.0003** | 0.919 | 0.850 |",
        "| | | 16 | 0.7412 | −0.0237 | 0.873 | 0.850 |",
        "",
        "Code the rows record, by set: asqa-retrieval dev (wiki slice, 8,840): Flat code "
        "`bc8caf53f966+dirty(a0c54dd42aaa)`, nprobe 64 code `e4c06ebc7b29`, nprobe 16 code not recorded."]


def test_tables_go_between_their_markers_and_nothing_else_moves(scale_table, tmp_path):
    """Two stored files, two marked sections holding stale tables, prose and a hand-typed table around them; a
    second run leaves the file as the first left it."""
    bm25 = [{"passages": 1_000_000, "build_s": 66.1, "peak_rss_mb": 1300.8, "lucene_mb": 523.78, "store_mb": 659.86,
             "p50_ms": 10.31, "p95_ms": 24.57, "p50_k10_ms": 2.63, "p95_k10_ms": 5.8, "code": "c0de", "load1": 2.24}]
    lookup = [{"corpus": "wiki-slice", "passages": 8840, "store": "SQLite (on disk)", "build_s": 0.03,
               "memory_mb": 0.0, "disk_mb": 2.45, "by_row_ms": [0.158, 0.272], "by_id_ms": [0.211, 0.258]}]
    stored = store(tmp_path / "scale", {"bm25.json": bm25, "passage-lookup.json": lookup})
    marks = {name: (f"<!-- bench/scale/scale_table.py:{name}:begin -->",
                    f"<!-- bench/scale/scale_table.py:{name}:end -->")
             for name in ("passage-lookup", "bm25")}
    head = "## Scale\n\nProse before, quoting 10.3 ms.\n\n"
    middle = "\n\nProse between.\n\n| a hand-typed | table |\n| --- | --- |\n| kept | 1 |\n\n"
    tail = "\n\nProse after.\n"
    stale = "\n| stale | 9 |\n"
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"{head}{stale.join(marks['passage-lookup'])}{middle}{stale.join(marks['bm25'])}{tail}",
                   encoding="utf-8")
    command = "python -m bench.scale.scale_table --results benchmarks.md"

    scale_table.write_tables(stored, doc, command)
    first = doc.read_text(encoding="utf-8")
    scale_table.write_tables(stored, doc, command)

    def block(name: str, file: str, text: str) -> str:
        generated = f"Generated by `{command}` from `{file}` in `{stored}` (nothing measured)."
        return "\n".join([marks[name][0], generated, "", text, marks[name][1]])

    expected = (head + block("passage-lookup", "passage-lookup.json", scale_table.passage_lookup_table(lookup))
                + middle + block("bm25", "bm25.json", scale_table.bm25_table(bm25)) + tail)
    assert first == expected
    assert doc.read_text(encoding="utf-8") == first
    assert "| 1M | 66.1 | 1,301 | 523.8 | 659.9 | 10.3 / 24.6 | 2.63 / 5.80 |" in first
