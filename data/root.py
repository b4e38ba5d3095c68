"""The data root: where named benchmark datasets and corpora are found.

Benchmark data is third-party and never part of the repository. A named dataset (``asqa``), corpus
(``wiki-slice``) or database set (``spider``) resolves under the first data root that holds it:

1. ``--data-dir`` / ``DISAMBIG_DATA_DIR``, when set (then it is the only place looked in);
2. ``../shared/data`` beside the checkout, when it exists (developers and CI have it);
3. ``data`` in the project cache (``DISAMBIG_CACHE_DIR``, default ``~/.cache/disambig``), where
   ``disambig data fetch`` writes by default.

A path given explicitly (a JSONL file, a BEIR folder) is used as it is. The layout under a root is the
one ``../shared/data/README.md`` documents and ``disambig data fetch`` writes.
"""

from __future__ import annotations

import os
from pathlib import Path

from disambig.errors import ConfigurationError
from disambig.paths import expanded

ENV_VAR = "DISAMBIG_DATA_DIR"
CHECKOUT = Path(__file__).resolve().parents[1]
SHARED_DATA = CHECKOUT.parent / "shared" / "data"

QUESTION_SETS = {"asqa": "asqa/dev.jsonl", "ambignq": "ambignq/dev.jsonl"}
CORPORA = {"wiki-slice": "corpus/wiki-slice.jsonl", "dbpedia-entity-5k": "beir/dbpedia-entity-5k"}
DATABASES = {"spider": "spider"}
NAMED = {**QUESTION_SETS, **CORPORA, **DATABASES}


class DataNotFoundError(ConfigurationError):
    """A named dataset is under none of the data roots; the message names the places and both remedies."""


def data_roots() -> list[tuple[Path, str]]:
    """The roots looked in, in order, each with the reason it is looked in."""
    explicit = os.environ.get(ENV_VAR, "").strip()
    if explicit:
        return [(expanded(explicit), f"{ENV_VAR}/--data-dir")]
    return [(SHARED_DATA, "../shared/data beside the checkout"), (cache_root(), "the project cache")]


def cache_root() -> Path:
    """``data`` in the project cache: the root looked in last, where ``disambig data fetch`` writes by default."""
    from disambig.settings import load_settings

    return Path(load_settings().cache_dir) / "data"


def find_named(name: str) -> Path:
    """The file or folder of the named dataset ``name`` (a key of ``NAMED``) under the first root holding it.

    Raises:
        DataNotFoundError: no root holds it; the message lists the paths tried and how to get the data.
    """
    if name not in NAMED:
        raise ConfigurationError(f"unknown dataset name {name!r}; named datasets are {', '.join(NAMED)}")
    tried = []
    for root, why in data_roots():
        path = root / NAMED[name]
        if path.exists():
            return path
        tried.append(f"{path} ({why})")
    raise DataNotFoundError(
        f"dataset {name!r} not found; looked in {'; '.join(tried)}. Point --data-dir (or {ENV_VAR}) at a folder "
        f"that holds {NAMED[name]}, or download it with `disambig data fetch --only {name}`"
    )


def resolve(name_or_path: str, names: dict[str, str], what: str, or_else: str) -> Path:
    """A name of ``names`` found under the data root, else an existing path as given.

    ``what`` names the kind of thing (``"corpus"``) and ``or_else`` what else is accepted, for the error.

    Raises:
        DataNotFoundError: a known name that no root holds.
        ConfigurationError: an empty name, a path (``looks_like_path``) that does not exist, or neither a known name
            nor an existing path.
    """
    if name_or_path in names:
        return find_named(name_or_path)
    if not name_or_path.strip():  # Path("") is the working folder
        raise ConfigurationError(f"the {what} is an empty name; use {', '.join(names)}, {or_else}")
    path = expanded(name_or_path)
    if path.exists():
        return path
    if looks_like_path(name_or_path):
        raise ConfigurationError(f"no such file: {name_or_path}; the {what} is {', '.join(names)}, {or_else}")
    raise ConfigurationError(f"unknown {what} {name_or_path!r}; use {', '.join(names)}, {or_else}")


def looks_like_path(value: str) -> bool:
    """Whether ``value`` was meant as a path rather than a name: it has a folder separator or a JSON(L) suffix."""
    return "/" in value or os.sep in value or value.endswith((".jsonl", ".json"))
