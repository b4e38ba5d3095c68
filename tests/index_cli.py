"""``invoke``: the typer app as the index commands' CLI tests run it (wide columns, so error lines are not wrapped).
Their index cache and fake embedder come from the ``index_cache`` fixture (``conftest.py``)."""

from __future__ import annotations

from typer.testing import CliRunner

from disambig.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})
