"""Configure DSPy for a run: the LM from settings and the compact JSON adapter (schema-constrained output)."""

from __future__ import annotations

from typing import Any

from disambig.settings import Settings


def build_lm(settings: Settings, spec: str | None = None, **kwargs: Any) -> Any:
    """The ``dspy.LM`` named by ``spec`` (default: the settings' LM), with the settings' threads and context."""
    from disambig.lm import make_lm

    return make_lm(spec or settings.lm, threads=settings.threads, ctx=settings.ctx, cache_dir=settings.cache_dir,
                   **kwargs)


def default_adapter() -> Any:
    """The project's adapter: compact prompts, JSON output decoded under the signature's schema."""
    from disambig.lm.adapter import CompactJSONAdapter

    return CompactJSONAdapter()


def configure_dspy(lm: Any) -> None:
    """Make ``lm`` the run's LM with the project's adapter."""
    import dspy

    dspy.configure(lm=lm, adapter=default_adapter())
