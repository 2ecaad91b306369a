"""What a worker runs for compute and memory nodes (imported by workers only: needs torch).

- *real operator*: a node named ``aten::OP`` whose inputs carry PyTorch's schema (types, shapes,
  values as the execution trace records them) is built once before the replay, with seeded
  tensors of those shapes and dtypes on the replay device, and called through an overload of
  ``torch.ops.aten.OP`` whose schema takes them; one trial call decides (a node whose arguments
  cannot be built or whose call fails is not real).  The schema is read from
  ``OpOverload._schema``: torch has no public accessor of an operator's schema, and this one is
  what its own tools read; the arguments are laid onto it because the trace records keyword-only
  arguments (``dtype``, ``out``) in schema order with the positional ones.
- *calibrated kernel*: a loop of one square matmul whose time on this device was measured
  (:mod:`calibrate`), repeated to last the node's duration, or (``kernel_sizing=work``) to do
  its ``num_ops`` operations and move its ``tensor_size`` bytes.
- *host work*: the rank's CPU-op slot is held until the node's duration has passed since the
  node could start; the thread sleeps, then spins through a tail of 20 us or more
  (:class:`HostWork`; the workers set a timer slack of 1 ns, so that a sleep ends within a few
  us): a spinning main thread per rank would take the cores that gloo's threads need to carry
  the collectives.
- *memory copy*: a copy of ``tensor_size`` bytes between two buffers on the replay device.
"""

from __future__ import annotations

import ast
import math
import queue
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["Runner", "build_real_op", "HostWork", "REAL", "KERNEL", "HOST", "COPY", "NONE"]

REAL, KERNEL, HOST, COPY, NONE = "real", "kernel", "host", "copy", "none"

#: element types of the execution trace's ``Tensor(...)`` (with the element size for ``int``)
_DTYPES: dict[str, torch.dtype] = {
    "float": torch.float32, "double": torch.float64, "c10::Half": torch.float16,
    "c10::BFloat16": torch.bfloat16, "long": torch.int64, "long int": torch.int64,
    "short": torch.int16, "signed char": torch.int8, "unsigned char": torch.uint8, "bool": torch.bool,
    "c10::complex<float>": torch.complex64, "c10::complex<double>": torch.complex128,
}
_INT_BY_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_SPIN_MIN_NS, _SPIN_MAX_NS = 20_000, 200_000


class _NotBuildable(Exception):
    """An argument the replay cannot build (an opaque object, an unknown type)."""


class HostWork:
    """Holds the calling thread until a given ``time.monotonic_ns``: it sleeps, then spins
    through the last ``tail_ns``.  The tail follows how late this thread's recent sleeps woke
    (the 90th percentile of the last 32, plus 10 us, kept between 20 us and 200 us): on a quiet
    machine a sleep ends within a few us and the thread spins 20 us, leaving the cores to
    gloo's threads; where sleeps wake late (other jobs hold the cores) it spins longer, so that
    its nodes still end on time.  With an ``inbox`` the sleep is a wait on that queue, so that
    the thread can take what arrives there while it holds (the replay's main thread issues the
    nodes that other threads' completions make ready)."""

    def __init__(self) -> None:
        self.tail_ns = _SPIN_MIN_NS
        self._late: deque[int] = deque(maxlen=32)

    def until(self, until_ns: int, inbox: queue.SimpleQueue | None = None, spin_ns: int = 0) -> Any:
        """Return None when ``time.monotonic_ns()`` reaches ``until_ns``; with ``inbox``, return
        earlier with an item put there before the spun tail began (call again to go on); the
        tail is at least ``spin_ns``."""
        tail = max(self.tail_ns, spin_ns)
        left = until_ns - time.monotonic_ns()
        if left > tail:
            wake = until_ns - tail
            if inbox is None:
                time.sleep((left - tail) / 1e9)
            else:
                try:
                    return inbox.get(timeout=(left - tail) / 1e9)
                except queue.Empty:
                    pass
            self._woke(time.monotonic_ns() - wake)
        while time.monotonic_ns() < until_ns:
            pass
        return None

    def _woke(self, late_ns: int) -> None:
        self._late.append(late_ns)
        if len(self._late) % 8 == 0:
            p90 = sorted(self._late)[int(0.9 * len(self._late))]
            self.tail_ns = min(max(p90 + 10_000, _SPIN_MIN_NS), _SPIN_MAX_NS)


