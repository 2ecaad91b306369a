# Sourced by the scripts here: `step TEXT` prints "chakra <STEP_NAME> [  12.3s] TEXT" on stderr, the
# seconds counted from when this file was sourced.
STEP_T0=${EPOCHREALTIME/./}
step() {
  local now=${EPOCHREALTIME/./}
  local tenths=$(((now - STEP_T0) / 100000))
  printf 'chakra %s [%4d.%ds] %s\n' "${STEP_NAME:-}" $((tenths / 10)) $((tenths % 10)) "$*" >&2
}
