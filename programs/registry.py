"""Registered programs by name. Adding a program is one entry in ``PROGRAMS``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from disambig.errors import ConfigurationError


@dataclass(frozen=True)
class ProgramInfo:
    """A registered program: where its class lives, what it does, and whether it needs a retriever."""

    target: str
    summary: str
    needs_retriever: bool


PROGRAMS: dict[str, ProgramInfo] = {
    "closed-book": ProgramInfo(
        "disambig.programs.closed_book:ClosedBook", "one LM call, no retrieval (DIVA's closed-book baseline)", False
    ),
}


def build_program(name: str, retriever: Any = None, **kwargs: Any) -> Any:
    """Instantiate the program registered as ``name``."""
    info = PROGRAMS.get(name)
    if info is None:
        raise ConfigurationError(f"unknown program {name!r}; registered programs: {', '.join(sorted(PROGRAMS))}")
    if info.needs_retriever and retriever is None:
        raise ConfigurationError(f"program {name!r} needs a retriever; pass --retriever bm25|dense|hybrid")
    module_name, _, class_name = info.target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(retriever=retriever, **kwargs)
