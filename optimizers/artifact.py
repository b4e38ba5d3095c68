"""Compiled programs on disk: DSPy JSON state + ``manifest.json``; loading checks structure and trust."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from disambig.data.atomic import write_json
from disambig.errors import ConfigurationError
from disambig.optimizers.fingerprint import fingerprint, structure

MANIFEST = "manifest.json"
UNSAFE_LM_KEYS = ("api_base", "base_url", "model_list", "class")
ENTRY_TYPES: dict[str, type] = {"program": str, "optimizer": str, "retriever": str, "knobs": dict, "fingerprint": str}
"""The manifest fields a load reads, and the type ``compile`` writes each as."""
STATE_RECORD = ("program", "dataset", "metric", "optimizer", "outcome", "scores")
"""The manifest fields the state file's ``metadata.compile`` repeats, so the state alone says what its compile did."""


def save_artifact(program: Any, path: Path, manifest: dict[str, Any]) -> Path:
    """Write ``path`` (``NAME.json`` state, whose ``metadata.compile`` repeats the manifest's ``STATE_RECORD``) and its
    entry in ``manifest.json`` beside it; return the state path.

    ``manifest.json`` maps each state file's stem to its manifest, so several compiled versions of one
    program and dataset can live in one folder; each entry has an ``mlflow_run_id`` (None until ``record_run``).
    """
    if path.suffix != ".json" or path.name == MANIFEST:
        raise ValueError(f"artifact path {str(path)!r} must end with .json and not be {MANIFEST!r}")
    manifest_path = path.parent / MANIFEST
    entries = stored_entries(manifest_path)  # a broken manifest is refused before anything is written
    state = trimmed_state(program)
    if isinstance(state.get("metadata"), dict):  # DSPy's own metadata; the state file also says what the compile did
        state["metadata"]["compile"] = {k: manifest[k] for k in STATE_RECORD if k in manifest}
    write_json(path, state)
    entries[path.stem] = {"mlflow_run_id": None, **manifest, "state_file": path.name,
                          "fingerprint": fingerprint(program), "structure": structure(program)}
    write_json(manifest_path, entries, default=str)
    return path


def record_run(state_path: Path, fields: dict[str, Any]) -> None:
    """Add ``fields`` (the MLflow run that logged the compile: ``mlflow_run_id``, ``mlflow_model``) to the manifest
    entry of ``state_path``."""
    manifest_path = state_path.parent / MANIFEST
    entries = stored_entries(manifest_path)
    entries[state_path.stem] = {**entries.get(state_path.stem, {}), **fields}
    write_json(manifest_path, entries, default=str)


def stored_entries(manifest_path: Path) -> dict[str, Any]:
    """The entries of an existing ``manifest.json`` ({} when there is none yet)."""
    if not manifest_path.is_file():
        return {}
    entries = read_json(manifest_path, "artifact manifest", "delete it to start a new one")
    if not isinstance(entries, dict):
        raise ConfigurationError(f"artifact manifest {str(manifest_path)!r} is not a JSON object; delete it to start "
                                 "a new one")
    return entries


def trimmed_state(program: Any) -> dict[str, Any]:
    """The program's saved state (DSPy's ``save``, written to a scratch folder and read back) with each
    demo keeping only its predictor's signature fields (and DSPy's ``augmented`` flag).

    Labeled demos are whole training rows (annotator evidence, answer sets, ids); the adapter formats only the
    signature's fields, so the rest would only swell the artifact with dataset rows. The program is not touched.
    """
    with tempfile.TemporaryDirectory(prefix="disambig-state-") as scratch:
        program.save(str(Path(scratch) / "state.json"))
        state = json.loads((Path(scratch) / "state.json").read_text(encoding="utf-8"))
    fields = {name: set(p.signature.fields) | {"augmented"} for name, p in program.named_predictors()}
    for name, keep in fields.items():
        entry = state.get(name)
        if isinstance(entry, dict) and isinstance(entry.get("demos"), list):
            entry["demos"] = [{k: v for k, v in d.items() if k in keep} if isinstance(d, dict) else d
                              for d in entry["demos"]]
    return state


