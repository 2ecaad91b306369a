#!/usr/bin/env bash
# Create .venv (when missing) and install the core with its extras, every first-party plugin and
# adapter, the example third-party plugin's test needs, and the test tools. Needs only Python 3.10+
# and pip (packages come from the package index; torch is pinned to the CPU build 2.13.0).
#
# One line per step on stderr, with the seconds since the start. Skipped when nothing it installs
# has changed: a stamp (a hash of this script, every pyproject.toml and the Python version) is kept
# in .venv/.chakra-setup-stamp. CHAKRA_SETUP=force redoes it anyway.
# Installer: uv (installed into .venv from the package index; it reads pip's index, extra index,
# find-links and constraint settings from `pip config`), or pip with CHAKRA_INSTALLER=pip or when
# uv cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
STEP_NAME=setup
source scripts/_step.sh
STAMP_FILE=.venv/.chakra-setup-stamp

dists=(.)
for d in plugins/*/ adapters/*/; do
  [ -f "$d/pyproject.toml" ] && dists+=("${d%/}")
done

stamp() {
  { cat scripts/setup.sh scripts/_step.sh; for d in "${dists[@]}"; do cat "$d/pyproject.toml"; done; "$PY" --version; } \
    | sha256sum | cut -d' ' -f1
}

want=$(stamp)
if [ "${CHAKRA_SETUP:-}" != force ] && [ -x .venv/bin/python ] && [ -f "$STAMP_FILE" ] \
   && [ "$(cat "$STAMP_FILE")" = "$want" ]; then
  step "up to date: nothing it installs changed since $(date -r "$STAMP_FILE" '+%Y-%m-%d %H:%M') (CHAKRA_SETUP=force redoes it)"
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
rm -f "$STAMP_FILE"
PIP=(.venv/bin/python -m pip install --disable-pip-version-check)
installer=${CHAKRA_INSTALLER:-uv}
if [ "$installer" = uv ]; then
  step "installing the installer (uv) into .venv"
  "${PIP[@]}" --quiet uv || { step "uv could not be installed: using pip"; installer=pip; }
fi

# pip's own settings (this machine's or the user's pip.conf and PIP_* variables), passed on to uv
uv_settings() {
  .venv/bin/python -m pip config list 2>/dev/null | .venv/bin/python -c '
import shlex, sys
flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}
out = {}
for line in sys.stdin:
    key, _, value = line.strip().partition("=")
    name = key.split(".", 1)[-1]
    if name in flags:
        out[name] = [flags[name] + "=" + v for v in shlex.split(value.strip("\x27\""))]
print("\n".join(a for args in out.values() for a in args))'
}

if [ "$installer" = uv ]; then
  settings=()
  while IFS= read -r line; do [ -n "$line" ] && settings+=("$line"); done < <(uv_settings)
  INSTALL=(.venv/bin/uv pip install --python .venv/bin/python --index-strategy unsafe-best-match "${settings[@]}")
else
  INSTALL=("${PIP[@]}")
fi
# the installer's own progress on a terminal, only this script's step lines elsewhere
[ -t 2 ] || INSTALL+=(--quiet)

# torch only for recording real PyTorch traces in tests and the collection adapter; pin it so that
# the installer never pulls a multi-GB CUDA build.
step "installing build tools and torch 2.13.0 (CPU build) with $installer"
"${INSTALL[@]}" "setuptools>=68" wheel "torch==2.13.0"

editable=()
extras=()
for d in "${dists[@]}"; do
  editable+=(-e "$d")
  if [ "$d" = . ]; then
    extras+=(-e ".[full,test]")
  elif grep -q '^test *=' "$d/pyproject.toml"; then
    extras+=(-e "$d[test]")
  fi
done
if [ "$installer" = uv ]; then
  step "installing ${#dists[@]} distributions (editable), their extras and the test tools"
  "${INSTALL[@]}" "${editable[@]}" "${extras[@]}" ruff
else
  # Two passes: pip does not match a requirement on a first-party distribution (chakra-emulator
  # needs chakra-simpy) to an editable given with extras (`-e plugins/chakra-simpy[test]`), so every
  # distribution is installed plainly first and the extras come second.
  step "installing ${#dists[@]} distributions (editable)"
  "${INSTALL[@]}" "${editable[@]}"
  step "installing their extras and the test tools"
  "${INSTALL[@]}" "${extras[@]}" ruff
fi
echo "$want" > "$STAMP_FILE"
step "done"