def _dtype(inner: str, itemsize: int) -> torch.dtype:
    if inner == "int":
        return _INT_BY_SIZE.get(itemsize, torch.int32)
    if inner in _DTYPES:
        return _DTYPES[inner]
    raise _NotBuildable(inner)


def _tensor(value: Any, shape: Any, inner: str, device: torch.device, gen: torch.Generator) -> torch.Tensor:
    """A seeded tensor of ``shape``; the storage holds the recorded numel when that is larger
    (views with offsets, ``as_strided``)."""
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise _NotBuildable("shape")
    itemsize = value[4] if isinstance(value, list) and len(value) > 4 and isinstance(value[4], int) else 4
    dtype = _dtype(inner, itemsize)
    numel = math.prod(shape)
    stored = value[3] + value[2] if isinstance(value, list) and len(value) > 3 and isinstance(value[3], int) else 0
    total = max(numel, stored)
    if dtype.is_floating_point or dtype.is_complex:
        flat = torch.randn(total, generator=gen, dtype=torch.float32).to(dtype)
    elif dtype == torch.bool:
        flat = torch.randint(0, 2, (total,), generator=gen).bool()
    else:
        flat = torch.randint(0, 8, (total,), generator=gen).to(dtype)
    return flat.to(device)[:numel].view(shape) if total else torch.empty(shape, dtype=dtype, device=device)


def _argument(typ: str, value: Any, shape: Any, device: torch.device, gen: torch.Generator) -> Any:
    if typ.startswith("Tensor(") and typ.endswith(")"):
        return _tensor(value, shape, typ[7:-1], device, gen)
    if typ.startswith("GenericList[") and typ.endswith("]"):
        inner = _split_types(typ[12:-1])
        if not isinstance(value, list):
            raise _NotBuildable(typ)
        if inner and all(t.startswith("Tensor(") for t in inner):
            shapes = shape if isinstance(shape, list) else [None] * len(value)
            return [_tensor(v, s, t[7:-1], device, gen) for v, s, t in zip(value, shapes, inner)]
        if all(t in ("Int", "Double", "Bool") for t in inner):
            return list(value)
        raise _NotBuildable(typ)
    if typ in ("Int", "Double", "Bool", "String"):
        return value
    if typ == "None":
        return None
    if typ == "Device":
        return device
    raise _NotBuildable(typ)


