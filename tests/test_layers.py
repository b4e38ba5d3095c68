"""Imports run one way: lm, data, retrieval → signatures → programs → metrics → evaluation → optimizers → serving →
cli.

Every ``disambig.X`` import in a layer's files (module level or inside a function) may name only its own
layer, a lower one, or the shared foundation (``disambig.errors``, ``disambig.settings``, ``disambig.paths``, the
version).

Inside ``programs/`` the same holds between its folders: the shared modules at its top import no method; a method's
subpackage (``adf/``, ``amd/``, ``dfa/``, ``diva/``, ``verdict/``) imports only itself and the shared modules;
``baselines/`` and ``route/`` may also import the methods they stand beside or choose between.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RANK = {"lm": 0, "data": 0, "retrieval": 0, "signatures": 1, "programs": 2, "metrics": 3, "evaluation": 4,
        "optimizers": 5, "serving": 6}
FOUNDATION = {"disambig", "disambig.errors", "disambig.settings", "disambig.paths"}
PROGRAMS = ROOT / "programs"
PART_RANK = {"shared": 0, "adf": 1, "amd": 1, "dfa": 1, "diva": 1, "verdict": 1, "baselines": 2, "route": 2}
"""The parts of ``programs/``: its top-level modules ("shared"), then one subpackage per method, then the
baselines and the router. A new subpackage goes into this table."""


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


def test_every_folder_mapped_into_disambig_is_a_layer() -> None:
    """A folder ``pyproject.toml`` maps into ``disambig`` but ``RANK`` leaves out would count as the CLI, unchecked."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    assert {name.split(".")[1] for name in mapping if name.count(".") == 1} - {"cli"} == set(RANK)


@pytest.mark.parametrize("folder", sorted(RANK))
def test_layer_imports_only_its_own_or_lower_layers(folder: str) -> None:
    assert upward_imports(folder) == []


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from disambig.optimizers.knobs import Knob\n", encoding="utf-8")
    assert imported_modules(source) == ["disambig.optimizers.knobs"]
    assert layer_of("disambig.optimizers.knobs") == "optimizers"
    assert layer_of("disambig.serving.app") == "serving"
    assert layer_of("disambig.cli.app") == "cli"
    assert layer_of("disambig.errors") is None


def part_of(module: str, root: Path = PROGRAMS) -> str | None:
    """The part of ``programs/`` a ``disambig.programs...`` module is in (a subpackage, or "shared" for its
    top-level modules and the package itself); ``None`` outside ``programs``."""
    parts = module.split(".")
    if parts[:2] != ["disambig", "programs"]:
        return None
    return parts[2] if len(parts) > 2 and (root / parts[2]).is_dir() else "shared"


def crossing_imports(root: Path = PROGRAMS) -> list[str]:
    """Imports from one part of ``programs/`` into another of the same or a higher rank."""
    wrong = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).parts
        own = relative[0] if len(relative) > 1 else "shared"
        for module in imported_modules(path):
            target = part_of(module, root)
            if target is not None and target != own and PART_RANK[target] >= PART_RANK[own]:
                wrong.append(f"{'/'.join(relative)} ({own}) imports {module} ({target})")
    return wrong


def test_every_programs_folder_is_in_the_part_table() -> None:
    folders = {p.name for p in PROGRAMS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(PART_RANK) - {"shared"}


def test_programs_parts_import_only_themselves_shared_modules_or_methods_below() -> None:
    assert crossing_imports() == []


@pytest.mark.parametrize("part", sorted(set(PART_RANK) - {"shared"}))
def test_each_programs_folder_names_its_exports(part: str) -> None:
    import importlib

    assert (PROGRAMS / part / "__init__.py").is_file()
    package = importlib.import_module(f"disambig.programs.{part}")
    assert package.__all__ and all(hasattr(package, name) for name in package.__all__)


def test_the_programs_checker_sees_a_crossing_import(tmp_path: Path) -> None:
    files = {
        "rac.py": "from disambig.programs.context import unique\n",  # shared -> shared: fine
        "conflicts.py": "from disambig.programs.verdict.program import VerDICt\n",  # shared -> method
        "adf/program.py": "def f():\n    from disambig.programs.diva import DIVA\n",  # method -> another method
        "adf/gate.py": "from disambig.programs.adf.geometry import coherence\n",  # its own folder: fine
        "baselines/count.py": "from disambig.programs.dfa.program import DFA\n",  # baseline -> method: fine
        "diva/program.py": "from disambig.programs.baselines import VanillaRAG\n",  # method -> baselines
        "verdict/program.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert crossing_imports(tmp_path) == [
        "adf/program.py (adf) imports disambig.programs.diva (diva)",
        "conflicts.py (shared) imports disambig.programs.verdict.program (verdict)",
        "diva/program.py (diva) imports disambig.programs.baselines (baselines)",
    ]
