"""The wheel built from the checkout holds every module of the folders ``pyproject.toml`` maps into ``disambig``, and
every registered program imports from it alone (issue 38: a hand-written package list left out
``disambig.programs.route``, so ``pip install .`` gave a registry naming a program it could not import).

The build runs on a copy of the checkout (setuptools writes ``build/`` and ``*.egg-info`` beside the sources), without
build isolation (the venv's setuptools; no network). The installed wheel is imported with ``python -S``: no ``.pth``
file runs, so the editable install of the checkout cannot fill in what the wheel lacks.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from disambig.programs import PROGRAMS

ROOT = Path(__file__).resolve().parents[1]
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md")  # what the build reads besides the mapped folders

LIST_PROGRAMS = """
import json, sys
from disambig.programs import PROGRAMS
from disambig.programs.registry import program_class
for name in PROGRAMS:
    program_class(name)
files = [getattr(m, "__file__", None) for n, m in list(sys.modules.items()) if n.partition(".")[0] == "disambig"]
print(json.dumps({"programs": list(PROGRAMS), "files": files}))
"""


def mapped_folders() -> dict[str, str]:
    """``[tool.setuptools.package-dir]``: package name -> folder of the checkout."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]


def source_modules() -> set[str]:
    """Every module of the mapped folders (a ``.py`` file with an ``__init__.py`` in each folder down to it), named by
    its path in the wheel: ``programs/route/cascade.py`` -> ``disambig/programs/route/cascade.py``."""
    modules = set()
    for name, folder in mapped_folders().items():
        top = ROOT / folder
        for path in top.rglob("*.py"):
            folders = [parent for parent in path.parents if parent.is_relative_to(top)]
            if all((f / "__init__.py").is_file() for f in folders):
                modules.add("/".join([*name.split("."), *path.relative_to(top).parts]))
    return modules


def copy_sources(to: Path) -> Path:
    """The checkout's build files and mapped folders, without caches or earlier build output."""
    to.mkdir()
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, to / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in sorted({Path(folder).parts[0] for folder in mapped_folders().values()}):
        shutil.copytree(ROOT / folder, to / folder, ignore=ignore)
    return to


def pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_every_registered_program_imports_from_it(tmp_path):
    sources = copy_sources(tmp_path / "src")
    pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(tmp_path / "dist"), str(sources))
    (wheel,) = (tmp_path / "dist").glob("disambig-*.whl")
    missing = source_modules() - set(zipfile.ZipFile(wheel).namelist())
    assert not missing, f"modules of the checkout missing from {wheel.name}: {sorted(missing)}"

    installed = tmp_path / "site"
    pip("install", "--no-deps", "--target", str(installed), str(wheel))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), *site.getsitepackages()])}
    done = subprocess.run([sys.executable, "-S", "-c", LIST_PROGRAMS], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout.strip().splitlines()[-1])
    assert listed["programs"] == list(PROGRAMS)
    assert all(file and Path(file).is_relative_to(installed) for file in listed["files"]), listed["files"]
