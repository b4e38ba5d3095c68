"""Which LM a served program answers with: the one the user names, else the one it was compiled with when this
machine can run it, else the default.

``disambig serve`` fetches the model folder (the compiled state and its manifest), chooses the LM here, hands it to
the server process as ``DISAMBIG_LM`` and says which it is on its startup line; the server's ``/ping`` says it again
(``serving.ping``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from disambig.errors import ConfigurationError

LM_ENV = "DISAMBIG_LM"


@dataclass(frozen=True)
class ServedLM:
    """The LM spec a server answers with, and why: ``--lm``, ``DISAMBIG_LM``, ``manifest`` or ``default``."""

    spec: str
    source: str
    note: str = ""

    def describe(self) -> str:
        """``openai/x (--lm)``, ``local:smollm2 (the LM it was compiled with)``, ``local (the default; ...)``."""
        why = {"--lm": "--lm", LM_ENV: LM_ENV, "manifest": "the LM it was compiled with"}.get(self.source,
                                                                                          "the default")
        return f"{self.spec} ({why}{'; ' + self.note if self.note else ''})"


def served_lm(model_folder: str | Path, flag: str | None, env: str | None, default: str) -> ServedLM:
    """The LM a server of the model in ``model_folder`` answers with: ``flag``, else ``env``, else the LM its manifest
    records when it is available here (``why_unavailable``), else ``default``.

    Args:
        model_folder: the fetched MLflow model (its artifacts hold the compiled state and ``manifest.json``).
        flag: ``--lm`` as given (None when absent).
        env: ``DISAMBIG_LM`` as set (None or "" when not).
        default: the LM when none is given and the manifest's cannot be used (``disambig.settings.Settings.lm``).
    """
    if flag:
        return ServedLM(flag, "--lm")
    if env:
        return ServedLM(env, LM_ENV)
    recorded = manifest_lm(Path(model_folder))
    if not recorded:
        return ServedLM(default, "default", "the model records no LM")
    problem = why_unavailable(recorded)
    if problem:
        return ServedLM(default, "default", f"it was compiled with {recorded}, {problem}")
    return ServedLM(recorded, "manifest")


def manifest_lm(model_folder: Path) -> str:
    """The ``lm`` the manifest entry of the folder's one compiled state records ("" when there is none)."""
    from disambig.optimizers.artifact import read_manifest

    states = [p for p in model_folder.rglob("*.json") if p.name != "manifest.json"
              and (p.parent / "manifest.json").is_file()] if model_folder.is_dir() else []
    if len(states) != 1:
        return ""
    try:
        recorded = read_manifest(states[0]).get("lm")
    except ConfigurationError:
        return ""
    return recorded if isinstance(recorded, str) else ""


def why_unavailable(spec: str) -> str:
    """Why ``spec`` cannot answer here ("" when it can): an embedded model or GGUF path must resolve on this machine;
    a remote LiteLLM string is used as it is."""
    from disambig.lm import parse_spec

    try:
        parse_spec(spec)
    except ConfigurationError as exc:
        return f"which is not available here ({exc})"
    return ""
