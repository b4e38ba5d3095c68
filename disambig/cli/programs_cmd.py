"""``disambig programs``: the registered programs, one line each."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def list_programs() -> None:
    """List the registered programs and whether they need a retriever."""
    from disambig.programs import PROGRAMS

    table = Table(title="Programs")
    for column in ("name", "retrieval", "what it does"):
        table.add_column(column)
    for name, info in PROGRAMS.items():
        table.add_row(name, "yes" if info.needs_retriever else "no", info.summary)
    Console(width=160).print(table)
