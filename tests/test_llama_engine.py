"""The embedded GGUF model as a DSPy engine, on tiny prompts with the real model."""

from __future__ import annotations

import json
import sys
import threading
from types import SimpleNamespace

import dspy
import pytest

from disambig.errors import MissingDependencyError
from disambig.lm.llama_engine import LlamaEngine, completion_kwargs, cpu_backend_dir, cpu_reports_amx, to_response
from disambig.lm.paths import default_gguf


def test_missing_llama_cpp_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingDependencyError, match="GGML_NATIVE=OFF"):
        _ = LlamaEngine(str(default_gguf())).llama


def test_config_maps_to_llama_kwargs():
    from dspy.lm15 import Config

    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    config = Config(max_tokens=7, temperature=0.0, stop=("\n",), seed=3,
                    response_format={"type": "json_schema", "schema": schema})
    assert completion_kwargs(config) == {
        "max_tokens": 7, "temperature": 0.0, "stop": ["\n"], "seed": 3,
        "response_format": {"type": "json_object", "schema": schema},
    }


class Capital(dspy.Signature):
    """Name the capital city of the country."""

    country: str = dspy.InputField()
    capital: str = dspy.OutputField()
    population_millions: float = dspy.OutputField()


@pytest.mark.slow
def test_schema_is_obeyed_and_usage_counted(local_lm):
    with dspy.context(lm=local_lm, adapter=dspy.JSONAdapter()), dspy.track_usage() as usage:
        result = dspy.Predict(Capital)(country="France")
    assert isinstance(result.capital, str) and result.capital
    assert isinstance(result.population_millions, float)
    (entries,) = usage.usage_data.values()
    assert len(entries) == 1
    assert entries[0]["prompt_tokens"] > 20 and entries[0]["completion_tokens"] > 0


@pytest.mark.slow
def test_raw_json_schema_call_returns_valid_json(local_lm):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    out = local_lm.engine.llama.create_chat_completion(
        messages=[{"role": "user", "content": "Give a city in Italy as JSON."}],
        response_format={"type": "json_object", "schema": schema}, max_tokens=32, temperature=0.0,
    )
    assert isinstance(json.loads(out["choices"][0]["message"]["content"])["city"], str)


@pytest.mark.slow
def test_max_tokens_and_stop_are_honoured(local_lm):
    short = local_lm("Count from one to twenty in words, separated by spaces.", max_tokens=3)
    assert len(local_lm.engine.llama.tokenize(short[0].encode(), add_bos=False)) <= 3
    stopped = local_lm("Write the numbers 1, 2, 3, 4, 5 separated by commas.", stop=["3"], max_tokens=40)
    assert "3" not in stopped[0]


@pytest.mark.slow
def test_two_threads_calling_at_once_both_succeed(local_lm):
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            results[i] = local_lm(f"Say the number {i}.", max_tokens=8)
        except BaseException as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert set(results) == {1, 2} and all(isinstance(r[0], str) for r in results.values())


def test_open_arrays_get_a_max_items_bound():
    from dspy.lm15 import Config

    from disambig.lm.schema import bounded_schema

    schema = {"type": "object", "properties": {
        "types": {"type": "array", "items": {"enum": ["A", "B"]}},
        "pairs": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}}}}},
    }}
    bounded = bounded_schema(schema, max_items=3)
    assert bounded["properties"]["types"]["maxItems"] == 3
    assert bounded["properties"]["pairs"]["maxItems"] == 2  # an explicit bound is kept
    assert bounded["properties"]["pairs"]["items"]["properties"]["tags"]["maxItems"] == 3
    assert "maxItems" not in schema["properties"]["types"]  # the input is not mutated
    config = Config(response_format={"type": "json_schema", "schema": schema})
    assert completion_kwargs(config)["response_format"]["schema"]["properties"]["types"]["maxItems"] == 6


