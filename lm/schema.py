"""Bound a JSON schema before grammar-constrained decoding.

A 135M model under a grammar can loop inside an open array ("AmbTime", "N/A", "AmbTime", ...) until the
token limit cuts the JSON off. Giving every array without a ``maxItems`` one makes the grammar close it.
"""

from __future__ import annotations

import copy
from typing import Any

MAX_ITEMS = 6


def bounded_schema(schema: dict[str, Any], max_items: int = MAX_ITEMS) -> dict[str, Any]:
    """A copy of ``schema`` where every array without ``maxItems`` gets ``maxItems = max_items``."""
    if max_items < 1:
        raise ValueError(f"max_items={max_items} must be at least 1")
    out = copy.deepcopy(schema)
    _bound(out, max_items)
    return out


def _bound(node: Any, max_items: int) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item, max_items)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "array" and "maxItems" not in node:
        node["maxItems"] = max_items
    for value in node.values():
        _bound(value, max_items)
