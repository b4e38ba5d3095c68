"""pyserini's prebuilt indexes (``wikipedia-dpr-100w``, the 21M-passage DPR Wikipedia split, ...): where they live
in pyserini's cache, and fetching one, the only step that needs network (``disambig index fetch NAME [--dense]``).

pyserini keeps a fetched index in ``{PYSERINI_CACHE or ~/.cache/pyserini}/indexes/{file stem}.{md5}/``: a BM25 one is
a Lucene index storing each passage's raw ``contents``, a dense one a FAISS file ``index`` and a ``docid`` file (one
Lucene docid a line, in the order of the FAISS rows). An index found there is opened as it is, without network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from disambig.errors import ConfigurationError

SHORT_NAMES = {"wikipedia-dpr": "wikipedia-dpr-100w"}
"""Corpus names that stand for a prebuilt index: ``--corpus wikipedia-dpr`` is ``prebuilt:wikipedia-dpr-100w``, the
21M-passage DPR Wikipedia split the papers retrieve from."""

DENSE_INDEXES = {"wikipedia-dpr-100w": "wikipedia-dpr-100w.dpr-multi"}
"""The pyserini FAISS index that ``--retriever dense|hybrid`` searches over a prebuilt corpus: DPR's passage encoder
trained on several QA datasets (``dpr-multi``). Its passage texts are the BM25 index's stored documents."""
QUERY_ENCODERS = {"wikipedia-dpr-100w.dpr-multi": "facebook/dpr-question_encoder-multiset-base"}
"""The Hugging Face query encoder each FAISS index was built for (pyserini's ``docs/experiments-dpr.md``)."""
Kind = Literal["bm25", "dense"]
KIND_NAMES = {"bm25": "BM25", "dense": "FAISS"}


def corpus_name(corpus: str) -> str:
    """``prebuilt:NAME`` for a short name of a prebuilt index (``wikipedia-dpr``); any other corpus unchanged."""
    from disambig.retrieval.bm25 import PREBUILT

    short = SHORT_NAMES.get(corpus) if isinstance(corpus, str) else None
    return f"{PREBUILT}{short}" if short else corpus


def dense_index(name: str) -> str:
    """The prebuilt FAISS index paired with the prebuilt BM25 index ``name`` (``DENSE_INDEXES``).

    Raises:
        ConfigurationError: no dense index is paired with ``name``.
    """
    if name not in DENSE_INDEXES:
        raise ConfigurationError(f"no prebuilt dense index is paired with {name!r}; dense and hybrid search a prebuilt "
                                 f"corpus only for {', '.join(DENSE_INDEXES)}; use --retriever bm25")
    return DENSE_INDEXES[name]


def prebuilt_info(name: str, kind: Kind = "bm25") -> dict[str, Any]:
    """pyserini's record of the prebuilt ``kind`` index ``name`` (file name, md5, size, documents).

    Raises:
        ConfigurationError: pyserini knows no index of that name and kind (the message lists similar ones).
    """
    from disambig.retrieval.java import prebuilt_bm25_index_info, prebuilt_dense_index_info

    known = prebuilt_bm25_index_info() if kind == "bm25" else prebuilt_dense_index_info()
    if name not in known:
        close = sorted(n for n in known if name.split("-")[0] in n)[:8]
        raise ConfigurationError(f"unknown prebuilt index {name!r}; pyserini's {KIND_NAMES[kind]} indexes include "
                                 f"{', '.join(close) or 'wikipedia-dpr-100w, msmarco-v1-passage'}")
    return known[name]


def prebuilt_folder(name: str, kind: Kind = "bm25") -> Path:
    """Where pyserini keeps the prebuilt ``kind`` index ``name`` once fetched (it may not exist yet)."""
    import os

    info = prebuilt_info(name, kind)
    home = os.environ.get("PYSERINI_CACHE") or str(Path("~/.cache/pyserini").expanduser())
    stem = info["filename"].removesuffix(".tar.gz")
    return Path(home) / "indexes" / f"{stem}.{info['md5']}"


def fetched(name: str, kind: Kind = "bm25") -> Path | None:
    """The folder of the prebuilt ``kind`` index ``name`` when it is in pyserini's cache, else None."""
    folder = prebuilt_folder(name, kind)
    return folder if folder.is_dir() else None


def fetch(name: str, kind: Kind = "bm25") -> Path:
    """The prebuilt ``kind`` index ``name``, downloaded and unpacked by pyserini unless already in its cache.

    Raises:
        ConfigurationError: the download failed (no network, or every mirror refused).
    """
    folder = fetched(name, kind)
    if folder is not None:
        return folder
    from disambig.retrieval.java import java_for_pyserini

    size = prebuilt_info(name, kind).get("size compressed (bytes)", 0) / 2**30
    with java_for_pyserini():
        from pyserini.util import download_prebuilt_index

        try:
            return Path(download_prebuilt_index(name, verbose=False))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"could not download prebuilt index {name!r} ({exc}); it needs network once "
                                     f"({size:.1f} GB), then lives in {str(prebuilt_folder(name, kind).parent)!r}"
                                     ) from None
