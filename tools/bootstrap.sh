#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine: system packages, the virtual
# environment in .venv, torch 2.13.0 and the test dependencies. Each step is
# skipped when what it provides is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
DEBIAN_PACKAGES="cmake ninja-build g++ make ccache libgtest-dev libsleef-dev libdnnl-dev clang-format"

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in $DEBIAN_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  # A system Python needs venv and headers; a pyenv/conda Python brings its own.
  if [ "$(command -v "$PYTHON")" = /usr/bin/python3 ]; then
    for pkg in python3-venv python3-dev; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# Re-install only when the requirement files changed.
stamp="$VENV/.requirements.stamp"
want=$(cat requirements.txt requirements-examples.txt requirements-test.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python requirements"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-test.txt
  echo "$want" > "$stamp"
fi

# Note [torchtitan's own site]
# torchtitan, with what it needs beyond .venv, goes into .venv/torchtitan-site (--no-deps, pinned in
# requirements-torchtitan.txt), which only tests/test_torchtitan.py puts on its runs' PYTHONPATH: torchtitan
# imports triton (a 1 GB CUDA compiler) unconditionally, which nothing else here may see, and the datasets
# library it reads its data with would change what transformers' Trainer does in the other tests.
site="$VENV/torchtitan-site"
stamp="$VENV/.torchtitan.stamp"
want=$(sha256sum requirements-torchtitan.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing torchtitan into $site"
  rm -rf "$site"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$site" -r requirements-torchtitan.txt
  echo "$want" > "$stamp"
fi
