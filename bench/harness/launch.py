"""Run the disambig CLI, a module or a script with another checkout's code and this environment's packages.

    python bench/harness/launch.py TREE disambig eval vanilla-rag ...
    python bench/harness/launch.py TREE -m bench.quality.rescore ...

The editable install maps ``disambig.*`` to this checkout's folders; here a finder put first on ``sys.meta_path``
maps them to TREE's, as TREE's ``pyproject.toml`` ([tool.setuptools.package-dir]) lays them out. Standalone: it
imports nothing of the project before the finder is in place.
"""

from __future__ import annotations

import runpy
import sys
import tomllib
from importlib.machinery import ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path


class CheckoutFinder:
    """Finds each package ``[tool.setuptools.package-dir]`` maps in the checkout ``root``; the rest as usual."""

    def __init__(self, root: Path) -> None:
        pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        self.folders = {name: root / folder for name, folder in pyproject["tool"]["setuptools"]["package-dir"].items()}

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        folder = self.folders.get(name)
        if folder is None:
            return None
        return spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: launch.py TREE (disambig ARGS | -m MODULE ARGS | SCRIPT ARGS)")
    root = Path(argv[0]).resolve()
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]  # this folder's modules are not the tree's
    sys.meta_path.insert(0, CheckoutFinder(root))
    if argv[1] == "disambig":
        sys.argv = argv[1:]
        from disambig.cli import main as cli

        cli()
    elif argv[1] == "-m":
        sys.argv = argv[2:]
        sys.path.insert(0, str(root))
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        sys.path.insert(0, str(Path(argv[1]).resolve().parent))
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
