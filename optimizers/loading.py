"""``disambig.load``: a compiled artifact (path or MLflow model URI) back to a ready program (with its retriever)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError

MODEL_URI_SCHEMES = ("models:/", "runs:/")


def load(source: str | Path, retriever: Any = None, settings: Any = None, corpus: str | None = None,
         kind: str | None = None) -> Any:
    """Build the artifact's program, attach its retriever, and load the compiled JSON state.

    Args:
        source: a state file ``artifacts/PROGRAM/DATASET/NAME.json`` or an MLflow model URI
            (``models:/NAME/VERSION``, ``runs:/RUN_ID/program``) logged by ``disambig compile``.
        retriever: use this retriever instead of building the one named in the manifest.
        settings: run settings (cache directory for indexes); defaults to ``load_settings()``.
        corpus: search this corpus instead of the one the manifest names (with the manifest's retriever kind).
        kind: build this retriever kind (``bm25``, ``dense``, ``hybrid``) instead of the manifest's.

    Returns:
        The program, ready to call once an LM is configured.
    """
    from disambig.optimizers.artifact import load_state_into, read_manifest
    from disambig.optimizers.recipes import for_loading
    from disambig.programs import PROGRAMS, build_program

    state_path = resolve_state_path(str(source))
    manifest = read_manifest(state_path)
    name = manifest.get("program")
    if name not in PROGRAMS:
        raise ConfigurationError(f"artifact {str(state_path)!r} is for unknown program {name!r}")
    if retriever is None and (manifest.get("retriever") or kind):
        retriever = _build_retriever(searched(manifest.get("retriever") or "", kind, corpus), settings)
    program = build_program(name, retriever=retriever, **manifest.get("knobs", {}))
    return load_state_into(for_loading(manifest.get("optimizer", ""), program), state_path, manifest)


def resolve_state_path(source: str) -> Path:
    """A local state path as is; an MLflow model URI downloaded, then its state file found."""
    if not source.startswith(MODEL_URI_SCHEMES):
        return Path(source)
    import mlflow

    local = Path(mlflow.artifacts.download_artifacts(artifact_uri=source))
    states = [p for p in local.rglob("*.json") if p.name != "manifest.json" and (p.parent / "manifest.json").exists()]
    if len(states) != 1:
        raise ConfigurationError(f"{source!r} holds {len(states)} compiled states; expected exactly one")
    return states[0]


def searched(spec: str, kind: str | None, corpus: str | None) -> str:
    """The retriever spec ``KIND:CORPUS`` to build: the manifest's ``spec`` with ``kind`` and ``corpus`` in place of
    its own where given (a manifest naming no retriever: ``kind`` over ``corpus``, else wiki-slice)."""
    own_kind, _, own_corpus = spec.partition(":")
    return f"{kind or own_kind}:{corpus or own_corpus}"


def _build_retriever(spec: str, settings: Any) -> Any:
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    kind, _, corpus = spec.partition(":")
    return build_retriever(kind, corpus=corpus or "wiki-slice", settings=settings or load_settings())
