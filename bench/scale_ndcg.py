"""nDCG@10 with the compressed dense index forced: exact ``Flat`` against ``IVF{cells_for(n)},SQ8`` on small real sets.

Sets (``--sets``): the 50 dev and 50 train questions of ``disambig data asqa-retrieval`` over the 8,840-passage wiki
slice (``asqa-dev``, ``asqa-train``) and DBpedia-Entity 5k's judged test queries (``dbpedia``). For each, the dense
retriever (MiniLM) is scored with the exact ``Flat`` index, then with the index rebuilt as ``IVF{cells_for(n)},SQ8``
(226 cells at 8,840 passages, 128 at 5,000) searched in the default ``nprobe`` (64) cells, then 16, then 4. Each row
holds nDCG@10, Recall@100 and MRR@10 (``disambig eval-retrieval``'s), the change of nDCG@10 against ``Flat``
(``delta_vs_exact``) and the code that measured it.

Indexes are built, rebuilt and re-parametrised as ``disambig index build --faiss-factory F --nprobe P`` does it, in a
scratch cache (``--work``), never in the user's: the exact dense index of a corpus is copied from the user's cache
when it is there, and every other factory is rebuilt from its stored vectors, so nothing is encoded again (a corpus
with no exact index yet is encoded once, in the scratch cache: DBpedia 5k, ~1-2 min on 2 cores).

    OMP_NUM_THREADS=1 python bench/scale_ndcg.py      # all sets, writes bench/results/scale/ndcg.json
    python bench/scale_ndcg.py --sets asqa-dev --work /tmp/ndcg-test --out /tmp/ndcg-test.json
"""

from __future__ import annotations

import argparse
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SETS = {  # name: (dataset, split, label with the corpus size n)
    "asqa-dev": ("asqa-retrieval", "dev", "asqa-retrieval dev (wiki slice, {n:,})"),
    "asqa-train": ("asqa-retrieval", "train", "asqa-retrieval train (wiki slice, {n:,})"),
    "dbpedia": ("dbpedia-entity-5k", "test", "dbpedia-entity-5k test ({n:,})"),
}
FEWER_PROBES = (16, 4)
"""``nprobe`` below the default, to see where the compressed index breaks."""
QUESTIONS = 50
EXACT = "Flat"


def asqa_folder(work: Path) -> str:
    """Write the ASQA retrieval set (``disambig data asqa-retrieval --out WORK/asqa-retrieval``) and return it."""
    from disambig.data.asqa_retrieval import build_asqa_retrieval

    out = work / "asqa-retrieval"
    build_asqa_retrieval("asqa", "wiki-slice", out, ("train", "dev"), QUESTIONS,
                         f"disambig data asqa-retrieval --out {out} --limit {QUESTIONS}")
    return str(out)


def copy_exact(corpus: str, user_cache: Path, cache: Path, encoder: Any) -> None:
    """Copy the exact dense index of ``corpus`` from ``user_cache`` into ``cache`` when it is there, whole and not
    copied yet. The folder keeps its name, which hashes the corpus content, the encoder and the index format."""
    from disambig.retrieval.dense import built_factory
    from disambig.retrieval.factory import index_path, verify_index
    from disambig.retrieval.store import IndexCorruptError

    folder = index_path("dense", corpus, cache, encoder)  # hashes the corpus, remembered in the scratch cache
    source = user_cache / "indexes" / folder.name
    if folder.exists() or not source.is_dir() or built_factory(source) != EXACT:
        return
    copy = folder.with_name(f"{folder.name}.copy")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy)
    try:
        verify_index("dense", corpus, copy)
    except IndexCorruptError as exc:
        shutil.rmtree(copy)
        print(f"not copied, built instead: {exc}")
        return
    copy.rename(folder)


