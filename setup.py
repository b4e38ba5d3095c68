"""The wheel's package list, found rather than written out: every folder with an ``__init__.py`` under a folder that
``[tool.setuptools.package-dir]`` maps into ``disambig`` (``programs/route/`` -> ``disambig.programs.route``).

``pyproject.toml`` keeps the mapping and everything else; its ``packages.find`` names what it finds after the folder
(``programs.route``) and has no way to put it under ``disambig.programs``, hence this file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages, setup


def mapped_packages(pyproject: Path) -> list[str]:
    """Each mapped package and the packages found under its folder, named under the mapped name."""
    mapping = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    root = pyproject.parent
    found = {f"{name}.{sub}" for name, folder in mapping.items() for sub in find_packages(str(root / folder))}
    return sorted(set(mapping) | found)


setup(packages=mapped_packages(Path(__file__).resolve().parent / "pyproject.toml"))
