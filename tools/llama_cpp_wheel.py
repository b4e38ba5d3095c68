"""llama-cpp-python built with a chosen subset of llama.cpp's x86 CPU backends, once per machine.

    python tools/llama_cpp_wheel.py build --variants "x64 haswell zen4 sapphirerapids" --cache ~/.cache/disambig/wheels
    python tools/llama_cpp_wheel.py check --variants "x64 haswell zen4 sapphirerapids"
    python tools/llama_cpp_wheel.py build --variants auto   # the best variant this CPU runs (x64 if none)

llama.cpp's ``GGML_CPU_ALL_VARIANTS`` compiles all 14 x86 CPU backends (about 25 minutes on 2 cores) and its CMake
has no option for a subset. ``build`` downloads the llama-cpp-python sdist pinned in pyproject.toml, keeps only the
chosen ``ggml_add_cpu_backend_variant(...)`` lines of its ``ggml/src/CMakeLists.txt`` (refusing a file that no
longer has them), turns off llama.cpp's ``common`` library, which nothing loads (half the compile), builds
the wheel with the ``CMAKE_ARGS`` of the environment, checks that the wheel holds exactly those backends, and keeps
it in CACHE/<version>-<variants>-<hash of CMAKE_ARGS>/; it prints the wheel's path, at once when that folder already
has it. ``check`` fails unless the installed llama-cpp-python has exactly the chosen
backends (so a later ``pip install`` that replaced the build is caught). ``--variants auto`` names the best of
``AUTO_VARIANTS`` whose instructions this CPU reports (``/proc/cpuinfo``), or the portable ``x64`` where it knows
none: each variant compiled costs about a minute on 2 cores, and a machine loads only one (the portable one, built
beside it until 2026-11-29, prefilled at 4% of zen4's speed and was loaded only when named). Standard library
only: it runs before the project is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

logger = logging.getLogger("llama_cpp_wheel")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "llama-cpp-python"
CMAKE_FILE = "vendor/llama.cpp/ggml/src/CMakeLists.txt"
# The x86 branch of the GGML_CPU_ALL_VARIANTS list: from its `if` to the ARM branch that follows it.
X86_BLOCK = re.compile(
    r'(if \(GGML_CPU_ALL_VARIANTS\).*?if \(GGML_SYSTEM_ARCH STREQUAL "x86"\)\n)(.*?\n)(\s*elseif\s*\(GGML_SYSTEM_ARCH)',
    re.DOTALL,
)
VARIANT_LINE = re.compile(r"^\s*ggml_add_cpu_backend_variant\((\w+)\b.*\)\s*$", re.MULTILINE)
BACKEND_FILE = re.compile(r"libggml-cpu-(\w+)\.so$")
# llama-cpp-python forces llama.cpp's `common` library on, though its package loads only libllama and the ggml
# libraries: `common` (chat templates, argument parsing, an HTTP client: 52 C++ files) was compiled and installed in
# site-packages/lib, outside the package, where nothing loads it.
TOP_CMAKE_FILE = "CMakeLists.txt"
COMMON_ON = re.compile(r'^(\s*set\(LLAMA_BUILD_COMMON\s+)ON(\s+CACHE\s+BOOL\s+"[^"]*"\s+FORCE\))', re.MULTILINE)
COMMON_FILE = re.compile(r"libllama-common\.so")
# How the sources are changed before the build (recorded in build.json and part of the cache key, so a wheel built
# by an older recipe is not reused): bump it whenever keep_variants or without_common changes what gets built.
RECIPE = "variants+common-off"
# The variants ``auto`` picks from, best first, with the CPU flags (as /proc/cpuinfo names them) that llama.cpp's
# loader requires of each (its ggml_add_cpu_backend_variant lines; ggml-cpu's x86 score refuses a variant missing
# any). ``sapphirerapids`` (AMX) is left out: it died of an illegal instruction on an AMX CPU, which loads zen4
# instead (disambig.lm.llama_engine).
_AVX2 = {"sse4_2", "avx", "f16c", "fma", "avx2", "bmi2"}
_AVX512 = _AVX2 | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}
AUTO_VARIANTS = (
    ("zen4", _AVX512 | {"avx512vbmi", "avx512_vnni", "avx512_bf16"}),
    ("cooperlake", _AVX512 | {"avx512_vnni", "avx512_bf16"}),
    ("icelake", _AVX512 | {"avx512vbmi", "avx512_vnni"}),
    ("cascadelake", _AVX512 | {"avx512_vnni"}),
    ("cannonlake", _AVX512 | {"avx512vbmi"}),
    ("skylakex", _AVX512),
    ("alderlake", _AVX2 | {"avx_vnni"}),
    ("haswell", _AVX2),
)


def auto_variants(cpuinfo: str) -> list[str]:
    """The best of ``AUTO_VARIANTS`` whose flags all appear in ``cpuinfo`` (/proc/cpuinfo's text), else ``x64``."""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags |= set(line.partition(":")[2].split())
    best = next((name for name, needs in AUTO_VARIANTS if needs <= flags), None)
    return [best] if best else ["x64"]


def resolve_variants(named: Sequence[str], cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The variants named, or for ``auto`` this CPU's (``x64`` where its flags cannot be read)."""
    if list(named) != ["auto"]:
        return list(named)
    try:
        return auto_variants(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ["x64"]


def pinned_version(pyproject: str) -> str:
    """The version pyproject.toml pins llama-cpp-python to (``==``), which keys the wheel cache."""
    for requirement in tomllib.loads(pyproject)["project"]["dependencies"]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        if re.sub(r"[-_.]+", "-", name).lower() == PROJECT:
            pinned = re.search(r"==\s*([\w.!+-]+)\s*$", requirement)
            if pinned is None:
                raise ValueError(f"pyproject.toml requires {requirement!r}; pin one version with == so the built "
                                 f"wheel can be reused")
            return pinned.group(1)
    raise ValueError(f"pyproject.toml does not require {PROJECT}")


def keep_variants(cmake: str, variants: Sequence[str]) -> str:
    """``ggml/src/CMakeLists.txt`` with only the named x86 CPU variants left in its GGML_CPU_ALL_VARIANTS list.

    The kept lines are upstream's own (same feature flags), in upstream order; the ``if (NOT MSVC)`` guards around
    some of them go (this build is not MSVC). Raises ValueError when the list, or a named variant, is not found.
    """
    if not variants:
        raise ValueError("no CPU variants named; name at least one, e.g. x64 (the portable one)")
    found = X86_BLOCK.search(cmake)
    if found is None:
        raise ValueError(f"{CMAKE_FILE} has no x86 branch under `if (GGML_CPU_ALL_VARIANTS)`; llama.cpp changed "
                         f"how it lists CPU variants, so tools/llama_cpp_wheel.py needs updating")
    lines = {m.group(1): m.group(0).strip() for m in VARIANT_LINE.finditer(found.group(2))}
    missing = [v for v in variants if v not in lines]
    if missing:
        raise ValueError(f"no x86 CPU variant {', '.join(missing)} in {CMAKE_FILE}; it has {', '.join(lines)}")
    kept = "".join(f"        {line}\n" for name, line in lines.items() if name in variants)
    return cmake[: found.start(2)] + kept + cmake[found.end(2) :]


def without_common(cmake: str) -> str:
    """llama-cpp-python's top ``CMakeLists.txt`` with llama.cpp's ``common`` library off (nothing the package loads
    uses it). Raises ValueError when the line that forces it on is not there once."""
    patched, count = COMMON_ON.subn(r"\1OFF\2", cmake)
    if count != 1:
        raise ValueError(f"{TOP_CMAKE_FILE} forces LLAMA_BUILD_COMMON on {count} times, not once; llama-cpp-python "
                         f"changed how it builds llama.cpp, so tools/llama_cpp_wheel.py needs updating")
    return patched


def cache_key(version: str, variants: Iterable[str], cmake_args: str, recipe: str = RECIPE) -> str:
    """The wheel's folder name: same version, variants (in any order), CMAKE_ARGS and recipe, same wheel."""
    args = hashlib.sha256(f"{' '.join(cmake_args.split())}|{recipe}".encode()).hexdigest()[:8]
    return f"{version}-{'-'.join(sorted(set(variants)))}-{args}"


def backends(paths: Iterable[str]) -> set[str]:
    """The CPU variants among file paths (``.../libggml-cpu-zen4.so`` -> ``zen4``)."""
    return {m.group(1) for p in paths if (m := BACKEND_FILE.search(p))}


def build(variants: Sequence[str], cache: Path, python: str = sys.executable) -> Path:
    """The cached wheel for these variants, built first if the cache does not have it."""
    version = pinned_version((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    cmake_args = os.environ.get("CMAKE_ARGS", "")
    target = cache / cache_key(version, variants, cmake_args)
    wheels = sorted(target.glob("*.whl"))
    if wheels:
        return wheels[0]
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
    try:
        _build_into(work, version, variants, cmake_args, python)
        try:
            (work / "out").rename(target)
        except OSError:  # another build finished first: it is the same wheel
            if not any(target.glob("*.whl")):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return sorted(target.glob("*.whl"))[0]


def _build_into(work: Path, version: str, variants: Sequence[str], cmake_args: str, python: str) -> None:
    subprocess.run([python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    f"{PROJECT}=={version}", "--dest", str(work / "sdist")], check=True)
    (sdist,) = (work / "sdist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "src", filter="data")
    (source,) = (work / "src").iterdir()
    cmake = source / CMAKE_FILE
    cmake.write_text(keep_variants(cmake.read_text(encoding="utf-8"), variants), encoding="utf-8")
    top = source / TOP_CMAKE_FILE
    top.write_text(without_common(top.read_text(encoding="utf-8")), encoding="utf-8")
    logger.info("building %s %s with the CPU backends %s (once per machine; about 2 minutes on 2 cores)",
                PROJECT, version, " ".join(variants))
    started = time.monotonic()
    subprocess.run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(work / "out"),
                    str(source)], check=True)
    seconds = time.monotonic() - started
    (wheel,) = (work / "out").glob("*.whl")
    check_wheel(wheel.name, zipfile.ZipFile(wheel).namelist(), variants)
    record = {"version": version, "variants": list(variants), "cmake_args": cmake_args, "recipe": RECIPE,
              "build_seconds": round(seconds), "sdist": sdist.name,
              "sdist_sha256": hashlib.sha256(sdist.read_bytes()).hexdigest()}
    (work / "out" / "build.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    logger.info("built %s in %.0f s", wheel.name, seconds)


def check_wheel(name: str, files: Sequence[str], variants: Sequence[str]) -> None:
    """Raise ValueError unless a built wheel's ``files`` hold exactly these CPU backends and no ``common`` library."""
    built = backends(files)
    if built != set(variants):
        raise ValueError(f"{name} has the CPU backends {sorted(built)}, not {sorted(variants)}")
    common = sorted(f for f in files if COMMON_FILE.search(f))
    if common:
        raise ValueError(f"{name} still holds llama.cpp's common library ({common[0]}): the switch that turns it off "
                         f"did not take, so tools/llama_cpp_wheel.py needs updating")


def check(variants: Sequence[str]) -> None:
    """Raise ValueError unless the installed llama-cpp-python has exactly these CPU backends."""
    files = importlib.metadata.distribution(PROJECT).files or []
    installed = backends(str(f) for f in files)
    if installed != set(variants):
        raise ValueError(f"the installed {PROJECT} has the CPU backends {sorted(installed) or 'built in'}, not "
                         f"{sorted(variants)}: a pip install replaced the build; run `make install` again after "
                         f"`rm .venv/.disambig-installed`")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["build", "check"])
    parser.add_argument("--variants", required=True,
                        help="x86 CPU variants, space-separated (e.g. 'x64 zen4'), or auto (this CPU's best, "
                             "x64 if none)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "disambig" / "wheels",
                        help="folder of built wheels (build only)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    variants = resolve_variants(args.variants.split())
    try:
        if args.action == "build":
            print(build(variants, args.cache.expanduser()))
        else:
            check(variants)
    except (ValueError, subprocess.CalledProcessError) as exc:
        sys.exit(f"llama_cpp_wheel: {exc}")


if __name__ == "__main__":
    main()
