"""An in-process GGUF model (llama-cpp-python) as a DSPy 3.4 engine.

The engine turns a canonical ``dspy.lm15.Request`` into one chat completion under the model's own chat
template. A JSON schema in ``response_format`` becomes grammar-constrained decoding, so even a 135M model
returns parseable fields. One lock serialises calls: a llama context is not thread-safe, and
``dspy.Evaluate`` calls from several threads.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dspy.utils.exceptions import ContextWindowExceededError

from disambig.errors import ConfigurationError, MissingDependencyError, PromptTooLongError
from disambig.lm.chunks import verify_or_discard
from disambig.lm.guard import RepetitionGuard, stopping_on
from disambig.lm.repetition import DEFAULT_GUARD, LoopRule
from disambig.lm.reply_cut import cut_loop, cut_to_sentence, is_json_reply
from disambig.lm.schema import bounded_schema
from disambig.lm.usage import record_cut

logger = logging.getLogger(__name__)

SUPPORTED_PARAMS = frozenset({"temperature", "max_tokens", "stop", "seed", "top_p", "response_format", "logprobs",
                              "top_logprobs"})
DEFAULT_PROMPT_CACHE_MB = 512  # KV states of earlier calls kept for prefix reuse (~20 DIVA prompts of Qwen2.5-0.5B)
TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


class ContextWindowError(PromptTooLongError, ContextWindowExceededError):
    """The project's ``PromptTooLongError`` that is also DSPy's ``ContextWindowExceededError``, so DSPy passes it
    through unchanged (modules that shorten their history on it still can) and the CLI prints its one line."""

    def __init__(self, message: str) -> None:
        ContextWindowExceededError.__init__(self, message=message)


@dataclass(frozen=True)
class ModelFile:
    """The GGUF an engine loaded; ``sha256`` is set only when a pinned hash was verified."""

    name: str
    size_bytes: int
    sha256: str | None


class LlamaEngine:
    """DSPy engine over a GGUF file; the model loads on first use.

    Args:
        model_path: path of the GGUF file.
        threads: CPU threads for prefill and decode.
        ctx: context window in tokens.
        sha256: the file's pinned SHA-256; checked before the model loads (a file that fails is deleted).
        prompt_cache_mb: also keep KV states of earlier calls in RAM up to this size, so a call resumes from
            whichever earlier call shares its longest prefix (``disambig.lm.prompt_cache``); 0 keeps only
            llama.cpp's reuse of the prefix shared with the previous call.
        repetition_guard: stop a reply once a run of N words occurs R times in the text being written (``NxR``;
            ``off``) and cut that text to its last whole sentence before the loop (``disambig.lm.guard``).
        repeat_penalty: llama.cpp's repetition penalty (1.0: off).
        prompt_lookup: draft up to this many reply tokens a step from the prompt (``disambig.lm.prompt_lookup``;
            0: off). Calls that record log-probabilities are decoded without drafts.
        batch_calls: decode independent calls made at once (``disambig.lm.parallel.ordered_map`` on several
            threads) together, one forward pass a step for all (``disambig.lm.batch_decode``); off, they queue.
        lazy_grammar: under greedy decoding, ask the response grammar about the best token only, and about every
            token only when it refuses that one (``disambig.lm.lazy_grammar``; the same replies, faster).
        repair_quotes: where the engine picks tokens under a grammar itself (the lazy grammar, batched calls), write
            a double quote the model means as text inside a JSON string escaped, instead of letting it end the
            string and cut the answer (``disambig.lm.json_quotes``).

    A JSON reply cut by the token cap keeps its open text up to its last whole sentence and is closed; each reply
    cut (by the guard or the cap) is counted in the enclosing ``disambig.lm.usage.measured`` block. Every call
    reports, as ``Usage.cache_read_tokens``, the prompt tokens whose KV state was reused instead of prefilled (from
    llama.cpp's own counters; within one token).
    """

    supports_response_schema = True
    supported_params = SUPPORTED_PARAMS

    def __init__(self, model_path: str, threads: int = 2, ctx: int = 8192, sha256: str | None = None,
                 prompt_cache_mb: int = DEFAULT_PROMPT_CACHE_MB, repetition_guard: str = DEFAULT_GUARD,
                 repeat_penalty: float = 1.0, prompt_lookup: int = 0, lazy_grammar: bool = True,
                 batch_calls: bool = False, repair_quotes: bool = True) -> None:
        self.model_path = model_path
        self.threads = threads
        self.ctx = ctx
        self.sha256 = sha256
        self.prompt_cache_mb = prompt_cache_mb
        self.repetition_guard = repetition_guard
        self.repeat_penalty = repeat_penalty
        self.prompt_lookup = prompt_lookup
        self.lazy_grammar = lazy_grammar
        self.batch_calls = batch_calls
        self.repair_quotes = repair_quotes
        self.verified_sha256_: str | None = None
        self._llama: Any = None
        self.lookup_: Any = None  # the PromptLookup of the loaded model, when prompt_lookup is on
        self.grammar_: Any = None  # the LazyGrammar of the loaded model, when lazy_grammar is on
        self.batcher_: Any = None  # the CallBatcher of the loaded model, when batch_calls is on
        self._lock = threading.Lock()

    def dump_state(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "threads": self.threads, "ctx": self.ctx, "sha256": self.sha256,
                "prompt_cache_mb": self.prompt_cache_mb, "repetition_guard": self.repetition_guard,
                "repeat_penalty": self.repeat_penalty, "prompt_lookup": self.prompt_lookup,
                "lazy_grammar": self.lazy_grammar, "batch_calls": self.batch_calls,
                "repair_quotes": self.repair_quotes}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaEngine:
        return cls(**state)

    @property
    def llama(self) -> Any:
        """The loaded ``llama_cpp.Llama`` (loaded once, on first access)."""
        if self._llama is None:
            if self.sha256 is not None:
                self.verified_sha256_ = verify_or_discard(self.model_path, self.sha256, Path(self.model_path).name)
            self._llama = _load_llama(self.model_path, self.threads, self.ctx)
            if self.prompt_cache_mb > 0:
                from disambig.lm.prompt_cache import enable_prompt_cache

                enable_prompt_cache(self._llama, self.prompt_cache_mb)
            if self.prompt_lookup > 0:
                from disambig.lm.prompt_lookup import PromptLookup

                self.lookup_ = PromptLookup(self._llama, self.prompt_lookup)
            if self.lazy_grammar and hasattr(self._llama, "sample"):  # not a stand-in answering chats itself
                from disambig.lm.lazy_grammar import LazyGrammar

                self.grammar_ = LazyGrammar(self._llama, self.repair_quotes)
            if self.batch_calls and hasattr(self._llama, "create_completion"):
                from disambig.lm.batch_decode import BatchDecoder
                from disambig.lm.call_batcher import CallBatcher

                decoder = BatchDecoder(self._llama, self.ctx, self.threads, self.repair_quotes)
                self.batcher_ = CallBatcher(decoder, self._lock)
                self.batcher_.hook(self._llama)
        return self._llama

    def model_file(self) -> ModelFile:
        """The GGUF this engine loads: name, size, and the hash verified at load (None if none is pinned)."""
        path = Path(self.model_path)
        return ModelFile(name=path.name, size_bytes=path.stat().st_size, sha256=self.verified_sha256_)

    def complete(self, request: Any) -> Any:
        from dspy.clients.engines.base import validate_request

        validate_request(request)
        kwargs = completion_kwargs(request.config)
        if self.repeat_penalty != 1.0:
            kwargs["repeat_penalty"] = self.repeat_penalty
        rule = LoopRule.parse(self.repetition_guard)
        messages = chat_messages(request)
        if self.batch_calls and request.config.logprobs is None and kwargs.get("temperature") == 0.0 \
                and "repeat_penalty" not in kwargs:
            from disambig.lm.call_batcher import IN_GROUP

            if IN_GROUP.get():
                return self._complete_in_group(request, kwargs, rule, messages)
        with self._lock:
            llama = self.llama
            guard = None if rule is None else RepetitionGuard(llama, rule)
            recorder = None
            if request.config.logprobs is not None:  # read under the response grammar (lm/token_logprobs.py)
                from disambig.lm.token_logprobs import LogprobRecorder

                recorder = LogprobRecorder(llama, request.config.logprobs, kwargs["response_format"].get("schema")
                                           if "response_format" in kwargs else None)
                kwargs["logits_processor"] = recorder.processors()
            reset_counters(llama)
            lookup = self.lookup_ if recorder is None else None
            with nullcontext() if lookup is None else lookup.active(), \
                    nullcontext() if self.grammar_ is None else self.grammar_.active():
                raw = self._chat(llama, messages, kwargs, guard)
            prefilled = read_counters(llama).prefill_tokens
            if lookup is not None:  # llama.cpp counts a draft batch (several tokens at once) as prefill
                prefilled -= lookup.batch_tokens
                lookup.finished(int((raw.get("usage") or {}).get("completion_tokens") or 0))
            response = _finished(raw, request.model, prefilled, guard)
            if recorder is not None:
                from disambig.lm.token_logprobs import with_logprobs

                return with_logprobs(response, recorder)
        return response

    def _complete_in_group(self, request: Any, kwargs: dict[str, Any], rule: LoopRule | None,
                           messages: list[dict[str, str]]) -> Any:
        """One of several independent calls made at once: formatted in this thread, decoded in a batch with the
        others (``disambig.lm.call_batcher``)."""
        from disambig.lm.call_batcher import CALL, GroupCall

        with self._lock:
            llama = self.llama
        call = GroupCall(guard=None if rule is None else RepetitionGuard(llama, rule))
        token = CALL.set(call)
        try:
            raw = self._chat(llama, messages, kwargs, None)
        finally:
            CALL.reset(token)
        return _finished(raw, request.model, call.job.prefilled if call.job is not None else None, call.guard)

    def _chat(self, llama: Any, messages: list[dict[str, str]], kwargs: dict[str, Any],
              guard: RepetitionGuard | None) -> dict[str, Any]:
        """One chat completion, stopped early by ``guard``; an over-long prompt raises ``ContextWindowError``."""
        try:
            with nullcontext() if guard is None else stopping_on(llama, guard):
                return llama.create_chat_completion(messages=messages, **kwargs)
        except ValueError as exc:
            too_long = _too_long(exc, llama, self.model_path)
            if too_long is None:
                raise
            raise too_long from None

    def stream(self, request: Any) -> Any:
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        with self._lock:
            if self.batcher_ is not None:
                self.batcher_.decoder.close()
                self.batcher_ = None
            if self._llama is not None:
                self._llama.close()
                self._llama = None
                self.lookup_ = self.grammar_ = None


def _finished(raw: dict[str, Any], model: str, prefilled: int | None, guard: RepetitionGuard | None) -> Any:
    """The canonical response of a finished completion; a reply cut by the guard or the cap is counted."""
    looped = guard.rule if guard is not None and guard.fired_ else None
    response = to_response(raw, model=model, prefilled=prefilled, looped=looped)
    if looped is not None or response.finish_reason == "length":
        record_cut("repetition" if looped is not None else "length")
    return response


def _too_long(exc: ValueError, llama: Any, model_path: str) -> ContextWindowError | None:
    """llama.cpp's "Requested tokens (N) exceed context window of M" as one line naming the limit and the fix."""
    found = TOO_LONG.search(str(exc))
    if found is None:
        return None
    tokens, window = int(found[1]), int(found[2])
    trained = trained_context(llama)
    wider = f"set DISAMBIG_CTX up to {trained:,} (this model's trained limit) or " if trained > window else ""
    return ContextWindowError(
        f"prompt of {tokens:,} tokens exceeds the {window:,}-token context window of {Path(model_path).name}; "
        f"{wider}shorten the question, the passages or the demos"
    )


def trained_context(llama: Any) -> int:
    """The context length the model was trained for (its GGUF metadata), as llama.cpp reports it."""
    import llama_cpp

    return int(llama_cpp.llama_model_n_ctx_train(llama.model))


def _load_llama(model_path: str, threads: int, ctx: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise MissingDependencyError(
            "llama-cpp-python is not installed; install it with "
            "`CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON\" "
            "pip install llama-cpp-python` (or `make demo`, which does this)"
        ) from exc
    load_cpu_backends()
    return Llama(model_path=model_path, n_ctx=ctx, n_threads=threads, n_threads_batch=threads, verbose=False)


# Names the CPU backend a runtime-dispatch build loads (e.g. ``haswell``) instead of the best this CPU supports:
# the way out if the best variant misbehaves on a CPU (the native build crashed on prefill on AMX CPUs).
CPU_VARIANT_ENV = "DISAMBIG_LLAMA_CPU_VARIANT"
# On a CPU that reports AMX, llama.cpp's best pick (``sapphirerapids``, the AMX kernels) died of an illegal
# instruction at the first prefill (an Intel Xeon VM reporting amx_tile), so the AVX-512 variants are tried first,
# best first; naming ``sapphirerapids`` in the variable still loads it.
NO_AMX_ORDER = ("zen4", "cooperlake", "icelake", "cascadelake", "cannonlake", "skylakex", "alderlake", "haswell",
                "sandybridge", "ivybridge", "sse42", "x64")
_BACKEND_LOCK = threading.Lock()  # two engines (program and verifier LM) may load at once: register backends once


def load_cpu_backends() -> None:
    """Load the CPU backend that fits this CPU when llama.cpp was built with runtime dispatch.

    A ``GGML_BACKEND_DL`` + ``GGML_CPU_ALL_VARIANTS`` build ships one library per CPU family
    (``libggml-cpu-zen4.so``, ``-haswell``, ``-x64``...) and llama-cpp-python does not load them, so no model
    could load. The portable build has its CPU backend built in and ships none: then this does nothing.
    """
    import ctypes

    import llama_cpp

    package = Path(llama_cpp.__file__).parent
    backend_dir = cpu_backend_dir(package)
    variant = os.environ.get(CPU_VARIANT_ENV, "").strip()
    if backend_dir is None:
        if variant:
            logger.warning("%s=%s is ignored: this llama.cpp build has its CPU backend built in", CPU_VARIANT_ENV,
                           variant)
        return
    with _BACKEND_LOCK:
        _register_backends(ctypes, package, backend_dir, variant)


def _register_backends(ctypes: Any, package: Path, backend_dir: Path, variant: str) -> None:
    # The wheel stores libggml.so, .so.0 and .so.0.x as separate copies; llama.cpp links .so.0, and loading
    # another copy would fill a backend registry that llama.cpp never reads.
    ggml = ctypes.CDLL(str(package / "lib" / "libggml.so.0"))
    ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
    if ggml.ggml_backend_dev_count() > 0:
        return
    ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load.restype = ctypes.c_void_p
    if not variant and cpu_reports_amx():
        for name in NO_AMX_ORDER:
            library = backend_dir / f"libggml-cpu-{name}.so"
            if library.exists() and ggml.ggml_backend_load(str(library).encode()):
                logger.info("this CPU reports AMX: loaded the %s backend, not the AMX one (%s=sapphirerapids "
                            "to try it)", name, CPU_VARIANT_ENV)
                return
    if not variant:
        ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        ggml.ggml_backend_load_all_from_path(str(backend_dir).encode())
        return
    library = backend_dir / f"libggml-cpu-{variant}.so"
    if not library.exists():
        known = sorted(p.name[len("libggml-cpu-") : -3] for p in backend_dir.glob("libggml-cpu-*.so"))
        raise ConfigurationError(f"{CPU_VARIANT_ENV}={variant}: no such CPU backend; this build has {', '.join(known)}")
    if not ggml.ggml_backend_load(str(library).encode()):
        raise ConfigurationError(f"{CPU_VARIANT_ENV}={variant}: this CPU cannot run {library.name}")


def cpu_reports_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU's flags (Linux's ``/proc/cpuinfo``) include ``amx_tile``; False where it cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.startswith("flags") and "amx_tile" in line.split() for line in text.splitlines())


