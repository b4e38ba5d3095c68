"""Where the modules of ``programs/`` went when each method got its own folder (issue 39): old path -> new path.

A compiled artifact names its program by registered name (the manifest's ``program``), its predictors by attribute
path and its structure by field names, never by module, so a state file or an MLflow model saved before the move
loads through the registry as it is. What does name a module is a ``module:attribute`` target, read when a program
is built (a ``ProgramInfo`` of the registry, or one a user adds to it): ``program_class`` imports it with ``locate``,
so a target written with a path from before the move still finds its class.
"""

from __future__ import annotations

import importlib
from typing import Any

MOVED: dict[str, str] = {
    "disambig.programs.adf": "disambig.programs.adf.program",
    "disambig.programs.adf_gate": "disambig.programs.adf.gate",
    "disambig.programs.adf_geometry": "disambig.programs.adf.geometry",
    "disambig.programs.amd": "disambig.programs.amd.program",
    "disambig.programs.expansion": "disambig.programs.amd.expansion",
    "disambig.programs.expanded_retrieval": "disambig.programs.amd.expanded_retrieval",
    "disambig.programs.closed_book": "disambig.programs.baselines.closed_book",
    "disambig.programs.count_baselines": "disambig.programs.baselines.count",
    "disambig.programs.dtv_pseudo": "disambig.programs.baselines.dtv_pseudo",
    "disambig.programs.iterative_rag": "disambig.programs.baselines.iterative_rag",
    "disambig.programs.per_reading_rag": "disambig.programs.baselines.per_reading_rag",
    "disambig.programs.rac_top20": "disambig.programs.baselines.rac_top20",
    "disambig.programs.vanilla_rag": "disambig.programs.baselines.vanilla_rag",
    "disambig.programs.dfa": "disambig.programs.dfa.program",
    "disambig.programs.dfa_batching": "disambig.programs.dfa.batching",
    "disambig.programs.dfa_dedup": "disambig.programs.dfa.dedup",
    "disambig.programs.dfa_filter": "disambig.programs.dfa.filter",
    "disambig.programs.diva": "disambig.programs.diva.program",
    "disambig.programs.diversify": "disambig.programs.diva.diversify",
    "disambig.programs.verdict": "disambig.programs.verdict.program",
    "disambig.programs.consolidate": "disambig.programs.verdict.consolidate",
}
"""Each module that moved, by its path before the move. ``disambig.programs.adf`` (and ``amd``, ``dfa``, ``diva``,
``verdict``) is now the method's package, which exports only its main names; its old module is ``program``."""


def locate(target: str) -> Any:
    """The object a ``module:attribute`` target names, a module that moved read at its new path.

    The old module of a method (``disambig.programs.verdict``) is now its package, which exports the method's main
    names (``disambig.programs.verdict:VerDICt``): a name in the package's ``__all__`` comes from it, any other from
    the module that holds the old module's code now (``disambig.programs.verdict:passage_text`` from
    ``verdict.program``; ``disambig.programs.diva:diversify`` is the function of ``diva.program``, not the submodule
    ``diva.diversify``).
    """
    module_name, _, attribute = target.partition(":")
    moved = MOVED.get(module_name)
    if moved is None:
        return getattr(importlib.import_module(module_name), attribute)
    if moved.startswith(f"{module_name}."):  # the name is the method's package now
        package = importlib.import_module(module_name)
        if attribute in package.__all__:
            return getattr(package, attribute)
    return getattr(importlib.import_module(moved), attribute)
