"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

LM = typer.Option(None, "--lm", help="LM spec: local, local:/path.gguf or a LiteLLM model (env DISAMBIG_LM).")
THREADS = typer.Option(None, "--threads", min=1, help="CPU threads (env DISAMBIG_THREADS).")
CACHE = typer.Option(None, "--cache/--no-cache",
                     help="Reuse LM responses from the cache directory (env DISAMBIG_LM_CACHE; off by default so "
                          "timings are real).")


def cache_note(settings: Any) -> str:
    """``on (FOLDER; repeated calls cost no LM time)`` or ``off``, for a run's printed summary."""
    from disambig.lm.runtime import RESPONSE_CACHE_SUBDIR

    if not settings.lm_cache:
        return "off"
    return f"on ({Path(settings.cache_dir) / RESPONSE_CACHE_SUBDIR}; repeated calls cost no LM time)"