def cpu_backend_dir(package: Path) -> Path | None:
    """The folder holding the per-CPU backend libraries, or None for a build with its backend built in.

    The wheel installs them beside the package's own libraries or, as pip lays out CMake's module targets,
    in ``bin/`` next to the package.
    """
    for folder in (package / "lib", package.parent / "bin", package.parent / "lib"):
        if any(folder.glob("libggml-cpu-*.so")):
            return folder
    return None


@dataclass(frozen=True)
class EvalCounters:
    """llama.cpp's own counts since the last ``reset_counters``: prompt tokens evaluated in batches (prefill) and
    single-token evaluations (decode), with the milliseconds each took."""

    prefill_tokens: int
    prefill_ms: float
    decode_tokens: int
    decode_ms: float

    @property
    def prefill_per_s(self) -> float:
        return 1000 * self.prefill_tokens / max(self.prefill_ms, 1e-6)

    @property
    def decode_per_s(self) -> float:
        return 1000 * self.decode_tokens / max(self.decode_ms, 1e-6)


def reset_counters(llama: Any) -> None:
    """Zero llama.cpp's performance counters of ``llama``'s context."""
    import llama_cpp

    llama_cpp.llama_perf_context_reset(llama.ctx)


def read_counters(llama: Any) -> EvalCounters:
    """llama.cpp's performance counters of ``llama``'s context since the last reset."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama.ctx)
    return EvalCounters(data.n_p_eval, data.t_p_eval_ms, data.n_eval, data.t_eval_ms)


def chat_messages(request: Any) -> list[dict[str, str]]:
    """Flatten a canonical request into ``[{role, content}]`` for the model's chat template."""
    messages = []
    if request.system is not None:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def completion_kwargs(config: Any) -> dict[str, Any]:
    """Map ``lm15.Config`` onto ``Llama.create_chat_completion`` keyword arguments."""
    kwargs: dict[str, Any] = {}
    if config.max_tokens is not None:
        kwargs["max_tokens"] = config.max_tokens
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    if config.top_p is not None:
        kwargs["top_p"] = config.top_p
    if config.seed is not None:
        kwargs["seed"] = config.seed
    if config.stop:
        kwargs["stop"] = list(config.stop)
    fmt = config.response_format
    if fmt is not None:
        kwargs["response_format"] = {"type": "json_object"}
        if fmt.get("type") == "json_schema":
            kwargs["response_format"]["schema"] = bounded_schema(fmt["schema"])
    return kwargs


