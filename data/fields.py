"""One field of a record that may be a mapping (a row read from JSON) or an object (a passage, a prediction)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def field(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, else ``item.name``; None when it has no such field."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
