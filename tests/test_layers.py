"""Imports run one way: lm, data, retrieval → signatures → programs → metrics → evaluation → optimizers → cli.

Every ``disambig.X`` import in a layer's files (module level or inside a function) may name only its own
layer, a lower one, or the shared foundation (``disambig.errors``, ``disambig.settings``, ``disambig.paths``, the
version).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RANK = {"lm": 0, "data": 0, "retrieval": 0, "signatures": 1, "programs": 2, "metrics": 3, "evaluation": 4,
        "optimizers": 5}
FOUNDATION = {"disambig", "disambig.errors", "disambig.settings", "disambig.paths"}


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [n for n in names if n == "disambig" or n.startswith("disambig.")]


def layer_of(module: str) -> str | None:
    """The layer a ``disambig.X...`` module belongs to; ``None`` for the foundation; ``cli`` above all."""
    if module in FOUNDATION:
        return None
    part = module.split(".")[1]
    return part if part in RANK else "cli"


def upward_imports(folder: str) -> list[str]:
    wrong = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module in imported_modules(path):
            target = layer_of(module)
            if target is not None and (target == "cli" or RANK[target] > RANK[folder]):
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    return wrong


@pytest.mark.parametrize("folder", sorted(RANK))
def test_layer_imports_only_its_own_or_lower_layers(folder: str) -> None:
    assert upward_imports(folder) == []


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from disambig.optimizers.knobs import Knob\n", encoding="utf-8")
    assert imported_modules(source) == ["disambig.optimizers.knobs"]
    assert layer_of("disambig.optimizers.knobs") == "optimizers"
    assert layer_of("disambig.cli.app") == "cli"
    assert layer_of("disambig.errors") is None
