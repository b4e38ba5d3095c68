"""A remote LM behind an OpenAI-compatible endpoint: its address, its key, and one cheap check before a run.

``--api-base URL`` (or ``DISAMBIG_API_BASE``) points every LiteLLM-style LM spec of a run (``openai/MODEL``...) at
``URL``. The key comes from the environment only: ``DISAMBIG_API_KEY``, else ``OPENAI_API_KEY``; it is sent to the
endpoint and nowhere else (not in settings, manifests, traces or MLflow params). A server that asks for no key
(``disambig lm serve``, a local vLLM) gets a placeholder.

Before the first call, ``check_endpoint`` asks ``GET URL/models`` once: an endpoint that does not answer, a key it
rejects, or a model it does not list is one line (a ``ConfigurationError``), before anything is written.

A model behind such an endpoint is unknown to DSPy's model catalogue, which would then send no ``response_format``
at all; ``EndpointLM`` states that it takes a JSON schema there, as vLLM, llama.cpp's servers (``disambig lm
serve``), Ollama and LM Studio do, so the adapter's schema reaches the server's grammar-constrained decoding.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from typing import Any

from disambig.errors import ConfigurationError
from disambig.lm.cost import PricedLM

API_KEY_ENVS = ("DISAMBIG_API_KEY", "OPENAI_API_KEY")
NO_KEY = "no-key"
"""Sent when no key is set: OpenAI clients refuse to send a request without one, keyless servers ignore it."""
OPENAI_COMPATIBLE = ("openai", "hosted_vllm")
"""LiteLLM providers whose endpoints list their models at ``GET /models`` (the preflight asks only these)."""
PREFLIGHT_TIMEOUT_S = 10.0

_checked: set[tuple[str, str, str]] = set()
_lock = threading.Lock()


def api_key() -> str | None:
    """The key of a remote LM: ``DISAMBIG_API_KEY``, else ``OPENAI_API_KEY`` (None when neither is set)."""
    return next((os.environ[name] for name in API_KEY_ENVS if os.environ.get(name)), None)


def served_model(model: str) -> str:
    """The model id a LiteLLM model string asks its endpoint for: ``openai/smollm2`` -> ``smollm2``."""
    return model.split("/", 1)[1] if "/" in model else model


def remote_kwargs(model: str, api_base: str) -> dict[str, Any]:
    """``dspy.LM`` keyword arguments that send ``model``'s calls to ``api_base``, checked once per process.

    Raises:
        ConfigurationError: see ``check_endpoint``.
    """
    base = api_base.rstrip("/")
    key = api_key()
    if model.split("/", 1)[0] in OPENAI_COMPATIBLE:
        check_endpoint(base, served_model(model), key)
    return {"api_base": base, "api_key": key or NO_KEY}


def check_endpoint(api_base: str, model_id: str, key: str | None, timeout: float = PREFLIGHT_TIMEOUT_S) -> None:
    """``GET api_base/models`` and check ``model_id`` is listed; a success is remembered for the process.

    Raises:
        ConfigurationError: the endpoint is unreachable or answers an error, rejects the key, answers something that
            is not an OpenAI model list, or does not list ``model_id`` (the message names the models it serves).
    """
    with _lock:
        if (api_base, model_id, key or "") in _checked:
            return
    listed = _listed_models(api_base, key, timeout)
    if model_id not in listed:
        served = ", ".join(sorted(listed)) or "none"
        hint = f"; use --lm openai/{sorted(listed)[0]}" if len(listed) == 1 else ""
        raise ConfigurationError(f"the LM endpoint {api_base} does not serve model {model_id!r} (it serves: "
                                 f"{served}){hint}")
    with _lock:
        _checked.add((api_base, model_id, key or ""))


def _listed_models(api_base: str, key: str | None, timeout: float) -> set[str]:
    request = urllib.request.Request(f"{api_base}/models", headers={"Authorization": f"Bearer {key or NO_KEY}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            body = reply.read()
    except urllib.error.HTTPError as exc:
        raise ConfigurationError(_http_error(api_base, exc.code)) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigurationError(f"cannot reach the LM endpoint {api_base} ({_reason(reason)}); start its server "
                                 "(e.g. `disambig lm serve`) or fix --api-base / DISAMBIG_API_BASE") from None
    try:
        data = json.loads(body)
        return {str(entry["id"]) for entry in data["data"]}
    except (ValueError, KeyError, TypeError):
        raise ConfigurationError(f"the LM endpoint {api_base} answered GET /models with something that is not a "
                                 "model list; --api-base should be the API root, usually ending in /v1") from None


def _http_error(api_base: str, status: int) -> str:
    if status in (401, 403):
        return (f"the LM endpoint {api_base} rejected the API key (HTTP {status}); set DISAMBIG_API_KEY (or "
                "OPENAI_API_KEY) to a key it accepts")
    if status == 404:
        return (f"the LM endpoint {api_base} has no /models (HTTP 404); --api-base should be the API root, usually "
                "ending in /v1")
    return f"the LM endpoint {api_base} answered GET /models with HTTP {status}; check the server"


def _reason(reason: Any) -> str:
    text = getattr(reason, "strerror", None) or str(reason)
    return text.lower() if text else type(reason).__name__


class EndpointLM(PricedLM):
    """A ``dspy.LM`` at an explicit OpenAI-compatible ``api_base``: it takes a JSON schema as ``response_format``;
    its calls' dollar cost reaches the trace where the model has a known price, and so do its replies that the
    token cap stopped (``cut_by_length``)."""

    def update_history(self, entry: dict[str, Any]) -> None:
        record_capped_replies(entry)
        super().update_history(entry)

    @property
    def supports_response_schema(self) -> bool:
        return True

    @property
    def supported_params(self) -> set[str]:
        return set(super().supported_params) | {"response_format"}


def record_capped_replies(entry: dict[str, Any]) -> None:
    """Count each reply of a call that the token cap stopped (``finish_reason == "length"``) as cut by length in
    the innermost ``measured`` block; a call answered from the response cache (no ``usage``) counts nothing.
    ``disambig lm serve`` ends such a reply at its last whole sentence, as the in-process engine does; a reply its
    repetition guard stopped finishes as ``stop`` and is not counted here."""
    from disambig.lm.usage import record_cut

    if not entry.get("usage"):
        return
    for choice in getattr(entry.get("response"), "choices", None) or []:
        if getattr(choice, "finish_reason", None) == "length":
            record_cut("length")
