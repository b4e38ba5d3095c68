"""What a remote LM's calls cost in dollars, where LiteLLM's price map knows the model.

DSPy prices every completed call from the provider's reported ``usage`` and LiteLLM's model price map (bundled with
DSPy as ``dspy.clients.model_metadata``; ``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it from fetching a fresh map
over the network) and puts the figure, or None when the price is unknown, on the call's history entry.
``PricedLM`` reads it there and counts it in the innermost ``disambig.lm.usage.measured`` block, from any thread.
Calls answered from DSPy's response cache cost nothing and are not counted; the in-process engine and models
missing from the map (a served GGUF) have no price.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import dspy

COST_SETTING = "disambig_call_costs"  # the innermost ``measured`` block's CostTally, a DSPy setting so threads see it
LOCAL_COST_MAP_ENV = "LITELLM_LOCAL_MODEL_COST_MAP"


def use_local_price_map() -> None:
    """Read model prices from the map bundled with the installed packages, never from the network (unless the user
    set ``LITELLM_LOCAL_MODEL_COST_MAP`` themselves). Call before the first remote LM is built."""
    os.environ.setdefault(LOCAL_COST_MAP_ENV, "True")


class CostTally:
    """Dollars of the priced calls and how many calls were priced, counted from any thread."""

    def __init__(self) -> None:
        self._usd = 0.0
        self._priced = 0
        self._lock = threading.Lock()

    def add(self, usd: float, priced: int = 1) -> None:
        with self._lock:
            self._usd += usd
            self._priced += priced

    def totals(self) -> tuple[float, int]:
        """(dollars of the priced calls, number of priced calls)."""
        with self._lock:
            return self._usd, self._priced


def record_cost(entry: dict[str, Any]) -> None:
    """Count a history entry's ``cost`` in the innermost ``measured`` block, if the call was priced and not cached."""
    tally = dspy.settings.get(COST_SETTING)
    cost = entry.get("cost")
    if tally is not None and isinstance(cost, int | float) and entry.get("usage"):  # a cache hit has no usage
        tally.add(float(cost))


class PricedLM(dspy.LM):
    """A ``dspy.LM`` whose calls' dollar cost (when known) reaches ``measured`` traces."""

    def update_history(self, entry: dict[str, Any]) -> None:
        record_cost(entry)
        super().update_history(entry)