@pytest.mark.parametrize(("cut", "closed"), [
    ('{"long_answer": "Ronaldo has 1', '{"long_answer": "Ronaldo has 1"}'),
    ('{"items": ["a", "b', '{"items": ["a", "b"]}'),
    ('{"pairs": [{"q": "x", "a": "y"}, {"q": "z', '{"pairs": [{"q": "x", "a": "y"}]}'),  # half item dropped
    ('{"pairs": [{"q": "x', '{"pairs": []}'),
    ('{"text": "a\\', '{"text": "a"}'),  # cut right after a backslash
])
def test_truncated_json_is_closed(cut, closed):
    from disambig.lm.truncation import close_truncated_json

    assert close_truncated_json(cut) == closed
    json.loads(close_truncated_json(cut))


def test_json_that_cannot_be_closed_is_left_alone():
    from disambig.lm.truncation import close_truncated_json

    assert close_truncated_json('{"a": ') == '{"a": '


def test_a_reply_cut_by_the_token_limit_is_closed_in_the_response():
    raw = {"choices": [{"message": {"content": '{"long_answer": "It is'}, "finish_reason": "length"}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
    response = to_response(raw, model="local/x")
    assert response.message.parts[0].text == '{"long_answer": "It is"}'
    assert response.finish_reason == "length"


def test_cpu_backend_dir_finds_dispatch_libraries_wherever_the_wheel_put_them(tmp_path):
    package = tmp_path / "site-packages" / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "lib" / "libggml-cpu.so").touch()
    assert cpu_backend_dir(package) is None
    (tmp_path / "site-packages" / "bin").mkdir()
    (tmp_path / "site-packages" / "bin" / "libggml-cpu-zen4.so").touch()
    assert cpu_backend_dir(package) == tmp_path / "site-packages" / "bin"
    (package / "lib" / "libggml-cpu-haswell.so").touch()
    assert cpu_backend_dir(package) == package / "lib"


def test_cpu_reports_amx_reads_the_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16\n")
    assert not cpu_reports_amx(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f amx_bf16 amx_tile amx_int8\n")
    assert cpu_reports_amx(cpuinfo)
    assert not cpu_reports_amx(tmp_path / "missing")


class FakeGgml:
    """``libggml.so.0`` as ctypes sees it: no device yet, and ``ggml_backend_load`` succeeds for ``runnable``."""

    def __init__(self, runnable: set[str]) -> None:
        self.runnable, self.loaded, self.loaded_all = runnable, [], False
        self.ggml_backend_dev_count = lambda: 0
        self.ggml_backend_load_all_from_path = lambda path: setattr(self, "loaded_all", True)

        def load(path: bytes) -> int:  # a plain function: ctypes code sets argtypes/restype on it
            name = path.decode().rsplit("libggml-cpu-", 1)[1].removesuffix(".so")
            self.loaded.append(name)
            return 1 if name in self.runnable else 0

        self.ggml_backend_load = load


def fake_ctypes(ggml: FakeGgml):
    import ctypes

    return SimpleNamespace(CDLL=lambda path: ggml, c_size_t=ctypes.c_size_t, c_char_p=ctypes.c_char_p,
                           c_void_p=ctypes.c_void_p)


@pytest.mark.parametrize(("amx", "variant", "loaded", "loaded_all"), [
    (True, "", ["zen4", "cooperlake"], False),   # the AVX-512 variants before the AMX one, first that runs
    (False, "", [], True),                       # no AMX: llama.cpp picks the best variant itself
    (True, "sapphirerapids", ["sapphirerapids"], False),  # named explicitly: loaded as asked
])
def test_an_amx_cpu_loads_an_avx512_backend_unless_told_otherwise(tmp_path, monkeypatch, amx, variant, loaded,
                                                                   loaded_all):
    from disambig.lm import llama_engine

    for name in ("sapphirerapids", "zen4", "cooperlake", "haswell"):
        (tmp_path / f"libggml-cpu-{name}.so").touch()
    monkeypatch.setattr(llama_engine, "cpu_reports_amx", lambda: amx)
    ggml = FakeGgml({"cooperlake", "haswell", "sapphirerapids"})
    llama_engine._register_backends(fake_ctypes(ggml), tmp_path, tmp_path, variant)
    assert ggml.loaded == loaded and ggml.loaded_all == loaded_all
