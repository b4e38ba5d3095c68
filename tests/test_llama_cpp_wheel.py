"""``tools/llama_cpp_wheel.py``: the CMake rewrite keeping chosen CPU variants, the pin, the cache key; no build."""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The GGML_CPU_ALL_VARIANTS list of llama.cpp's ggml/src/CMakeLists.txt (llama-cpp-python 0.3.36), cut short.
CMAKE = """\
ggml_add_backend(CPU)

if (GGML_CPU_ALL_VARIANTS)
    if (NOT GGML_BACKEND_DL)
        message(FATAL_ERROR "GGML_CPU_ALL_VARIANTS requires GGML_BACKEND_DL")
    endif()
    if (GGML_SYSTEM_ARCH STREQUAL "x86")
        ggml_add_cpu_backend_variant(x64)
        ggml_add_cpu_backend_variant(sse42              SSE42)
        ggml_add_cpu_backend_variant(haswell            SSE42 AVX F16C FMA AVX2 BMI2)
        if (NOT MSVC)
            # MSVC 2022 doesn't support BF16 intrinsics
            ggml_add_cpu_backend_variant(zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_BF16)
        endif()
        ggml_add_cpu_backend_variant(alderlake          SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI)
    elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")
        ggml_add_cpu_backend_variant(armv8.0_1)
    endif()
endif()
"""


