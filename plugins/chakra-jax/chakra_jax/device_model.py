"""Durations of compute nodes without a profile: the core's roofline of a named device.

Each compute operation's FLOPs (``num_ops``) and bytes (``tensor_size``) from :mod:`.cost` are
timed as ``max(FLOPs / peak, bytes / memory bandwidth)`` on a device of
:data:`chakra_core.system.DEVICES` (:meth:`Device.roofline_micros`), at the peak of the data
type of the operation's output (``bf16`` for bf16, ``fp32`` for f32 and c64, ...; a device that
lists no peak for that type uses the nearest type it has, and a note says so).

The device is option ``device=`` when given; else the module's own target where it names one:
the CUDA compute capability of an XLA dump's file name (``*.sm_8.0_gpu_after_optimizations.txt``)
or of the module's attributes, an AMD ``gfx9xx`` target, a TPU generation; else
:data:`DEFAULT_DEVICE`. The reason is returned as a note for the set's metadata.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from chakra_core.system import Device, get_device

from .hlo_text import HloModule
from .lowering import COMPUTE, Op

__all__ = ["DEFAULT_DEVICE", "choose_device", "model_durations", "roofline_dtype"]

#: the device a module that names no target is timed on.
DEFAULT_DEVICE = "h100"

_SM = re.compile(r"sm_(\d+)(?:\.(\d+))?")
_CAPABILITY = re.compile(r"cuda_compute_capability\W+major\W+(\d+)", re.IGNORECASE)
_GFX = re.compile(r"gfx9\d\d")
_TPU = re.compile(r"tpu[\s_-]*(v\d+[a-z]?)", re.IGNORECASE)
_BY_MAJOR = {7: "v100", 8: "a100", 9: "h100", 10: "b200"}
_TPUS = {"v5e": "tpu-v5e", "v5litepod": "tpu-v5e", "v5p": "tpu-v5p"}
_DTYPES = {
    "f64": "fp64", "c128": "fp64", "f32": "fp32", "c64": "fp32", "bf16": "bf16", "f16": "fp16",
    "s8": "int8", "u8": "int8", "s4": "int8", "u4": "int8",
}
_FALLBACK = ("fp32", "bf16", "fp16", "tf32", "fp64", "fp8", "int8")


def _module_text(module: HloModule) -> str:
    return " ".join(f"{k}={v}" for k, v in module.header.items())


def _major(haystack: str) -> int | None:
    """The CUDA major version a text names (``cuda_compute_capability ... major: 8``,
    ``sm_8.0``, ``sm_80``), or None."""
    m = _CAPABILITY.search(haystack)
    if m:
        return int(m.group(1))
    m = _SM.search(haystack)
    if m is None:
        return None
    return int(m.group(1)) if m.group(2) is not None else int(m.group(1)[:-1] or 0)


def _named_target(module: HloModule) -> tuple[str, str] | None:
    """The device the module's file name or header names, and where it says so."""
    for where, haystack in (("file name", os.path.basename(module.path)), ("module header", _module_text(module))):
        major = _major(haystack)
        if major in _BY_MAJOR:
            return _BY_MAJOR[major], f"CUDA compute capability {major}.x in the {where}"
        gfx = _GFX.search(haystack)
        if gfx:
            return "mi300x", f"AMD target {gfx.group()} in the {where}"
        tpu = _TPU.search(haystack)
        if tpu and tpu.group(1).lower() in _TPUS:
            generation = tpu.group(1).lower()
            return _TPUS[generation], f"TPU {generation} in the {where}"
    return None


def choose_device(module: HloModule, name: str | None, devices_file: str | None = None) -> tuple[Device, str]:
    """The device to time compute on, and a note saying why it is that one."""
    if name is not None:
        return get_device(name, devices_file), f"device model {name} (option device)"
    named = _named_target(module)
    if named is not None:
        return get_device(named[0], devices_file), f"device model {named[0]} ({named[1]})"
    return get_device(DEFAULT_DEVICE, devices_file), (
        f"device model {DEFAULT_DEVICE} (default: the module names no target; option device= to change)")


def roofline_dtype(device: Device, element: str) -> tuple[str, str]:
    """The data type whose peak times an operation whose output has XLA type ``element``, and a
    note when the device lacks that type's peak (empty otherwise)."""
    wanted = "fp8" if element.startswith("f8") else _DTYPES.get(element, "fp32")
    if wanted in device.peak_tflops:
        return wanted, ""
    for other in _FALLBACK:
        if other in device.peak_tflops:
            return other, f"{device.name} lists no {wanted} peak: its {other} peak times {wanted} operations"
    return next(iter(device.peak_tflops)), ""


def model_durations(ops: Sequence[Op], device: Device) -> tuple[list[int], list[str]]:
    """Roofline duration in whole us of every compute operation (0 for the others), and notes."""
    out = [0] * len(ops)
    notes: dict[str, None] = {}
    for i, op in enumerate(ops):
        if op.kind != COMPUTE:
            continue
        dtype, note = roofline_dtype(device, op.dtype)
        if note:
            notes[note] = None
        out[i] = device.roofline_micros(op.num_ops, op.tensor_size, dtype)
    return out, list(notes)
