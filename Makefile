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
# The sanitizer builds compile with -g1, for which ccache also hashes the working directory unless told not
# to: without this a clean clone (CI) misses the cache for them (measured: the ASan build recompiled).
export CCACHE_NOHASHDIR := 1

.PHONY: demo test lint build setup wheel test-wheel test-cpp test-python test-training test-untrapped test-expandable test-sanitizers \
	asan-suites tsan asan bench opinfo clean

demo: build
	$(PY) examples/demo.py

# The stages of `make test`, in order, each timed (tools/run_stages.sh prints a line per stage and a table at
# the end); docs/testing.md says what each covers and its budget.
TEST_STAGES = setup lint build test-cpp test-python test-training test-untrapped test-expandable test-wheel asan-suites tsan
test:
	@tools/run_stages.sh $(TEST_STAGES)

setup:
	@tools/bootstrap.sh

# The checks that need no build (tools/lint.py): run first, they fail in seconds.
lint: setup
	$(PY) tools/lint.py

build: setup
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -G Ninja -DPYTHON_EXECUTABLE=$(CURDIR)/$(PY) -DMLU_BUILD_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)
	@[ $(VENV)/.editable.stamp -nt pyproject.toml ] || { $(PY) -m pip install -q --no-build-isolation --no-deps -e . && touch $(VENV)/.editable.stamp; }

# The wheel a user installs with pip (into $(WHEEL_DIR)), built from the current build.
WHEEL_DIR := build/dist
wheel: build
	rm -rf $(WHEEL_DIR)
	$(PY) -m pip wheel -q --no-build-isolation --no-deps -w $(WHEEL_DIR) .

# The wheel installed into a fresh virtual environment outside the tree: a smoke test
# and a subset of the suite against the installed copy (tools/test_wheel.sh).
test-wheel: wheel
	PYTHON=$(shell command -v python3) tools/test_wheel.sh $(WHEEL_DIR)

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every pytest pass lists its slowest tests (--durations) and writes a JUnit report under build/test-reports
# (tools/test_times.py turns them into docs/testing.md's tables).
PYTEST = $(PY) -X faulthandler -m pytest -q -p no:cacheprovider --durations=25 --durations-min=1
REPORT = --junitxml=$(BUILD)/test-reports/$@.xml

# The whole suite, once, with device memory behind the host-access trap (Note [Host-access trap] in
# runtime/include/mlu_runtime/host_trap.h): a host dereference of device memory anywhere in the glue, the
# examples or the tests stops the run with a report. --capture=sys lets that report reach the log.
# On every core (pytest-xdist): the suite waits on subprocesses and the device's queues much of the time.
test-python:
	TORCH_MLU_TRAP_HOST_ACCESS=1 $(PYTEST) -n $(JOBS) --capture=sys $(REPORT) -m "not training" tests

# The multi-process training runs (marker training: DeepSpeed, the HF Trainer, Lightning, torchtitan,
# pytorch/examples' FSDP x TP, compiled and big-model FSDP2/DDP), under the trap as the rest, in a stage of
# their own with its own budget (docs/testing.md). One at a time: each runs 2-4 processes on the 2 cores, and
# two at once took longer than both in turn (DeepSpeed's 16 s test took 198 s beside the others).
test-training:
	TORCH_MLU_TRAP_HOST_ACCESS=1 $(PYTEST) --capture=sys $(REPORT) -m training tests

# Without the trap, the tests that need memory outside it (marker untrapped: IPC and shared memory) or take
# another path there (also_untrapped: the zero-copy fallback, storage aliasing). tests/conftest.py fails a
# test that skips under the trap without the marker, so no test drops out of both passes.
test-untrapped:
	$(PYTEST) $(REPORT) -m "untrapped or also_untrapped" tests

# The memory suite again with expandable segments (Note [Expandable segments] in
# csrc/core/MLUCachingAllocator.cpp) in place of fixed ones, the allocator's other mode; the slow tests
# (interpreters started, builds) ran in the first pass and do not depend on the mode.
MEMORY_TESTS = tests/test_allocator.py tests/test_memory_api.py tests/test_memory_history.py tests/test_memory_pools.py \
	tests/test_expandable_segments.py tests/test_graphs.py tests/test_streams.py
test-expandable:
	PYTORCH_MLU_ALLOC_CONF=expandable_segments:True $(PYTEST) $(REPORT) -m "not slow" $(MEMORY_TESTS)