@pytest.fixture
def wheel_tool(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools"))
    return importlib.import_module("llama_cpp_wheel")


def test_keep_variants_leaves_the_named_lines_in_upstream_order(wheel_tool):
    kept = wheel_tool.keep_variants(CMAKE, ["zen4", "x64"])
    # x64 then zen4 as upstream lists them, zen4's flags unchanged, its MSVC guard gone; the ARM branch untouched.
    assert kept.split('STREQUAL "x86")\n')[1].split("    elseif")[0] == (
        "        ggml_add_cpu_backend_variant(x64)\n"
        "        ggml_add_cpu_backend_variant(zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_BF16)\n"
    )
    assert kept.endswith('    elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")\n'
                         "        ggml_add_cpu_backend_variant(armv8.0_1)\n    endif()\nendif()\n")


@pytest.mark.parametrize(("cmake", "variants", "message"), [
    (CMAKE, ["x64", "zen5"], "no x86 CPU variant zen5 in .*; it has x64, sse42, haswell, zen4, alderlake"),
    (CMAKE, [], "no CPU variants named"),
    (CMAKE.replace("if (GGML_CPU_ALL_VARIANTS)", "if (GGML_CPU_SOME_VARIANTS)"), ["x64"], "has no x86 branch"),
    (CMAKE.replace('elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")', "else()"), ["x64"], "has no x86 branch"),
])
def test_keep_variants_refuses_what_it_cannot_find(wheel_tool, cmake, variants, message):
    with pytest.raises(ValueError, match=message):
        wheel_tool.keep_variants(cmake, variants)


# llama-cpp-python 0.3.36's top CMakeLists.txt around the line that forces `common` on (the Emscripten branch forces
# it off), cut short.
TOP_CMAKE = """\
if (LLAMA_BUILD)
    # Enable building of the common library
    set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)
    if (EMSCRIPTEN)
        set(LLAMA_BUILD_COMMON OFF CACHE BOOL "Build llama.cpp common library" FORCE)
    endif()
    add_subdirectory(vendor/llama.cpp)
endif()
"""


def test_without_common_turns_the_forced_common_library_off(wheel_tool):
    patched = wheel_tool.without_common(TOP_CMAKE)
    assert patched == TOP_CMAKE.replace('COMMON ON CACHE', 'COMMON OFF CACHE')
    assert "LLAMA_BUILD_COMMON ON" not in patched and patched.count("LLAMA_BUILD_COMMON OFF") == 2


@pytest.mark.parametrize("cmake", [TOP_CMAKE.replace("COMMON ON", "COMMON OFF"), TOP_CMAKE + TOP_CMAKE])
def test_without_common_refuses_a_file_it_does_not_recognise(wheel_tool, cmake):
    with pytest.raises(ValueError, match="forces LLAMA_BUILD_COMMON on [02] times"):
        wheel_tool.without_common(cmake)


def pyproject(*dependencies: str) -> str:
    return "[project]\ndependencies = [" + ", ".join(f'"{d}"' for d in dependencies) + "]\n"


def test_pinned_version_reads_the_exact_pin(wheel_tool):
    assert wheel_tool.pinned_version(pyproject("dspy==3.4.1", "llama-cpp-python[server]==0.3.36")) == "0.3.36"
    assert wheel_tool.pinned_version(pyproject("Llama_CPP.python == 0.3.7")) == "0.3.7"
    assert wheel_tool.pinned_version((ROOT / "pyproject.toml").read_text()) == "0.3.36"


@pytest.mark.parametrize(("text", "message"), [
    (pyproject("llama-cpp-python>=0.3"), "pin one version with =="),
    (pyproject("dspy==3.4.1"), "does not require llama-cpp-python"),
])
def test_pinned_version_refuses_a_missing_or_loose_pin(wheel_tool, text, message):
    with pytest.raises(ValueError, match=message):
        wheel_tool.pinned_version(text)


def test_cache_key_depends_on_version_variants_cmake_args_and_recipe_only(wheel_tool):
    key = wheel_tool.cache_key("0.3.36", ["zen4", "x64"], "-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON")
    assert key != wheel_tool.cache_key("0.3.36", ["zen4", "x64"], "-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON", "older")
    assert key.startswith("0.3.36-x64-zen4-")
    assert key == wheel_tool.cache_key("0.3.36", ["x64", "zen4"], " -DGGML_NATIVE=OFF  -DGGML_BACKEND_DL=ON ")
    assert key != wheel_tool.cache_key("0.3.36", ["x64", "zen4"], "-DGGML_NATIVE=OFF")
    assert key != wheel_tool.cache_key("0.3.36", ["x64"], "-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON")


def test_a_built_wheel_with_other_backends_or_the_common_library_is_refused(wheel_tool):
    files = ["bin/libggml-cpu-x64.so", "bin/libggml-cpu-zen4.so", "lib/libllama.so", "llama_cpp/lib/libllama.so"]
    wheel_tool.check_wheel("w.whl", files, ["zen4", "x64"])
    with pytest.raises(ValueError, match=r"CPU backends \['x64', 'zen4'\], not \['x64'\]"):
        wheel_tool.check_wheel("w.whl", files, ["x64"])
    with pytest.raises(ValueError, match="still holds llama.cpp's common library .lib/libllama-common.so.0."):
        wheel_tool.check_wheel("w.whl", [*files, "lib/libllama-common.so.0"], ["x64", "zen4"])


def test_backends_names_the_cpu_libraries(wheel_tool):
    paths = ["bin/libggml-cpu-zen4.so", "../../bin/libggml-cpu-x64.so", "llama_cpp/lib/libggml-base.so",
             "llama_cpp/lib/libggml-cpu.so.0"]
    assert wheel_tool.backends(paths) == {"zen4", "x64"}


def test_build_returns_a_cached_wheel_without_downloading(wheel_tool, tmp_path, monkeypatch):
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_BACKEND_DL=ON")
    folder = tmp_path / wheel_tool.cache_key("0.3.36", ["x64", "zen4"], "-DGGML_BACKEND_DL=ON")
    folder.mkdir()
    (folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl").write_bytes(b"")

    def no_subprocess(*args, **kwargs):
        raise AssertionError("a cached wheel must not be rebuilt")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert wheel_tool.build(["zen4", "x64"], tmp_path) == folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"


def test_check_refuses_an_install_with_other_backends(wheel_tool, monkeypatch):
    installed = SimpleNamespace(files=["../../bin/libggml-cpu-x64.so", "../../bin/libggml-cpu-zen4.so",
                                       "../../bin/libggml-cpu-haswell.so"])
    monkeypatch.setattr(wheel_tool.importlib.metadata, "distribution", lambda name: installed)
    wheel_tool.check(["x64", "zen4", "haswell"])
    with pytest.raises(ValueError, match=r"has the CPU backends \['haswell', 'x64', 'zen4'\], not \['x64', 'zen4'\]"):
        wheel_tool.check(["x64", "zen4"])


HASWELL = "sse4_2 avx f16c fma avx2 bmi2"
SKYLAKEX = HASWELL + " avx512f avx512cd avx512vl avx512dq avx512bw"
ZEN4 = SKYLAKEX + " avx512vbmi avx512_vnni avx512_bf16"


@pytest.mark.parametrize(("flags", "expected"), [
    (ZEN4 + " amx_tile", ["zen4"]),  # an AMX CPU gets zen4 too: the AMX variant crashed on one
    (ZEN4.replace(" avx512vbmi", ""), ["cooperlake"]),  # zen4's kernels use VBMI: without it, not zen4
    (SKYLAKEX + " avx512_vnni", ["cascadelake"]),  # AVX-512 with VNNI, no BF16 or VBMI (Cascade Lake)
    (SKYLAKEX + " avx512vbmi avx512_vnni", ["icelake"]),
    (SKYLAKEX, ["skylakex"]),
    (SKYLAKEX.replace(" avx512bw", ""), ["haswell"]),  # llama.cpp's AVX-512 needs all five of F/CD/VL/DQ/BW
    (HASWELL + " avx_vnni", ["alderlake"]),
    (HASWELL, ["haswell"]),
    ("sse4_2 avx", ["x64"]),
])
def test_auto_picks_the_best_variant_the_cpu_runs_and_x64_only_without_one(wheel_tool, flags, expected):
    cpuinfo = f"processor\t: 0\nflags\t\t: fpu {flags}\n\nprocessor\t: 1\nflags\t\t: fpu {flags}\n"
    assert wheel_tool.auto_variants(cpuinfo) == expected


def test_named_variants_are_kept_and_auto_reads_the_cpu(wheel_tool, tmp_path):
    assert wheel_tool.resolve_variants(["haswell", "x64"]) == ["haswell", "x64"]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"flags\t\t: {HASWELL}\n")
    assert wheel_tool.resolve_variants(["auto"], cpuinfo) == ["haswell"]
    assert wheel_tool.resolve_variants(["auto"], tmp_path / "missing") == ["x64"]