def dense(corpus: str, settings: Any, encoder: Any, factory: str, nprobe: int | None) -> Any:
    """The dense retriever of ``corpus`` with its index as ``factory`` searched in ``nprobe`` cells, as
    ``disambig index build --kind dense --faiss-factory FACTORY --nprobe NPROBE`` leaves it."""
    from disambig.retrieval.factory import build_retriever, ensure_index
    from disambig.retrieval.faiss_index import SearchParams

    search = SearchParams(nprobe=nprobe) if nprobe else None
    ensure_index("dense", corpus, settings.cache_dir, encoder, faiss_factory=factory, search=search)
    return build_retriever("dense", corpus=corpus, settings=settings, embedder=encoder, auto_build=False)


def measure(name: str, dataset: str, settings: Any, encoder: Any, user_cache: Path) -> Iterator[dict[str, Any]]:
    """The ``Flat`` row of set ``name``, then its ``IVF…,SQ8`` rows at the default ``nprobe`` and fewer."""
    from disambig.data.loaders import default_corpus
    from disambig.evaluation.retrieval import evaluate_retriever
    from disambig.retrieval.faiss_index import cells_for, default_nprobe

    _, split, label = SETS[name]
    corpus = default_corpus(dataset)
    copy_exact(corpus, user_cache, Path(settings.cache_dir), encoder)
    retriever = dense(corpus, settings, encoder, EXACT, None)
    label = label.format(n=retriever.size)
    exact = evaluate_retriever(retriever, dataset, split)
    yield row(label, EXACT, None, exact)
    cells = cells_for(retriever.size)
    factory = f"IVF{cells},SQ8"
    for nprobe in (default_nprobe(cells), *FEWER_PROBES):
        report = evaluate_retriever(dense(corpus, settings, encoder, factory, nprobe), dataset, split)
        yield row(label, factory, nprobe, report, exact)


def row(label: str, factory: str, nprobe: int | None, report: Any, exact: Any = None) -> dict[str, Any]:
    """One row of the table: the set, the index, its scores (4 decimals), nDCG@10's change against ``exact``
    (compressed rows only) and the code that measured it."""
    from disambig.evaluation.code_version import code_stamp, describe

    delta = {"delta_vs_exact": round(report.metrics["ndcg@10"] - exact.metrics["ndcg@10"], 4)} if exact else {}
    return {"set": label, "factory": factory, "nprobe": nprobe, "queries": report.queries,
            **{metric: round(value, 4) for metric, value in report.metrics.items()}, **delta,
            "code": describe(code_stamp())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/scale-ndcg"),
                        help="Scratch folder: the ASQA retrieval set and the index cache this run builds in.")
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale/ndcg.json"))
    args = parser.parse_args()
    from disambig.data.atomic import write_json
    from disambig.retrieval.embedder import Embedder
    from disambig.settings import load_settings

    user_cache = Path(load_settings(threads=1).cache_dir).expanduser().resolve()
    work = args.work.expanduser().resolve()
    cache = work / "cache"
    if cache == user_cache or user_cache in cache.parents or cache in user_cache.parents:
        raise SystemExit(f"--work {str(work)!r} would build in the index cache {str(user_cache)!r}; pass a scratch "
                         "folder")
    settings = load_settings(threads=1, cache_dir=str(cache))
    logging.basicConfig(format="%(message)s", level=logging.WARNING)
    logging.getLogger("disambig.retrieval").setLevel(logging.INFO)  # says when an index is rebuilt or encoded
    encoder = Embedder()
    asqa = asqa_folder(work) if any(SETS[name][0] == "asqa-retrieval" for name in args.sets) else None
    rows = []
    for name in args.sets:
        dataset = asqa if SETS[name][0] == "asqa-retrieval" else SETS[name][0]
        for row in measure(name, dataset, settings, encoder, user_cache):
            delta = f"{row['delta_vs_exact']:+.4f}" if "delta_vs_exact" in row else ""
            print(f"{row['set']:<42} {row['factory']:<11} nprobe {row['nprobe'] or '-':>3}  queries {row['queries']}"
                  f"  nDCG@10 {row['ndcg@10']:.4f} {delta:>8}  R@100 {row['recall@100']:.4f}  MRR@10 "
                  f"{row['mrr@10']:.4f}  {row['code']}", flush=True)
            rows.append(row)
    write_json(args.out, rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
