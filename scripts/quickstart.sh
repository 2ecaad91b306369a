#!/usr/bin/env bash
# Quick start: set up .venv (scripts/setup.sh), then run the bundled example pipeline
# (examples/quickstart/pipeline.yaml) and check the converted trace set.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/chakra run examples/quickstart/pipeline.yaml
.venv/bin/chakra validate out/quickstart/et/
.venv/bin/chakra stats out/quickstart/et/ | head -12
echo "results: out/quickstart/*/result.json; timeline (open in https://ui.perfetto.dev): out/quickstart/simpy/timeline.json"
