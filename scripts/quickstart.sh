#!/usr/bin/env bash
# Quick start: set up .venv (scripts/setup.sh; skipped when nothing it installs changed), then run
# the bundled example pipeline (examples/quickstart/pipeline.yaml) and check the converted trace
# set, one line per step on stderr with the seconds since the start.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_NAME=quickstart
source scripts/_step.sh
step "set-up (.venv)"
bash scripts/setup.sh
step "chakra run examples/quickstart/pipeline.yaml"
.venv/bin/chakra run examples/quickstart/pipeline.yaml
step "chakra validate out/quickstart/et/"
.venv/bin/chakra validate out/quickstart/et/
step "chakra stats out/quickstart/et/"
.venv/bin/chakra stats out/quickstart/et/ | head -12
step "done"
echo "results: out/quickstart/*/result.json; timeline (open in https://ui.perfetto.dev): out/quickstart/simpy/timeline.json"
