"""The calibration of the emulator's kernels: the time of one square float32 matmul on a device,
measured once per machine, device and torch version and cached in the user's cache directory
(``$XDG_CACHE_HOME/chakra/emulator-calibration.json``, default ``~/.cache``)."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from chakra_core import atomic_output, cache_dir

__all__ = ["cache_path", "calibration_key", "load_or_measure"]

MATMUL_N = 128
_SAMPLES = 7
_PER_SAMPLE = 20


def cache_path() -> Path:
    """Where calibrations are cached."""
    return Path(cache_dir()) / "emulator-calibration.json"


def calibration_key(device: str) -> str:
    """The cache key: host name, device (its name on CUDA), torch version, threads."""
    import torch

    cuda = device.startswith("cuda")
    name = torch.cuda.get_device_name(torch.device(device)) if cuda else platform.processor()
    kind = device.split(":")[0]
    return f"{platform.node()}|{kind}|{name}|torch {torch.__version__}|threads {torch.get_num_threads()}"


def _measure(device: str) -> dict[str, Any]:
    import torch

    dev = torch.device(device)
    a = torch.randn(MATMUL_N, MATMUL_N, device=dev)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for _ in range(_PER_SAMPLE):
        torch.mm(a, a)
    sync()
    samples = []
    for _ in range(_SAMPLES):
        t0 = time.perf_counter_ns()
        for _ in range(_PER_SAMPLE):
            torch.mm(a, a)
        sync()
        samples.append((time.perf_counter_ns() - t0) / _PER_SAMPLE)
    return {"matmul_n": MATMUL_N, "matmul_ns": statistics.median(samples), "measured_at": time.time()}


def load_or_measure(device: str, remeasure: bool = False) -> dict[str, Any]:
    """The cached calibration of ``device`` (``cpu`` or ``cuda:K``), measured and cached when
    missing or when ``remeasure``; an unwritable cache is not an error."""
    path = cache_path()
    key = calibration_key(device)
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    if not isinstance(cached, dict):
        cached = {}
    entry = cached.get(key)
    if isinstance(entry, dict) and "matmul_ns" in entry and not remeasure:
        return {**entry, "cached": True, "key": key}
    entry = _measure(device)
    cached[key] = entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as tmp:
            tmp.write_text(json.dumps(cached, indent=1))
    except OSError:
        pass
    return {**entry, "cached": False, "key": key}
