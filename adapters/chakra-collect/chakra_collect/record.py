"""Record a PyTorch host execution trace and a Kineto trace for N steps of a training loop."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.profiler import ExecutionTraceObserver, profile

__all__ = ["Recorder", "record_steps", "raw_paths"]


def raw_paths(out_dir: str | os.PathLike, rank: int) -> tuple[Path, Path]:
    """The raw files of ``rank`` under ``out_dir``: ``(host ET, Kineto trace)``, both gzipped JSON."""
    out = Path(out_dir)
    return out / f"pytorch_et.{rank}.json.gz", out / f"kineto.{rank}.json.gz"


def _current_rank() -> int:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


class Recorder:
    """Profile a training loop: ``warmup`` steps unrecorded, then ``steps`` steps recorded.

    Use as a context manager around the loop and call :meth:`step` once after every training
    step; the recorder stops by itself after ``warmup + steps`` steps::

        with Recorder("traces/", steps=2) as rec:
            for batch in loader:
                train_step(batch)
                if not rec.step():
                    break

    On exit the host ET (``pytorch_et.RANK.json.gz``) and the Kineto trace
    (``kineto.RANK.json.gz``) are in ``out_dir`` (see :func:`raw_paths`) and, with
    ``convert=True``, the Chakra ET ``trace.RANK.et`` converted from them (``self.et_out``).

    In a job of several ranks (``torch.distributed`` initialised), with ``align`` (and
    ``warmup`` >= 1) the ranks wait for each other after the profiler has started recording and
    before the first recorded step's span opens, so that every rank's recorded steps begin
    together (a rank whose warm-up, or whose switch to recording, ended later would otherwise
    start its recorded steps later, and its first collective would make the others wait that
    long).  After the last recorded step the
    profiler stays on ``settle_s`` seconds, outside every step, before it stops: a gloo worker
    thread closes its ``gloo:*`` annotation after the issuing thread has been woken, and an
    annotation still open when the profiler stops is lost to the host ET.
    """

    def __init__(self, out_dir: str | os.PathLike, steps: int = 1, warmup: int = 1,
                 rank: int | None = None, record_shapes: bool = True, convert: bool = False,
                 align: bool = True, settle_s: float = 0.1):
        if steps < 1 or warmup < 0 or settle_s < 0:
            raise ValueError("steps must be >= 1, warmup >= 0 and settle_s >= 0")
        self.out_dir = Path(out_dir)
        self.steps = steps
        self.warmup = warmup
        self.rank = rank
        self.record_shapes = record_shapes
        self.convert = convert
        self.align = align
        self.settle_s = settle_s
        self.et_out: Path | None = None
        self._count = 0
        self._prof: profile | None = None
        self._et: ExecutionTraceObserver | None = None

    def __enter__(self) -> Recorder:
        import torch
        from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule

        if self.rank is None:
            self.rank = _current_rank()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        et_path, kineto_path = raw_paths(self.out_dir, self.rank)
        self.et_path, self.kineto_path = et_path, kineto_path
        from torch._C._profiler import _ExperimentalConfig

        activities = [ProfilerActivity.CPU]
        cuda = torch.cuda.is_available()
        if cuda:
            activities.append(ProfilerActivity.CUDA)
        # ops of every thread (autograd's device threads, user threads), and on GPUs Kineto's
        # cuda_sync events (stream/event/device syncs, stream waits) for the dependencies
        config = _ExperimentalConfig(enable_cuda_sync_events=cuda, profile_all_threads=True)
        self._et = ExecutionTraceObserver().register_callback(str(et_path))
        self._prof = profile(
            activities=activities,
            record_shapes=self.record_shapes,
            execution_trace_observer=self._et,
            schedule=schedule(wait=0, warmup=self.warmup, active=self.steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(kineto_path)),
            acc_events=True,
            experimental_config=config,
        )
        self._prof.__enter__()
        return self

    def step(self) -> bool:
        """Mark the end of one training step; False once all recorded steps are done."""
        if self._prof is None:
            raise RuntimeError("Recorder.step() called outside its 'with' block")
        last = self.warmup + self.steps
        if self._count < last:
            self._count += 1
            if self._count == last:
                self._settle()
            elif self._count == self.warmup and self.align and _world_size() > 1:
                self._aligned_start()
            else:
                self._prof.step()
        return self._count < last

    def _close_step(self) -> None:
        """End the open ``ProfilerStep`` span (as the profiler's ``step()`` does)."""
        prof = self._prof
        assert prof is not None
        if prof.step_rec_fn is not None:
            prof.step_rec_fn.__exit__(None, None, None)
            prof.step_rec_fn = None

    def _aligned_start(self) -> None:
        """Start recording, wait for every rank, then open the first recorded step's span.

        The profiler's switch to recording takes each rank its own time (milliseconds on a busy
        machine), so the ranks meet after it, on the job's store: a barrier the profiler does
        not record (a c10d barrier would be a collective of the trace)."""
        import torch
        from torch.distributed.distributed_c10d import _get_default_store

        prof = self._prof
        assert prof is not None
        self._close_step()
        prof.record_steps = False
        prof.step()
        prof.record_steps = True
        _store_barrier(_get_default_store())
        prof.step_rec_fn = torch.autograd.profiler.record_function(f"ProfilerStep#{prof.step_num}")
        prof.step_rec_fn.__enter__()

    def _settle(self) -> None:
        """End the last recorded step and keep profiling ``settle_s`` outside any step."""
        prof = self._prof
        assert prof is not None
        self._close_step()
        prof.record_steps = False  # the profiler's stop opens no ProfilerStep span
        time.sleep(self.settle_s)

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._prof is not None and self._et is not None
        self._prof.__exit__(exc_type, exc, tb)
        self._et.unregister_callback()
        self._prof = None
        if exc_type is None and self.convert:
            from .convert import write_chakra

            assert self.rank is not None
            self.et_out = write_chakra(self.out_dir, self.rank)


def _world_size() -> int:
    """Ranks of the default group (1 without torch.distributed)."""
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


_ALIGNED = 0  # recordings aligned so far by this process (every rank counts alike)


def _store_barrier(store) -> None:
    """Wait on ``store`` until every rank of the default group has arrived."""
    import torch.distributed as dist

    global _ALIGNED
    _ALIGNED += 1
    key = f"chakra_collect/align/{_ALIGNED}"
    if store.add(key, 1) == dist.get_world_size():
        store.set(f"{key}/all", "1")
    store.wait([f"{key}/all"])


def record_steps(step_fn: Callable[[], object], out_dir: str | os.PathLike, steps: int = 1,
                 warmup: int = 1, rank: int | None = None, convert: bool = False, align: bool = True,
                 settle_s: float = 0.1) -> tuple[Path, Path]:
    """Call ``step_fn()`` ``warmup + steps`` times, recording the last ``steps`` (``align`` and
    ``settle_s`` as for :class:`Recorder`).

    Returns the paths of the host ET and the Kineto trace written (gzipped JSON); with
    ``convert=True`` the Chakra ET ``trace.RANK.et`` is written beside them too.
    """
    with Recorder(out_dir, steps=steps, warmup=warmup, rank=rank, convert=convert, align=align,
                  settle_s=settle_s) as rec:
        for _ in range(warmup + steps):
            step_fn()
            rec.step()
    return rec.et_path, rec.kineto_path
