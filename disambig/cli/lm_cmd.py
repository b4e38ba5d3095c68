"""``disambig lm check``: load the LM, measure its speed, and prove structured output parses."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True, help="Inspect the language model.")


@app.command("check")
@user_errors
def check(lm: str | None = options.LM, threads: int | None = options.THREADS) -> None:
    """Load the LM, print measured prefill/decode tokens per second and a schema-constrained call's result."""
    from disambig.lm.check import run_check

    settings = load_settings(lm=lm, threads=threads)
    report = run_check(settings)
    table = Table(title=f"LM check: {settings.lm}")
    table.add_column("measure")
    table.add_column("value", justify="right", overflow="fold")
    for key, value in report.rows():
        table.add_row(key, value)
    Console().print(table)
