"""The ``disambig`` command line (typer + rich)."""

from __future__ import annotations

from disambig.cli.app import app, main

__all__ = ["app", "main"]
