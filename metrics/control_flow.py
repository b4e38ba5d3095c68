"""Control flow under attack: which of a program's decisions a planted passage changed, against its clean run.

    moved(clean, attacked) = [name for name in DECISIONS if decisions(clean)[name] != decisions(attacked)[name]]

A decision that one run records and the other does not counts as moved (route took another candidate). The
decisions are read from a prediction's trace notes, no LM call:

- ``grade``: DIVA's retrieval verification (Useful, PartialUseful, Useless), which picks RAC or closed-book answering;
- ``gate``, ``decomposed``, ``clusters kept``: ADF's ambiguity state from the geometry of its first retrieval, whether
  it decomposed the question, and how many passage clusters passed its relevance filter (one sub-question each);
- ``accepted``, ``readings``: VerDICt's feedback step (how many passages stated a reading instead of abstaining) and
  the readings its consolidation kept (their medoids' passage ids, a planted one named ``planted``);
- ``route``: route's action (``answer:adf``, ``clarify``, ...). A route's notes also hold its candidate's, whose
  decisions count too.

    >>> moved({"notes": {"grade": "Useless"}}, {"notes": {"grade": "Useful"}})
    ['grade']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disambig.retrieval.poison import POISON_PREFIX

DECISIONS = ("grade", "gate", "decomposed", "clusters kept", "accepted", "readings", "route")
PLANTED = "planted"
_ABSENT = object()  # a decision one run did not take (equal only to itself)


def decisions(trace: Mapping[str, Any] | None) -> dict[str, Any]:
    """The decisions ``trace`` (a prediction's trace dict) records, by name, in ``DECISIONS`` order."""
    notes = (trace or {}).get("notes") or {}
    found: dict[str, Any] = {}
    if "grade" in notes:
        found["grade"] = notes["grade"]
    if "state" in notes:
        found["gate"] = notes["state"]
    if "decomposed" in notes:
        found["decomposed"] = bool(notes["decomposed"])
    if isinstance(notes.get("clusters"), list):
        found["clusters kept"] = sum(bool(c.get("kept")) for c in notes["clusters"] if isinstance(c, Mapping))
    if isinstance(notes.get("pairs"), list):
        found["accepted"] = len(notes["pairs"])
    if isinstance(notes.get("medoids"), list):
        found["readings"] = sorted(PLANTED if str(i).startswith(POISON_PREFIX) else str(i) for i in notes["medoids"])
    if isinstance(notes.get("route"), Mapping):
        found["route"] = notes["route"].get("action")
    return found


def moved(clean: Mapping[str, Any] | None, attacked: Mapping[str, Any] | None) -> list[str]:
    """The names of the decisions that differ between the clean run's trace and the attacked run's."""
    before, after = decisions(clean), decisions(attacked)
    return [n for n in DECISIONS if before.get(n, _ABSENT) != after.get(n, _ABSENT)]
