#!/usr/bin/env bash
# The test command: set up everything (scripts/setup.sh), lint, type-check, then run the whole test suite.
# Extra arguments go to pytest. pytest's exit status is kept (5, "no tests ran", fails too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy  # files and options: [tool.mypy] in pyproject.toml
exec .venv/bin/python -m pytest "$@"
