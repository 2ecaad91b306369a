"""Which torch.distributed backend and device a replay uses: NCCL on CUDA devices when there is
one per rank, gloo on the CPU otherwise (or what the options ask for)."""

from __future__ import annotations

from dataclasses import dataclass

from chakra_core import ConfigError

__all__ = ["Placement", "choose_placement", "probe_cuda"]


@dataclass(frozen=True)
class Placement:
    """The torch.distributed backend (``gloo``/``nccl``) and device type (``cpu``/``cuda``)."""

    backend: str
    device: str


def probe_cuda() -> int:
    """How many CUDA devices torch sees here (0 without CUDA).  A machine without an NVIDIA
    device node (``/dev/nvidia0`` ...) has none, and torch is not imported to find that out."""
    import glob

    if not glob.glob("/dev/nvidia[0-9]*"):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def choose_placement(backend: str, device: str, ranks: int, cuda_devices: int) -> Placement:
    """The placement for ``ranks`` ranks given the options ``backend`` (auto, gloo, nccl) and
    ``device`` (auto, cpu, cuda) and the number of CUDA devices: ``auto`` takes NCCL on CUDA when
    every rank gets its own device (NCCL refuses two ranks on one device), else gloo on the CPU
    (with ``device`` cuda and fewer devices than ranks, gloo on CUDA buffers).
    A request this machine cannot serve is a ConfigError."""
    if device == "auto":
        if backend == "nccl":
            device = "cuda"
        elif backend == "gloo":
            device = "cpu"
        else:
            device = "cuda" if 0 < ranks <= cuda_devices else "cpu"
    if backend == "nccl":
        if device != "cuda":
            raise ConfigError("backend 'nccl' needs device 'cuda' (NCCL runs on CUDA devices only)")
        if ranks > cuda_devices:
            raise ConfigError(f"backend 'nccl' needs one CUDA device per rank: {ranks} ranks, "
                              f"{cuda_devices} device(s) (use backend=gloo)")
    if device == "cuda" and cuda_devices == 0:
        raise ConfigError("device 'cuda' asked for, but torch sees no CUDA device here")
    if backend == "auto":  # NCCL where every rank has a device of its own; gloo takes cuda buffers too
        backend = "nccl" if device == "cuda" and ranks <= cuda_devices else "gloo"
    return Placement(backend, device)