def to_response(raw: dict[str, Any], *, model: str, prefilled: int | None = None,
                looped: LoopRule | None = None) -> Any:
    """Wrap a llama-cpp chat completion dict as a canonical ``lm15.Response`` with token usage; ``prefilled`` (the
    prompt tokens actually evaluated) turns into ``cache_read_tokens``, the prompt tokens reused.

    ``looped`` is the rule of a repetition guard that stopped the reply: its looping text is cut (``cut_loop``) and
    the reply finishes as ``stop``. Else a JSON reply the token cap stopped is cut to its last whole sentence and
    closed, and finishes as ``length``.
    """
    from dspy.lm15 import Message, Response, TextPart, Usage

    choice = raw["choices"][0]
    usage = raw.get("usage") or {}
    prompt_tokens = usage.get("prompt_tokens", 0)
    finish = "length" if choice.get("finish_reason") == "length" and looped is None else "stop"
    text = choice["message"].get("content") or ""
    if looped is not None:
        text = cut_loop(text, looped) or text
    elif finish == "length" and is_json_reply(text):
        text = cut_to_sentence(text)
    return Response(
        id=raw.get("id") or None,
        model=model,
        message=Message.assistant([TextPart(text)]),
        finish_reason=finish,
        usage=Usage(input_tokens=prompt_tokens, output_tokens=usage.get("completion_tokens", 0),
                    cache_read_tokens=None if prefilled is None else max(prompt_tokens - prefilled, 0)),
    )