def read_manifest(state_path: Path) -> dict[str, Any]:
    """The manifest entry of one state file."""
    manifest_path = state_path.parent / MANIFEST
    if not state_path.is_file():
        raise ConfigurationError(f"artifact {str(state_path)!r} does not exist")
    if not manifest_path.is_file():
        raise ConfigurationError(f"no {MANIFEST} beside {str(state_path)!r}; an artifact is a state JSON + manifest")
    entries = read_json(manifest_path, "artifact manifest", "restore it from version control or recompile the artifact")
    if not isinstance(entries, dict):
        raise ConfigurationError(f"artifact manifest {str(manifest_path)!r} is not a JSON object; restore it from "
                                 "version control or recompile the artifact")
    if state_path.stem not in entries:
        raise ConfigurationError(f"{str(manifest_path)!r} has no entry for {state_path.name!r}")
    return checked_entry(entries[state_path.stem], manifest_path, state_path.stem)


def checked_entry(entry: Any, manifest_path: Path, name: str) -> dict[str, Any]:
    """A manifest entry whose fields a load reads have the types compile writes (``ENTRY_TYPES``)."""
    fix = "restore it from version control or recompile the artifact"
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{str(manifest_path)!r} entry {name!r} is {type(entry).__name__}, not a JSON "
                                 f"object; {fix}")
    wrong = [f"{key} is {type(entry[key]).__name__}, not {kind.__name__}" for key, kind in ENTRY_TYPES.items()
             if key in entry and not isinstance(entry[key], kind)]
    if wrong:
        raise ConfigurationError(f"{str(manifest_path)!r} entry {name!r}: {'; '.join(wrong)}; {fix}")
    return entry


def load_state_into(program: Any, state_path: Path, manifest: dict[str, Any]) -> Any:
    """Load JSON state into ``program`` after checking its fingerprint and that no LM endpoint rides along."""
    expected, actual = manifest.get("fingerprint"), fingerprint(program)
    if expected != actual:
        raise ConfigurationError(
            f"artifact {str(state_path)!r} was compiled for structure {expected} but program "
            f"{manifest.get('program')!r} now has {actual} (predictors or fields changed); recompile it"
        )
    recompile = (f"`disambig compile {manifest.get('program')} --dataset {manifest.get('dataset')} "
                 f"--metric {manifest.get('metric')} --optimizer {manifest.get('optimizer')}`")
    state = read_json(state_path, "compiled state", f"restore it from version control or recompile it with {recompile}")
    if not isinstance(state, dict):
        raise ConfigurationError(f"compiled state {str(state_path)!r} is not a JSON object of predictors; restore it "
                                 f"from version control or recompile it with {recompile}")
    refuse_untrusted_lm_state(state, state_path)
    try:
        program.load(str(state_path))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:  # a state of another shape
        raise ConfigurationError(f"compiled state {str(state_path)!r} does not fit program {manifest.get('program')!r} "
                                 f"({type(exc).__name__}: {exc}); restore it from version control or recompile it "
                                 f"with {recompile}") from None
    return program


def read_json(path: Path, what: str, fix: str) -> Any:
    """Parse a JSON file; a corrupted one is a ``ConfigurationError`` naming the file, the place and ``fix``."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{what} {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno} "
                                 f"column {exc.colno}); {fix}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{what} {str(path)!r} is not UTF-8 text; {fix}") from None


def refuse_untrusted_lm_state(state: dict[str, Any], state_path: Path) -> None:
    """A saved predictor must carry no LM: the LM is chosen at run time, never by a file."""
    for name, value in state.items():
        lm = value.get("lm") if isinstance(value, dict) else None
        if lm:
            unsafe = [k for k in UNSAFE_LM_KEYS if k in lm]
            raise ConfigurationError(
                f"artifact {str(state_path)!r} predictor {name!r} carries an LM"
                f"{' with ' + ', '.join(unsafe) if unsafe else ''}; artifacts must not choose the LM, refusing to load"
            )
