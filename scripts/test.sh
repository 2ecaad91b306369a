#!/usr/bin/env bash
# The test command: set up everything (scripts/setup.sh; skipped when nothing it installs changed),
# lint, type-check, then run the whole test suite, one line per step on stderr with the seconds since
# the start. Extra arguments go to pytest. pytest's exit status is kept (5, "no tests ran", fails too).
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_NAME=test
source scripts/_step.sh
step "set-up"
bash scripts/setup.sh
step "ruff"
.venv/bin/ruff check .
step "mypy"
.venv/bin/mypy  # files and options: [tool.mypy] in pyproject.toml
step "pytest (load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown))"
exec .venv/bin/python -m pytest "$@"
