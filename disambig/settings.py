"""Run-time settings in one place: CLI flags override ``DISAMBIG_*`` variables, which override defaults."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

ENV_PREFIX = "DISAMBIG_"
PassageFraming = Literal["screened", "quoted", "plain"]
PASSAGE_FRAMINGS: tuple[PassageFraming, ...] = get_args(PassageFraming)
"""How retrieved passages are shown to the LM (``disambig.programs.context``); the first is the default."""
MAX_PROMPT_LOOKUP = 16
"""The most reply tokens drafted a step (``disambig.lm.prompt_lookup.MAX_DRAFT_TOKENS``)."""
MAX_CTX = 1 << 20
"""The largest context window accepted (1,048,576 tokens): beyond any trained context of a model run here, and far
inside llama.cpp's 32-bit count."""


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "disambig")


@dataclass(frozen=True)
class Settings:
    """Everything a run needs to know that is not a program argument.

    Attributes:
        lm: LM spec for programs (`local`, `local:/path/model.gguf`, or a LiteLLM model string).
        judge_lm: LM spec for LLM-judge metrics; empty means "same as ``lm``".
        cache_dir: where indexes and other derived files live.
        threads: CPU threads for the embedded LM and for parallel evaluation. When neither ``--threads`` nor
            ``DISAMBIG_THREADS`` sets it, ``load_settings`` takes the cores free now (``disambig.lm.threads``): on a
            busy machine a thread more than the free cores stalls the embedded LM.
        ctx: context window of the embedded LM, in tokens.
        lm_cache: keep DSPy's LM response cache (in ``cache_dir/dspy``) and the retrievers' rankings (in
            ``cache_dir/retrieval``) so a repeated call costs no LM or index time;
            off by default so measured times are real.
        verifier_lm: LM spec of the programs' side steps (DIVA's rewriting and verification, ADF's sub-questions
            and hypothetical passages, VerDICt's execution feedback); empty means "same as ``lm``".
        decoding: decoding preset of every LM: ``greedy`` or ``paper`` (DIVA's temperature 0.3, 300 tokens).
        prompt_cache_mb: RAM for KV states of the embedded LM's earlier calls, so a prompt sharing a prefix with
            any of them (the same instruction and demos) is not prefilled again; 0 reuses only the previous call's.
        repetition_guard: stop an embedded-LM reply once a run of N words occurs R times in the text being written,
            and cut it to its last whole sentence before the loop: ``NxR`` (default ``6x3``) or ``off``.
        repeat_penalty: llama.cpp's repetition penalty of the embedded LM (1.0: off).
        prompt_lookup: reply tokens the embedded LM drafts a step from its prompt and checks in one batch
            (``disambig.lm.prompt_lookup``; 0: off, at most 16). Copied text decodes faster; greedy replies stay the
            same up to rounding (a batch of tokens is computed in another order than one token).
        api_base: the OpenAI-compatible endpoint (``http://HOST:PORT/v1``) that LiteLLM-style LM specs
            (``openai/MODEL``) are sent to; empty means the provider's own. Its key is read from the environment
            (``disambig.lm.endpoint``), never held here.
        parallel_calls: independent LM calls inside a program (VerDICt's feedback calls, DIVA's verifications...) run
            at once; 0 decides from the LM: 1 for the in-process engine, 8 for a remote LM (``disambig.lm.parallel``).
            Above 1 on the in-process engine, up to 8 such calls are decoded together, one forward pass a step for
            all (``disambig.lm.batch_decode``).
        lm_timeout: seconds a remote LM request may take before it fails (and is retried).
        lm_retries: times a remote LM request that timed out, was refused (connection, HTTP 429) or failed on the
            server (HTTP 5xx) is sent again, after 1, 2, 4... s (or the server's ``Retry-After``).
        passage_framing: how retrieved passages are shown to the LM: ``screened`` (default: quoted as untrusted
            text, instruction-like passages withheld), ``quoted`` or ``plain`` (``disambig.programs.context``).
    """

    lm: str = "local"
    judge_lm: str = ""
    cache_dir: str = ""
    threads: int = 2
    ctx: int = 8192
    lm_cache: bool = False
    verifier_lm: str = ""
    decoding: str = "greedy"
    prompt_cache_mb: int = 512
    repetition_guard: str = "6x3"
    repeat_penalty: float = 1.0
    prompt_lookup: int = 0
    api_base: str = ""
    parallel_calls: int = 0
    lm_timeout: float = 600.0
    lm_retries: int = 3
    passage_framing: str = PASSAGE_FRAMINGS[0]

    def with_overrides(self, **overrides: object) -> Settings:
        """Return a copy with every override that is not None applied."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def load_settings(**overrides: object) -> Settings:
    """Resolve settings: explicit overrides (CLI flags) > ``DISAMBIG_*`` env vars > defaults."""
    values: dict[str, object] = {}
    for f in fields(Settings):
        raw = os.environ.get(ENV_PREFIX + f.name.upper())
        if raw is None or raw == "":
            continue
        values[f.name] = _coerce(f.name, raw, f.type)
    settings = Settings(**values).with_overrides(**overrides)
    if "threads" not in values and overrides.get("threads") is None:
        from disambig.lm.threads import free_threads

        settings = replace(settings, threads=free_threads())
    if not settings.cache_dir:
        settings = replace(settings, cache_dir=_default_cache_dir())
    if settings.threads < 1:
        raise ValueError(f"threads={settings.threads} must be at least 1")
    from disambig.lm.repetition import LoopRule

    LoopRule.parse(settings.repetition_guard)  # a malformed guard fails here, in one line, not at the first LM call
    if settings.parallel_calls < 0:
        raise ValueError(f"parallel_calls={settings.parallel_calls} must be at least 1, or 0 to decide from the LM")
    if settings.lm_timeout <= 0 or settings.lm_retries < 0:
        raise ValueError(f"lm_timeout={settings.lm_timeout} must be positive and lm_retries={settings.lm_retries} at "
                         "least 0")
    if not 0 < settings.repeat_penalty < math.inf:  # also refuses nan
        raise ValueError(f"repeat_penalty={settings.repeat_penalty} must be positive and finite; 1.0 turns it off")
    if not 0 <= settings.prompt_lookup <= MAX_PROMPT_LOOKUP:
        raise ValueError(f"prompt_lookup={settings.prompt_lookup} must be within 0-{MAX_PROMPT_LOOKUP} draft tokens "
                         "(0 turns it off)")
    if not 1 <= settings.ctx <= MAX_CTX:
        raise ValueError(f"ctx={settings.ctx} must be within 1-{MAX_CTX:,} tokens (default 8192)")
    if settings.passage_framing not in PASSAGE_FRAMINGS:
        raise ValueError(f"passage framing {settings.passage_framing!r} (--passage-framing, "
                         f"{ENV_PREFIX}PASSAGE_FRAMING) is unknown; choose one of {', '.join(PASSAGE_FRAMINGS)}")
    return settings


def generation_overrides(settings: Settings) -> dict[str, Any]:
    """The settings' repetition guard, penalty, prompt lookup and passage framing where they differ from the
    defaults, for a run's params (a run at the defaults records ``{}``, as before these settings existed, so its
    folder still resumes)."""
    default = Settings()
    names = ["repetition_guard", "repeat_penalty", "passage_framing"]
    if settings.lm == "local" or settings.lm.startswith("local:"):  # drafting happens in the embedded engine only
        names.insert(2, "prompt_lookup")
    return {name: getattr(settings, name) for name in names if getattr(settings, name) != getattr(default, name)}


def _coerce(name: str, raw: str, annotation: object) -> object:
    if annotation in (bool, "bool"):
        if raw.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a boolean; use 1 or 0")
        return raw.lower() in ("1", "true", "yes", "on")
    if annotation in (int, "int"):
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not an integer") from None
    if annotation in (float, "float"):
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a number") from None
    return raw
