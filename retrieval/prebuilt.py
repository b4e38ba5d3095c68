"""pyserini's prebuilt BM25 indexes (``wikipedia-dpr-100w``, the 21M-passage DPR Wikipedia split, ...): where they
live in pyserini's cache, and fetching one, the only step that needs network (``disambig index fetch NAME``).

pyserini keeps a fetched index in ``{PYSERINI_CACHE or ~/.cache/pyserini}/indexes/{file stem}.{md5}/`` (a Lucene
index storing each passage's raw ``contents``); an index found there is opened as it is, without network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError

SHORT_NAMES = {"wikipedia-dpr": "wikipedia-dpr-100w"}
"""Corpus names that stand for a prebuilt index: ``--corpus wikipedia-dpr`` is ``prebuilt:wikipedia-dpr-100w``, the
21M-passage DPR Wikipedia split the papers retrieve from."""


def corpus_name(corpus: str) -> str:
    """``prebuilt:NAME`` for a short name of a prebuilt index (``wikipedia-dpr``); any other corpus unchanged."""
    from disambig.retrieval.bm25 import PREBUILT

    short = SHORT_NAMES.get(corpus) if isinstance(corpus, str) else None
    return f"{PREBUILT}{short}" if short else corpus


def prebuilt_info(name: str) -> dict[str, Any]:
    """pyserini's record of the prebuilt BM25 index ``name`` (file name, md5, size, documents).

    Raises:
        ConfigurationError: pyserini knows no BM25 index of that name (the message lists similar ones).
    """
    from disambig.retrieval.java import prebuilt_bm25_index_info

    known = prebuilt_bm25_index_info()
    if name not in known:
        close = sorted(n for n in known if name.split("-")[0] in n)[:8]
        raise ConfigurationError(f"unknown prebuilt index {name!r}; pyserini's BM25 indexes include "
                                 f"{', '.join(close) or 'wikipedia-dpr-100w, msmarco-v1-passage'}")
    return known[name]


def prebuilt_folder(name: str) -> Path:
    """Where pyserini keeps the prebuilt index ``name`` once fetched (it may not exist yet)."""
    import os

    info = prebuilt_info(name)
    home = os.environ.get("PYSERINI_CACHE") or str(Path("~/.cache/pyserini").expanduser())
    stem = info["filename"].removesuffix(".tar.gz")
    return Path(home) / "indexes" / f"{stem}.{info['md5']}"


def fetched(name: str) -> Path | None:
    """The folder of the prebuilt index ``name`` when it is in pyserini's cache, else None."""
    folder = prebuilt_folder(name)
    return folder if folder.is_dir() else None


def fetch(name: str) -> Path:
    """The prebuilt index ``name``, downloaded and unpacked by pyserini unless already in its cache.

    Raises:
        ConfigurationError: the download failed (no network, or every mirror refused).
    """
    folder = fetched(name)
    if folder is not None:
        return folder
    from disambig.retrieval.java import java_for_pyserini

    size = prebuilt_info(name).get("size compressed (bytes)", 0) / 2**30
    with java_for_pyserini():
        from pyserini.util import download_prebuilt_index

        try:
            return Path(download_prebuilt_index(name, verbose=False))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"could not download prebuilt index {name!r} ({exc}); it needs network once "
                                     f"({size:.1f} GB), then lives in {str(prebuilt_folder(name).parent)!r}") from None
