"""The suite's programs as ``dspy.Module``s, and the registry the CLI and the evaluator use."""

from __future__ import annotations

from disambig.programs.registry import (
    PROGRAMS,
    ProgramInfo,
    build_program,
    check_options,
    program_options,
    retriever_kind,
)

__all__ = ["PROGRAMS", "ProgramInfo", "build_program", "check_options", "program_options", "retriever_kind"]