# Sanitizers. `make test` runs the runtime and kernel suites under ASan+UBSan and under TSan (the
# torch-free layers, whose sanitizer builds take minutes); `make asan` adds the glue and runs the pytest
# suite's fast subset on it. Every finding fails the run (halt_on_error, -fno-sanitize-recover).
SANITIZER_CMAKE = cmake -S . -G Ninja -DPYTHON_EXECUTABLE=$(CURDIR)/$(PY) -DMLU_BUILD_TESTS=ON
SANITIZER_SUITES = --target mlu_runtime_tests mlu_kernels_tests
ASAN_RUN = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
TSAN_RUN = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
ASAN_PACKAGE = build-asan/package
# The pytest files `make asan` runs: fast, in-process, and together through most of the glue.
ASAN_PYTEST = tests/test_tensor_basics.py tests/test_native_ops.py tests/test_copy.py tests/test_properties.py \
	tests/test_device_checks.py tests/test_streams.py tests/test_async.py tests/test_errors.py

# The kernels' ISA variants this host can run (kernels/CMakeLists.txt MLU_KERNELS_ISAS): ASan compiles and
# runs exactly those, since tails differ by vector width. TSan compiles and runs the host's best variant with
# what it borrows from (the variants below it), and runs the ISA-parametrized cases for that variant only:
# the variants differ in vector width, not in threading.
HOST_ISAS := $(shell tools/host_isas.sh)
TOP_ISA := $(lastword $(subst ;, ,$(HOST_ISAS)))
TSAN_LOWER_ISAS = $(if $(filter avx512 avx512bf16,$(TOP_ISA)),_baseline|_avx2|/baseline|/avx2|)
# TSan looks for races, and every op of the pointwise engine, every dtype pair of the copy kernel, shares one
# parallel split and one set of threads (Note [Block pipeline] in kernels/src/pointwise/pointwise_isa.cpp);
# the per-op and per-pair cases differ in the arithmetic, which ASan, UBSan and test-cpp check. So under TSan
# those two suites run a sample that covers each shape of the split: one, two and three inputs, a
# vectorised (SLEEF) body, a boolean output, scalar parameters; same-type, widening, narrowing, 16-bit and
# complex copies. That saves about 290 of TSan's 750 test-seconds (docs/testing.md).
TSAN_SAMPLED = PointwiseTest.MatchesReferenceOnRandomViews|CopyTest.MatchesReferenceOnRandomViews
TSAN_SAMPLE = PointwiseTest.MatchesReferenceOnRandomViews/(Copy|Exp|Add|Eq|Clamp|Where|Addcmul)_|CopyTest.MatchesReferenceOnRandomViews/(Float32_to_Float32|Int16_to_Float32|Float32_to_BFloat16|Float64_to_Float16|Bool_to_ComplexDouble)( |$$)

test-sanitizers: asan-suites tsan

asan-suites: setup
	@[ -f build-asan/CMakeCache.txt ] || $(SANITIZER_CMAKE) -B build-asan -DMLU_ASAN=ON \
		-DMLU_PACKAGE_DIR=$(CURDIR)/$(ASAN_PACKAGE)/torch_mlu "-DMLU_KERNELS_ISAS=$(HOST_ISAS)"
	cmake --build build-asan -j $(JOBS) $(SANITIZER_SUITES)
	cd build-asan && $(ASAN_RUN) ctest --output-on-failure -j $(JOBS)

tsan: setup
	@[ -f build-tsan/CMakeCache.txt ] || $(SANITIZER_CMAKE) -B build-tsan -DMLU_TSAN=ON "-DMLU_KERNELS_ISAS=$(HOST_ISAS)"
	cmake --build build-tsan -j $(JOBS) $(SANITIZER_SUITES)
# Two ctest runs: everything but the sampled suites, then the sample (^$ matches no test name: it ends the
# exclusion's alternation where the host has no lower variants).
	cd build-tsan && $(TSAN_RUN) ctest --output-on-failure -j $(JOBS) -E '$(TSAN_LOWER_ISAS)$(TSAN_SAMPLED)'
	cd build-tsan && $(TSAN_RUN) ctest --output-on-failure -j $(JOBS) -R '$(TSAN_SAMPLE)' -E '$(TSAN_LOWER_ISAS)^$$'

# The glue under ASan+UBSan, loaded into the (uninstrumented) interpreter with the ASan runtime preloaded
# (and libstdc++, whose __cxa_throw ASan must find at start). The package copy keeps the regular build's
# libraries in torch_mlu/ untouched; pytest runs from inside it, so `import torch_mlu` finds the
# instrumented one. --capture=sys lets a sanitizer report reach the terminal. Python itself leaks by
# design: no leak check here.
asan: asan-suites
	cd torch_mlu && find . -name '*.py' -exec install -D -m 644 {} $(CURDIR)/$(ASAN_PACKAGE)/torch_mlu/{} \;
	cmake --build build-asan -j $(JOBS)
	cd $(ASAN_PACKAGE) && LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
		ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		PYTHONPATH=$(CURDIR)/$(ASAN_PACKAGE) $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider --capture=sys \
		$(addprefix $(CURDIR)/,$(ASAN_PYTEST))

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
	rm -rf $(BUILD) build-tsan build-asan torch_mlu/_C*.so torch_mlu/lib
