"""Registered programs by name. Adding a program is one entry in ``PROGRAMS``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from disambig.errors import ConfigurationError
from disambig.programs.moved import locate


@dataclass(frozen=True)
class ProgramInfo:
    """A registered program: where its class lives, what it does, whether it needs a retriever, and which one
    it gets when none is named."""

    target: str
    summary: str
    needs_retriever: bool
    default_retriever: str = "hybrid"
    format_option: str = ""  # constructor argument that follows the dataset's row format unless the user sets it
    formats: tuple[str, ...] = ()  # the row formats that argument takes (asqa, ambignq)


PROGRAMS: dict[str, ProgramInfo] = {
    "closed-book": ProgramInfo(
        "disambig.programs.baselines:ClosedBook", "one LM call, no retrieval (DIVA's closed-book baseline)", False
    ),
    "vanilla-rag": ProgramInfo(
        "disambig.programs.baselines:VanillaRAG", "top-5 passages, extract readings, consolidate (RAC)", True
    ),
    "iterative-rag": ProgramInfo(
        "disambig.programs.baselines:IterativeRAG",
        "tree of clarifications: readings become the next level's queries (depth 3, 10 nodes)", True,
    ),
    "per-reading-rag": ProgramInfo(
        "disambig.programs.baselines:PerReadingRAG",
        "pseudo-interpretations, one corpus retrieval per reading, round-robin top-5, RAC (no pruning, no "
        "verification)", True,
    ),
    "diva": ProgramInfo(
        "disambig.programs.diva:DIVA",
        "DIVA: ambiguity typing, pseudo-interpretations, diversified + pruned retrieval, verification, adaptive answer",
        True,
    ),
    "diva-no-adapt": ProgramInfo(
        "disambig.programs.diva:DIVANoAdapt",
        "DIVA's RAG + RD ablation: pseudo-interpretations, diversified + pruned retrieval, RAC (no verification, no "
        "adaptive answer)", True,
    ),
    "diva-anchored": ProgramInfo(
        "disambig.programs.diva:DIVAAnchored",
        "DIVA's pseudo-interpretations and diversified retrieval, each reading answered on its own from the passages "
        "(the answers grade the retrieval), long answer over the answered readings", True,
    ),
    "diva-grounded": ProgramInfo(
        "disambig.programs.diva:DIVAGrounded",
        "DIVA whose pseudo-interpretations are written from the passages retrieved for the question, then its "
        "diversified retrieval, verification and adaptive answer", True,
    ),
    "diva-anchored-grounded": ProgramInfo(
        "disambig.programs.diva:DIVAAnchoredGrounded",
        "diva-anchored whose pseudo-interpretations are written from the passages retrieved for the question", True,
    ),
    "verdict": ProgramInfo(
        "disambig.programs.verdict:VerDICt",
        "VerDICt: relaxed query, one top-20 retrieval, one feedback call per passage (reading + answer or abstain), "
        "HDBSCAN medoids citing their passage, long answer over them", True,
    ),
    "rac-top20": ProgramInfo(
        "disambig.programs.baselines:RACTop20",
        "VerDICt's RAC baseline: relaxed query, top-20 passages, readings and answers in one extraction call, long "
        "answer", True,
    ),
    "dtv-pseudo": ProgramInfo(
        "disambig.programs.baselines:DtVPseudo",
        "VerDICt's 'DtV - verification' baseline: DIVA's pseudo-interpretations themselves (no retrieval), answered "
        "closed-book; DtV itself is diva", False,
    ),
    "adf": ProgramInfo(
        "disambig.programs.adf:ADF",
        "ADF: coherence gate on the first retrieval, K-means clusters -> sub-questions + HyDE, RRF, structured "
        "synthesis", True, format_option="style", formats=("ambignq", "asqa"),
    ),
    "dfa": ProgramInfo(
        "disambig.programs.dfa:DFA",
        "DFA: ambiguity classification + rewrite, tool filtering over snapshots with rollback, semantic batching, "
        "batch judging and entity de-duplication; counts over an aggregation dataset's chunk scope", False,
    ),
    "llm-only-count": ProgramInfo(
        "disambig.programs.baselines:LLMOnlyCount", "DFA's LLM-only baseline: the count in one call, no chunks",
        False,
    ),
    "naive-rag-count": ProgramInfo(
        "disambig.programs.baselines:NaiveRAGCount",
        "DFA's Naive RAG baseline: top-k chunks of the scope by embedding cosine (knob k: 5/10/20/50), one count call",
        False,
    ),
    "map-count": ProgramInfo(
        "disambig.programs.baselines:MapCount",
        "eq. 2 by brute force: one judge call per chunk of the whole scope, entities unioned and counted", False,
    ),
    "amd": ProgramInfo(
        "disambig.programs.amd:ExpansionSearch",
        "AMD's query expansion as a program over its retriever (amd-sparse, amd-dense, amd-rrf, q2d-..., genqr-...): "
        "ranked passages to compile its prompts against nDCG@10 / recall@K on a BEIR folder", True, "amd-sparse",
    ),
    "route": ProgramInfo(
        "disambig.programs.route:Route",
        "a learned per-question policy: one look at the first-stage retrieval, then answer with one of its candidate "
        "programs, ask a clarifying question, or abstain (`disambig compile route`)", True,
    ),
}


RENAMED: dict[str, str] = {"dtv-no-verify": "per-reading-rag"}
"""Former program names and the name each program is registered under now."""


def unknown_program(name: str) -> ConfigurationError:
    """The error for an unregistered ``name``: the new name of a renamed program, else the registered names."""
    if name in RENAMED:
        return ConfigurationError(f"program {name!r} was renamed {RENAMED[name]!r}; use --program {RENAMED[name]}")
    return ConfigurationError(f"unknown program {name!r}; registered programs: {', '.join(sorted(PROGRAMS))}")


def retriever_kind(name: str, requested: str | None = None) -> str:
    """The retriever a run of program ``name`` uses: ``requested``, else its default if it needs one, else ""."""
    info = PROGRAMS.get(name)
    return requested or (info.default_retriever if info is not None and info.needs_retriever else "")


def build_program(name: str, retriever: Any = None, **kwargs: Any) -> Any:
    """Instantiate the program registered as ``name``; ``kwargs`` are its constructor arguments (``program_options``).

    Raises:
        ConfigurationError: an unregistered name, a missing retriever, or an argument the constructor does not take.
    """
    info = PROGRAMS.get(name)
    if info is None:
        raise unknown_program(name)
    if info.needs_retriever and retriever is None:
        raise ConfigurationError(f"program {name!r} needs a retriever; pass --retriever bm25|dense|hybrid")
    check_options(name, kwargs)
    return program_class(name)(retriever=retriever, **kwargs)


def with_format_option(name: str, row_format: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` plus the argument of program ``name`` that follows the dataset's ``row_format`` (ADF's
    ``style=asqa`` on an ASQA-format file), unless the user set it or the program takes no such argument."""
    info = PROGRAMS.get(name)
    if info is None or not info.format_option or info.format_option in options or row_format not in info.formats:
        return dict(options)
    return dict(options) | {info.format_option: row_format}


def check_options(name: str, options: dict[str, Any]) -> None:
    """Refuse a constructor argument that program ``name`` does not take, naming the ones it takes."""
    valid = program_options(name)
    unknown = sorted(set(options) - set(valid)) if valid is not None else []
    if unknown:
        raise ConfigurationError(f"program {name!r} takes no option {unknown[0]!r}; its options: {', '.join(valid)}")


def program_class(name: str) -> type:
    """The class registered as ``name`` (imported on demand; a target naming a module from before issue 39's move
    is read at its new path, ``programs/moved.py``)."""
    if name not in PROGRAMS:
        raise unknown_program(name)
    return locate(PROGRAMS[name].target)


def program_options(name: str) -> list[str] | None:
    """The constructor arguments of program ``name`` other than ``retriever`` (what ``--option KEY=VALUE`` may
    set), in signature order; None when the constructor takes any keyword."""
    parameters = list(inspect.signature(program_class(name).__init__).parameters.values())[1:]  # after self
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters if p.name != "retriever" and p.kind is not inspect.Parameter.VAR_POSITIONAL]
