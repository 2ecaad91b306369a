"""Run ASTRA-sim on a directory exported by chakra-astrasim."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from chakra_astrasim import BINARIES
from chakra_core import ChakraError, ConfigError

from .parse import parse_output

__all__ = ["ENV_VAR", "binary_mode", "check_binary_mode", "find_binary", "run_directory"]

#: environment variable naming the ASTRA-sim binary.
ENV_VAR = "CHAKRA_ASTRASIM_BIN"


def find_binary(binary: str | None = None, congestion: str = "unaware") -> str | None:
    """The binary to run: ``binary``, else ``$CHAKRA_ASTRASIM_BIN``, else the usual name of the
    ``congestion`` ("unaware" | "aware") analytical binary on the PATH; None when none exists."""
    for candidate in (binary, os.environ.get(ENV_VAR)):
        if candidate:
            found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
            if found is None:
                raise ConfigError(f"ASTRA-sim binary {candidate!r} not found or not executable")
            return str(Path(found).resolve())
    return shutil.which(BINARIES[congestion])


#: a C++ namespace of each analytical backend; its name survives in the binary's RTTI strings.
_MARKERS = {"aware": b"NetworkAnalyticalCongestionAware", "unaware": b"NetworkAnalyticalCongestionUnaware"}
_BLOCK = 1 << 20


def binary_mode(binary: str | Path) -> str | None:
    """``"aware"`` or ``"unaware"``: which analytical backend ``binary`` is, from its file name
    (``..._Congestion_Aware`` / ``..._Congestion_Unaware``), else from the backend's namespace
    in its bytes; None when neither tells (or both appear)."""
    name = Path(binary).name.lower().replace("-", "_")
    for mode in ("unaware", "aware"):
        if f"congestion_{mode}" in name or f"congestion{mode}" in name:
            return mode
    found: set[str] = set()
    keep = max(len(m) for m in _MARKERS.values())
    try:
        with open(binary, "rb") as f:
            tail = b""
            while len(found) < 2:
                block = f.read(_BLOCK)
                if not block:
                    break
                window = tail + block
                found |= {mode for mode, marker in _MARKERS.items() if marker in window}
                tail = window[-keep:]
    except OSError:
        return None
    return found.pop() if len(found) == 1 else None


def check_binary_mode(binary: str, congestion: str) -> str | None:
    """Refuse ``binary`` when it is the other analytical backend than ``congestion`` asks
    (ConfigError); returns its mode, or None when it cannot be told."""
    mode = binary_mode(binary)
    if mode is not None and mode != congestion:
        raise ConfigError(f"{binary} is ASTRA-sim's congestion-{mode} analytical binary but "
                          f"congestion={congestion} was asked: give the congestion-{congestion} one "
                          f"(-O binary=PATH or ${ENV_VAR}: {BINARIES[congestion]})")
    return mode


def run_directory(directory: str | Path, binary: str, congestion: str = "unaware",
                  timeout_s: float | None = None, where: str | None = None) -> tuple[list[dict], str]:
    """Run ``binary`` on the export in ``directory`` with the command its ``report.json`` names.

    Returns ``(ranks, stdout)``: the per-rank results of :func:`parse_output` for every rank of
    the network, and the raw output.  Raises ChakraError when the run fails, times out or leaves
    a rank unfinished, naming ``where`` (default ``directory``: the place the user knows, when
    ``directory`` is a staging one) and a file outside it that keeps the whole output.
    """
    directory = Path(directory)
    where = where or str(directory)
    info = json.loads((directory / "report.json").read_text())
    key = "congestion_aware" if congestion == "aware" else "congestion_unaware"
    args = info["commands"].get(key)
    if args is None:
        raise ConfigError("the congestion-aware binary runs 1-D networks only; this export has more "
                          "dimensions (use congestion=unaware)")
    npus = info["report"]["ranks"]["network"]
    try:
        proc = subprocess.run([binary, *args[1:]], cwd=directory, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        log = _kept_log(_text(e.stdout, e.stderr))
        raise ChakraError(f"ASTRA-sim did not finish within {timeout_s:g} s (its output so far: {log})",
                          where) from None
    except OSError as e:
        raise ConfigError(f"cannot run {binary}: {e.strerror or e}") from None
    text = _text(proc.stdout, proc.stderr)
    if proc.returncode != 0:
        tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
        raise ChakraError(f"ASTRA-sim exited with status {proc.returncode}: {tail} (its whole output: "
                          f"{_kept_log(text)})", where)
    try:
        return parse_output(text, npus, where), text
    except ChakraError as e:
        raise ChakraError(f"{e.message} (its whole output: {_kept_log(text)})", where) from None


def _text(stdout: str | bytes | None, stderr: str | bytes | None) -> str:
    """A run's standard output, then its error output (bytes, as a timeout leaves them, decoded)."""
    out, err = (x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (stdout, stderr))
    return out + ("\n" + err if err else "")


def _kept_log(text: str) -> str:
    """Write the output of a failed run to a file of its own in the system's temporary folder
    (the run's directory is not published when it fails) and return its path."""
    fd, path = tempfile.mkstemp(prefix="chakra-astrasim-failed-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path
