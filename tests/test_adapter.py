"""The compact adapter: short prompts, demos as turns, JSON parsed and typed like JSONAdapter."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from disambig.lm.adapter import CompactJSONAdapter


class Pick(dspy.Signature):
    """Pick the year the passage gives."""

    passage: str = dspy.InputField()
    year: int = dspy.OutputField(desc="a four-digit year")


def test_system_message_is_instruction_plus_keys():
    system = CompactJSONAdapter().format_system_message(Pick)
    assert system == "Pick the year the passage gives.\nReply with a JSON object with keys: year (a four-digit year)."


def test_demos_become_user_and_assistant_turns():
    demo = dspy.Example(passage="Built in 1889.", year=1889)
    messages = CompactJSONAdapter().format(Pick, demos=[demo], inputs={"passage": "Opened in 1900."})
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "passage: Built in 1889."
    assert messages[2]["content"] == '{"year": 1889}'
    assert messages[3]["content"] == "passage: Opened in 1900."


def test_output_is_parsed_and_typed():
    adapter = CompactJSONAdapter()
    dspy.configure(lm=DummyLM([{"year": "1900"}], adapter=adapter), adapter=adapter)
    assert dspy.Predict(Pick)(passage="Opened in 1900.").year == 1900


def test_unparseable_output_raises_adapter_error():
    with pytest.raises(dspy.utils.exceptions.AdapterParseError):
        CompactJSONAdapter().parse(Pick, "no json here")
