"""A compact JSON adapter: the signature's instruction, terse field lines, and schema-constrained output.

DSPy's ``JSONAdapter`` spends ~200 prompt tokens on format boilerplate per call. On a CPU model that reads
~120 tokens/s that is most of the cost, and the boilerplate confuses a 135M model. This adapter keeps the
same contract (JSON out, parsed and typed by ``JSONAdapter.parse``; demos as user/assistant turns; the
output schema sent as ``response_format``) with a prompt a small model can follow.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import dspy
from dspy.adapters.utils import format_field_value, serialize_for_json


class CompactJSONAdapter(dspy.JSONAdapter):
    """``JSONAdapter`` with a short system message and ``name: value`` inputs."""

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        instruction = " ".join(textwrap.dedent(signature.instructions).split())
        return f"{instruction}\n{self.format_field_structure(signature)}"

    def format_field_structure(self, signature: type[dspy.Signature]) -> str:
        keys = ", ".join(_describe(name, info) for name, info in signature.output_fields.items())
        return f"Reply with a JSON object with keys: {keys}."

    def format_user_message_content(
        self,
        signature: type[dspy.Signature],
        inputs: dict[str, Any],
        prefix: str = "",
        suffix: str = "",
        main_request: bool = False,
    ) -> str:
        lines = [prefix] if prefix else []
        for name, info in signature.input_fields.items():
            if name in inputs:
                lines.append(f"{name}: {format_field_value(field_info=info, value=inputs[name])}")
        if suffix:
            lines.append(suffix)
        return "\n".join(lines).strip()

    def format_assistant_message_content(
        self, signature: type[dspy.Signature], outputs: dict[str, Any], missing_field_message: str | None = None
    ) -> str:
        values = {name: outputs.get(name, missing_field_message) for name in signature.output_fields}
        return json.dumps(serialize_for_json(values), ensure_ascii=False)


def _describe(name: str, info: Any) -> str:
    desc = (info.json_schema_extra or {}).get("desc", "")
    if not desc or desc == f"${{{name}}}":
        return name
    return f"{name} ({desc})"
