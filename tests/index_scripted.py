"""``disambig index build`` for a subprocess that tests kill: ``python tests/index_scripted.py index build ...``.

``--embedder`` is replaced by the bag-of-words ``VocabEmbedder`` of ``retrieval_fakes`` (no model): each encode call
waits ``DISAMBIG_EMBED_DELAY`` seconds, so a build can be caught mid-way, and appends a line to ``DISAMBIG_EMBED_LOG``
(to count the shards encoded across processes). ``KILL_AT_REPLACE=NAME`` kills the process (SIGKILL) as it would
rename a finished temporary file onto ``NAME`` (``cli_scripted``); ``KILL_AT_REMOVE=NAME`` as it would delete a file
or folder called ``NAME``; ``KILL_AT_PUBLISH=1`` as it would rename a build's ``.partial`` folder to the finished
index's name.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from retrieval_fakes import VocabEmbedder


class SlowVocabEmbedder(VocabEmbedder):
    """``VocabEmbedder`` (same name, same vectors), slowed and logged per call."""

    def encode(self, texts: list[str]) -> Any:
        time.sleep(float(os.environ.get("DISAMBIG_EMBED_DELAY", "0")))
        log = os.environ.get("DISAMBIG_EMBED_LOG", "")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{len(texts)}\n")
        return super().encode(texts)


def kill_at_publish() -> None:
    real = os.rename

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if Path(src).name.endswith(".partial"):
            os.kill(os.getpid(), signal.SIGKILL)
        real(src, dst, *args, **kwargs)

    os.rename = rename


def kill_at_remove(name: str) -> None:
    """SIGKILL as a file (``os.unlink``) or folder (``os.rmdir``; ``shutil.rmtree`` calls both) named ``name`` would
    be deleted."""
    for attr in ("unlink", "rmdir"):
        real = getattr(os, attr)

        def remove(path: Any, *args: Any, real: Any = real, **kwargs: Any) -> None:
            if os.path.basename(os.fsdecode(path)) == name:
                os.kill(os.getpid(), signal.SIGKILL)
            real(path, *args, **kwargs)

        setattr(os, attr, remove)


if __name__ == "__main__":
    from cli_scripted import kill_at_replace

    import disambig.cli.index_cmd as index_cmd

    index_cmd.make_embedder = lambda model: SlowVocabEmbedder()
    if os.environ.get("KILL_AT_REPLACE"):
        kill_at_replace(os.environ["KILL_AT_REPLACE"])
    if os.environ.get("KILL_AT_REMOVE"):
        kill_at_remove(os.environ["KILL_AT_REMOVE"])
    if os.environ.get("KILL_AT_PUBLISH"):
        kill_at_publish()
    from disambig.cli.app import main

    sys.argv = ["disambig", *sys.argv[1:]]
    main()
