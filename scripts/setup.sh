#!/usr/bin/env bash
# Create .venv (when missing) and install the core, every first-party plugin and adapter, the
# example third-party plugin's test needs, and the test tools. Idempotent; needs only Python 3.10+
# and pip (packages come from the package index; torch is pinned to the CPU build 2.13.0).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# torch only for recording real PyTorch traces in tests and the collection adapter; pin it so that
# pip never pulls a multi-GB CUDA build.
"${PIP[@]}" "setuptools>=68" wheel "torch==2.13.0"
# Two passes: pip does not match a requirement on a first-party distribution (chakra-emulator needs
# chakra-simpy) to an editable given with extras (`-e plugins/chakra-simpy[test]`), so every
# distribution is installed plainly first and the test extras come second.
dists=(.)
for d in plugins/*/ adapters/*/; do
  [ -f "$d/pyproject.toml" ] && dists+=("${d%/}")
done
editable=()
extras=()
for d in "${dists[@]}"; do
  editable+=(-e "$d")
  if grep -q '^test *=' "$d/pyproject.toml"; then extras+=(-e "$d[test]"); fi
done
"${PIP[@]}" "${editable[@]}"
"${PIP[@]}" "${extras[@]}" ruff
