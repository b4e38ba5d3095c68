"""Options shared by several commands."""

from __future__ import annotations

import typer

LM = typer.Option(None, "--lm", help="LM spec: local, local:/path.gguf or a LiteLLM model (env DISAMBIG_LM).")
THREADS = typer.Option(None, "--threads", min=1, help="CPU threads (env DISAMBIG_THREADS).")
