#!/usr/bin/env bash
# Installs the wheel in $1 (a directory holding one torch_mlu wheel) into a fresh
# virtual environment outside the source tree, with torch 2.13.0 from the
# configured package sources, and runs there, from outside the tree:
# tools/wheel_smoke.py, then a subset of the test suite against the installed copy
# (TORCH_MLU_TEST_INSTALLED=1 makes tests/conftest.py refuse a torch_mlu from the tree).
set -euo pipefail
tree="$(cd "$(dirname "$0")/.." && pwd)"
wheel_dir="$(cd "$1" && pwd)"
wheels=("$wheel_dir"/torch_mlu-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] || { echo "test_wheel: expected one wheel in $wheel_dir" >&2; exit 1; }
PYTHON=${PYTHON:-python3}

work="$(mktemp -d "${TMPDIR:-/tmp}/torch_mlu_wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" "${wheels[0]}" pytest pytest-timeout hypothesis numpy expecttest
cd "$work"  # nothing from the source tree on sys.path
TORCH_MLU_SOURCE_TREE="$tree" "$work/venv/bin/python" "$tree/tools/wheel_smoke.py"
TORCH_MLU_TEST_INSTALLED=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$tree" \
  "$tree/tests/test_tensor_basics.py" "$tree/tests/test_streams.py" "$tree/tests/test_copy.py" \
  "$tree/tests/test_version.py" "$tree/tests/test_distributed.py::test_backend_registered_for_mlu" \
  "$tree/tests/test_distributed.py::test_collectives_match_gloo" \
  "$tree/tests/test_compile.py::test_pointwise_chain" \
  "$tree/tests/test_gpu_migration.py::test_console_script" \
  "$tree/tests/test_gpu_migration.py::test_cuda_script_runs_unmodified_after_the_import" \
  "$tree/tests/test_compile.py::test_race_eager_producer_then_compiled_consumer" \
  "$tree/tests/test_extension.py::test_paths_and_cmake_files" "$tree/tests/test_extension.py::test_cpp_program" \
  "$tree/tests/test_monitor.py::test_json_schema" "$tree/tests/test_monitor.py::test_options"
