"""The device table: peak FLOP/s per data type and memory bandwidth of common accelerators.

A roofline of a named device times a computation of ``num_ops`` FLOPs moving ``tensor_size``
bytes as ``max(num_ops / peak, tensor_size / bandwidth)`` (:func:`roofline_ns`): the same model
as the system description's ``compute: roofline`` (``peak_perf`` TFLOPS, ``local_mem_bw`` decimal GB/s), so a
generator's durations, a simulator's roofline and a re-timing transform agree.  Figures are the
vendors' dense (no sparsity) peaks; a YAML file adds or overrides devices::

    my-npu:
      peak_tflops: {bf16: 400, fp32: 50}
      memory_gbs: 2000              # decimal GB/s
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import suggest
from chakra_core.system._model import roofline_ns
from chakra_core.system._values import Reader

__all__ = ["Device", "DEVICES", "DTYPES", "load_devices", "get_device", "dtype_of_bytes"]

#: data types a device may list a peak for.
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
_BY_BYTES = {1: "fp8", 2: "bf16", 4: "fp32", 8: "fp64"}


@dataclass(frozen=True)
class Device:
    """One accelerator: ``peak_tflops`` per data type (dense, 1e12 FLOP/s) and ``memory_gbs``
    (decimal GB/s, 1e9 bytes/s)."""

    name: str
    peak_tflops: Mapping[str, float] = field(default_factory=dict)
    memory_gbs: float = 0.0

    def peak(self, dtype: str) -> float:
        """Peak TFLOPS for ``dtype`` (raises ConfigError naming the types the device lists)."""
        if dtype not in self.peak_tflops:
            raise ConfigError(f"device {self.name!r} has no peak for {dtype!r}; it lists "
                              f"{', '.join(self.peak_tflops)}")
        return self.peak_tflops[dtype]

    def roofline_ns(self, num_ops: int, tensor_size: int, dtype: str) -> int:
        """Roofline time in whole ns of ``num_ops`` FLOPs moving ``tensor_size`` bytes:
        :func:`roofline_ns` (the simulators' own) at this device's ``peak(dtype)`` and bandwidth."""
        return roofline_ns(num_ops, tensor_size, self.peak(dtype), self.memory_gbs)

    def roofline_micros(self, num_ops: int, tensor_size: int, dtype: str) -> int:
        """:meth:`roofline_ns` as whole microseconds for ``duration_micros`` (rounded up, at
        least 1 for any work)."""
        ns = self.roofline_ns(num_ops, tensor_size, dtype)
        return max(1, -(-ns // 1000)) if num_ops > 0 or tensor_size > 0 else 0

    def compute_system(self, dtype: str) -> dict[str, Any]:
        """The ``compute:`` part of a system description that times nodes as this device does."""
        return {"model": "roofline", "peak-perf": self.peak(dtype), "local-mem-bw": self.memory_gbs}


def _d(name: str, memory_gbs: float, **peaks: float) -> Device:
    return Device(name, dict(peaks), memory_gbs)


#: the built-in table (vendors' datasheets, dense peaks).
DEVICES: dict[str, Device] = {d.name: d for d in (
    _d("v100", 900, fp64=7.8, fp32=15.7, fp16=125),
    _d("a100", 2039, fp64=9.7, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
    _d("h100", 3350, fp64=33.5, fp32=66.9, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9, int8=1978.9),
    _d("h200", 4800, fp64=33.5, fp32=66.9, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9, int8=1978.9),
    _d("b200", 8000, tf32=1100, bf16=2250, fp16=2250, fp8=4500, int8=4500),
    _d("mi300x", 5300, fp64=81.7, fp32=163.4, tf32=653.7, bf16=1307.4, fp16=1307.4, fp8=2614.9, int8=2614.9),
    _d("tpu-v5e", 819, bf16=197, int8=394),
    _d("tpu-v5p", 2765, bf16=459, int8=918),
)}


def dtype_of_bytes(nbytes: int) -> str:
    """The data type a roofline uses for elements of ``nbytes`` bytes (1 fp8, 2 bf16, 4 fp32, 8 fp64)."""
    if nbytes not in _BY_BYTES:
        raise ConfigError(f"no data type of {nbytes} bytes; one of {', '.join(map(str, _BY_BYTES))}")
    return _BY_BYTES[nbytes]


def _parse_device(name: str, spec: Any, where: str) -> Device:
    if not isinstance(spec, Mapping) or set(spec) - {"peak_tflops", "memory_gbs"}:
        raise ConfigError(f"device {name!r} must be a mapping of peak_tflops and memory_gbs", where)
    peaks = spec.get("peak_tflops")
    if not isinstance(peaks, Mapping) or not peaks:
        raise ConfigError(f"device {name!r}: peak_tflops must map data types to TFLOPS", where)
    for dtype in peaks:
        if dtype not in DTYPES:
            raise ConfigError(f"device {name!r}: unknown data type {dtype!r}{suggest(str(dtype), DTYPES)}", where)
    per_dtype = Reader(dict(peaks), where, f"{name}.peak_tflops.")
    tflops = {str(d): _positive(per_dtype, str(d), "TFLOPS") for d in peaks}
    return Device(name, tflops, _positive(Reader(dict(spec), where, f"{name}."), "memory_gbs", "decimal GB/s"))


def _positive(r: Reader, key: str, unit: str) -> float:
    """The positive number ``key`` (a ConfigError naming the file and the key, with the form of
    number wanted, otherwise)."""
    value = r.number(key, None)
    if value is None or not value > 0:
        raise r.fail(key, f"must be a positive number ({unit}), got {value!r}")
    return float(value)


def load_devices(path: str | os.PathLike | Mapping[str, Any] | None = None) -> dict[str, Device]:
    """The built-in table with the devices of the YAML file (or mapping) ``path`` added."""
    from chakra_core.system._load import read_config

    table = dict(DEVICES)
    if path is None:
        return table
    data, where, _ = read_config(path)
    if not isinstance(data, Mapping) or not data:
        raise ConfigError("a device file maps device names to {peak_tflops, memory_gbs}", where)
    for name, spec in data.items():
        table[str(name)] = _parse_device(str(name), spec, where)
    return table


def get_device(name: str, devices: str | os.PathLike | Mapping[str, Any] | None = None) -> Device:
    """The device ``name`` of the built-in table extended by the file ``devices`` (ConfigError
    with a "did you mean" for an unknown name)."""
    table = load_devices(devices)
    if name not in table:
        raise ConfigError(f"unknown device {name!r}{suggest(name, table)}; known: {', '.join(table)}")
    return table[name]
