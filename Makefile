# The two commands of the README:
#   make demo  - set up everything, build, and run the demo on mlu
#   make test  - set up everything, build, and run every test
# Both are idempotent: a second run reuses the venv and the build.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
JOBS ?= $(shell nproc)
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: demo test build setup test-cpp test-python tsan bench opinfo clean

demo: build
	$(PY) examples/demo.py

test: build
	$(MAKE) --no-print-directory test-cpp test-python

setup:
	@tools/bootstrap.sh

build: setup
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -G Ninja -DPYTHON_EXECUTABLE=$(CURDIR)/$(PY) -DMLU_BUILD_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)
	@[ -f $(VENV)/.editable.stamp ] || { $(PY) -m pip install -q --no-build-isolation --no-deps -e . && touch $(VENV)/.editable.stamp; }

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python:
	$(PY) -m pytest -q tests

# The runtime's GoogleTest suite under ThreadSanitizer.
tsan: setup
	@[ -f build-tsan/CMakeCache.txt ] || cmake -S . -B build-tsan -G Ninja -DPYTHON_EXECUTABLE=$(CURDIR)/$(PY) -DMLU_TSAN=ON
	cmake --build build-tsan -j $(JOBS) --target mlu_runtime_tests
	cd build-tsan/runtime && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure

bench: build
	$(PY) benchmarks/bench_basic.py
	$(PY) benchmarks/bench_allocator.py
	$(PY) benchmarks/bench_ops.py
	$(PY) benchmarks/bench_models.py

# The full OpInfo sweep (every op_db entry and dtype, compared with the CPU), crash-proof; writes
# docs/opinfo_summary.md. OPINFO_ARGS narrows it, e.g. OPINFO_ARGS="--dtypes float32".
opinfo: build
	$(PY) tests/opinfo/sweep.py $(OPINFO_ARGS)

clean:
	rm -rf $(BUILD) build-tsan torch_mlu/_C*.so torch_mlu/lib
