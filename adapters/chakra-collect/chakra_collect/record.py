"""Record a PyTorch host execution trace and a Kineto trace for N steps of a training loop."""

from __future__ import annotations

import os
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
    """

    def __init__(self, out_dir: str | os.PathLike, steps: int = 1, warmup: int = 1,
                 rank: int | None = None, record_shapes: bool = True, convert: bool = False):
        if steps < 1 or warmup < 0:
            raise ValueError("steps must be >= 1 and warmup >= 0")
        self.out_dir = Path(out_dir)
        self.steps = steps
        self.warmup = warmup
        self.rank = rank
        self.record_shapes = record_shapes
        self.convert = convert
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
        if self._count < self.warmup + self.steps:
            self._prof.step()
            self._count += 1
        return self._count < self.warmup + self.steps

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._prof is not None and self._et is not None
        self._prof.__exit__(exc_type, exc, tb)
        self._et.unregister_callback()
        self._prof = None
        if exc_type is None and self.convert:
            from .convert import write_chakra

            assert self.rank is not None
            self.et_out = write_chakra(self.out_dir, self.rank)


def record_steps(step_fn: Callable[[], object], out_dir: str | os.PathLike, steps: int = 1,
                 warmup: int = 1, rank: int | None = None, convert: bool = False
                 ) -> tuple[Path, Path]:
    """Call ``step_fn()`` ``warmup + steps`` times, recording the last ``steps``.

    Returns the paths of the host ET and the Kineto trace written (gzipped JSON); with
    ``convert=True`` the Chakra ET ``trace.RANK.et`` is written beside them too.
    """
    with Recorder(out_dir, steps=steps, warmup=warmup, rank=rank, convert=convert) as rec:
        for _ in range(warmup + steps):
            step_fn()
            rec.step()
    return rec.et_path, rec.kineto_path