def _split_types(text: str) -> list[str]:
    """``Tensor(float),Tensor(float)`` -> the two, brackets kept together."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur += ch
    if cur:
        out.append(cur)
    return out


def build_real_op(op: dict[str, Any], device: torch.device, gen: torch.Generator,
                  budget_bytes: int) -> tuple[Callable[[], Any] | None, int]:
    """The call of the recorded operator with freshly built arguments and the bytes its tensors
    hold; the call is None when it cannot be built, its tensors would pass ``budget_bytes`` (the
    bytes are then those it would need), or no overload accepts them in a trial call."""
    name = op["name"]
    if not name.startswith("aten::"):
        return None, 0
    base = name[6:].split(".")[0]
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return None, 0
    try:
        types = ast.literal_eval(op["types"])
        values = ast.literal_eval(op["values"])
        shapes = ast.literal_eval(op["shapes"])
        need = _recorded_bytes(types, values)
        if need > budget_bytes:
            return None, need
        args = [_argument(t, v, s, device, gen) for t, v, s in zip(types, values, shapes)]
    except (ValueError, SyntaxError, TypeError, _NotBuildable, RuntimeError, IndexError):
        return None, 0
    nbytes = _recorded_bytes(types, values)
    for overload in packet.overloads():
        call = _bind(getattr(packet, overload), args)
        if call is None:
            continue
        try:
            call()
        except Exception:  # noqa: BLE001 - any failure of the trial call: try the next overload
            continue
        return call, nbytes
    return None, 0


def _recorded_bytes(types: Any, values: Any) -> int:
    """Bytes of the tensors of a recorded argument list (numel x element size, storage offset
    included), as the execution trace gives them."""
    total = 0
    for t, v in zip(types, values):
        items = v if isinstance(t, str) and t.startswith("GenericList[") and isinstance(v, list) else [v]
        for x in items:
            if isinstance(x, list) and len(x) > 4 and all(isinstance(k, int) for k in x[2:5]):
                total += (x[2] + x[3]) * x[4]
    return total


def _bind(fn: Any, recorded: list[Any]) -> Callable[[], Any] | None:
    """``fn`` called with the recorded arguments laid onto its schema: the trace records every
    argument in schema order, keyword-only ones (``dtype``, ``out``) included; codes of
    ScalarType, Layout and MemoryFormat become torch's objects."""
    params = fn._schema.arguments
    if len(recorded) > len(params):
        return None
    pos: list[Any] = []
    kw: dict[str, Any] = {}
    for p, value in zip(params, recorded):
        value = _typed(str(p.type), value)
        if p.kwarg_only:
            if value is not None:
                kw[p.name] = value
        elif kw:
            return None
        else:
            pos.append(value)
    return lambda: fn(*pos, **kw)


def _typed(schema_type: str, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        if "ScalarType" in schema_type and 0 <= value < len(_SCALAR_TYPES):
            return _SCALAR_TYPES[value]
        if "Layout" in schema_type:
            return torch.strided
        if "MemoryFormat" in schema_type and 0 <= value < len(_MEMORY_FORMATS):
            return _MEMORY_FORMATS[value]
    return value


#: c10::ScalarType codes, in their enum order (the codes the execution trace records)
_SCALAR_TYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
                 torch.float64, torch.complex32, torch.complex64, torch.complex128, torch.bool)
_MEMORY_FORMATS = (torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d)


class Runner:
    """Runs compute and memory nodes on ``device`` with the calibration ``cal``
    (``{"matmul_n", "matmul_ns"}``), syncing CUDA work before a node counts as done."""

    def __init__(self, device: torch.device, cal: dict[str, Any] | None, sizing: str):
        self.device = device
        self.cal = cal
        self.sizing = sizing
        self._a: torch.Tensor | None = None
        self._buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def sync(self) -> None:
        """Wait for the device's queued work (no-op on the CPU)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def kernel_iterations(self, dur_ns: int, spec: dict[str, Any]) -> int:
        """How many calibrated matmuls stand for the node."""
        cal = self.cal or {}
        n, t = int(cal.get("matmul_n", 128)), max(float(cal.get("matmul_ns", 1.0)), 1.0)
        ops = spec.get("num_ops")
        if self.sizing == "work" and ops:
            return max(1, math.ceil(ops / (2 * n ** 3)))
        return max(0, round(dur_ns / t))

    def kernel(self, iterations: int) -> None:
        """``iterations`` matmuls of the calibrated size."""
        if self._a is None:
            n = int((self.cal or {}).get("matmul_n", 128))
            self._a = torch.randn(n, n, device=self.device)
        a = self._a
        for _ in range(iterations):
            torch.mm(a, a)
        self.sync()

    def copy(self, nbytes: int) -> None:
        """Copy ``nbytes`` bytes between two buffers of the device."""
        pair = self._buffers.get(nbytes)
        if pair is None:
            pair = (torch.empty(nbytes, dtype=torch.uint8, device=self.device),
                    torch.ones(nbytes, dtype=torch.uint8, device=self.device))
            self._buffers[nbytes] = pair
        pair[0].copy_(pair[1])
        self.sync()
