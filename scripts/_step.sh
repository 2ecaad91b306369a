# Sourced by the scripts here: `step TEXT` prints "chakra <STEP_NAME> [  12.3s] TEXT" on stderr, the
# seconds counted from when this file was sourced (to 0.1 s with bash 5's EPOCHREALTIME, else whole seconds).
_step_now() {
  local t=${EPOCHREALTIME:-$(date +%s).000000}
  echo "${t/./}"
}
STEP_T0=$(_step_now)
step() {
  local now
  now=$(_step_now)
  local tenths=$(((now - STEP_T0) / 100000))
  printf 'chakra %s [%4d.%ds] %s\n' "${STEP_NAME:-}" $((tenths / 10)) $((tenths % 10)) "$*" >&2
}
