"""Configure DSPy for a run: the LM from settings and the compact JSON adapter (schema-constrained output)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from disambig.paths import expanded
from disambig.settings import Settings

RESPONSE_CACHE_SUBDIR = "dspy"
logger = logging.getLogger(__name__)


def build_lm(settings: Settings, spec: str | None = None, **kwargs: Any) -> Any:
    """The ``dspy.LM`` named by ``spec`` (default: the settings' LM), with the settings' threads, context,
    decoding preset, repetition guard and penalty (embedded models only), request timeout and retries (remote
    models only) and response cache (``settings.lm_cache``
    turns DSPy's cache on, in the project cache directory). An embedded model warns once when it decodes far below
    its expected speed (``disambig.lm.speed``).

    A remote spec goes to ``settings.api_base`` when one is set, after one ``GET /models`` that checks the endpoint
    answers, accepts the key and serves the model (``disambig.lm.endpoint``; a ``ConfigurationError`` otherwise).
    """
    from disambig.lm import make_lm, parse_spec
    from disambig.lm.decoding import decoding_kwargs
    from disambig.lm.speed import watch_decode_speed

    spec = spec or settings.lm
    local = parse_spec(spec).is_local
    remote: dict[str, Any] = {} if local else {"timeout": settings.lm_timeout, "num_retries": settings.lm_retries}
    if settings.api_base:
        if local:
            logger.warning("the API base %s is not used: LM %r runs in-process", settings.api_base, spec)
        else:
            from disambig.lm.endpoint import remote_kwargs

            remote |= remote_kwargs(spec, settings.api_base)
    if settings.lm_cache:
        use_response_cache(settings.cache_dir)
    lm = make_lm(spec, threads=settings.threads, ctx=settings.ctx, cache_dir=settings.cache_dir,
                 cache=settings.lm_cache, prompt_cache_mb=settings.prompt_cache_mb,
                 repetition_guard=settings.repetition_guard, repeat_penalty=settings.repeat_penalty,
                 prompt_lookup=settings.prompt_lookup, batch_calls=local and settings.parallel_calls > 1,
                 **{**remote, **decoding_kwargs(settings.decoding), **kwargs})
    return watch_decode_speed(lm)  # an embedded model warns once when it decodes far below its expected speed


def use_response_cache(cache_dir: str | Path) -> Path:
    """Point DSPy's response cache (memory + disk) at ``cache_dir/dspy``; return that folder.

    Entries are keyed by the whole request (model name, messages, generation settings), so a call repeated with
    the same program state, LM and inputs is answered from disk. Only plain data is read back (no pickle).
    """
    import dspy

    folder = expanded(cache_dir) / RESPONSE_CACHE_SUBDIR
    current = vars(dspy).get("cache")  # not ``dspy.cache``: reading it would build DSPy's default cache
    if getattr(getattr(current, "disk_cache", None), "directory", None) != str(folder):
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(folder),
                             restrict_pickle=True)
    return folder


def default_adapter() -> Any:
    """The project's adapter: compact prompts, JSON output decoded under the signature's schema."""
    from disambig.lm.adapter import CompactJSONAdapter

    return CompactJSONAdapter()


def configure_dspy(lm: Any) -> None:
    """Make ``lm`` the run's LM with the project's adapter."""
    import dspy

    dspy.configure(lm=lm, adapter=default_adapter())


def check_remote_lm(settings: Settings, spec: str | None = None) -> None:
    """Check, with one ``GET /models``, that the endpoint of a remote LM (``spec``, default the settings' LM) answers,
    accepts the key and serves the model, before a command starts work it would do elsewhere (a server, Spark
    executors). Nothing happens without ``settings.api_base`` or for a local spec.

    Raises:
        ConfigurationError: see ``disambig.lm.endpoint.check_endpoint``.
    """
    from disambig.lm import parse_spec

    spec = spec or settings.lm
    if settings.api_base and not parse_spec(spec).is_local:
        from disambig.lm.endpoint import remote_kwargs

        remote_kwargs(spec, settings.api_base)
