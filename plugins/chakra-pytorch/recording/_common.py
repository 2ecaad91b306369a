"""Shared helpers of the recording scripts: output folders and gloo jobs on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"
sys.path.insert(0, str(HERE.parents[2] / "adapters" / "chakra-collect"))


def out_dir(name: str) -> Path:
    """The fixture folder ``tests/data/<name>`` (or the folder given as the first argument)."""
    return Path(sys.argv[1]) if len(sys.argv) > 1 else DATA / name


def steps_and_dir(name: str) -> tuple[int, Path]:
    """``--steps N`` (default 1) and the fixture folder: ``tests/data/<name>`` for one step,
    ``tests/data/<name>_steps`` for more, or the folder given as the other argument."""
    argv = sys.argv[1:]
    steps = 1
    if "--steps" in argv:
        k = argv.index("--steps")
        steps = int(argv[k + 1])
        del argv[k:k + 2]
    if argv:
        return steps, Path(argv[0])
    return steps, DATA / (name if steps == 1 else f"{name}_steps")


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_ranks(fn, *args) -> None:
    """Run ``fn(rank, world_size, *args)`` in 2 processes joined by gloo over 127.0.0.1."""
    run_ranks(2, fn, *args)


def run_ranks(world: int, fn, *args) -> None:
    """Run ``fn(rank, world, *args)`` in ``world`` processes joined by gloo over 127.0.0.1."""
    import torch.multiprocessing as mp

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    mp.spawn(_entry, args=(world, fn, args), nprocs=world, join=True)


def _entry(rank: int, world: int, fn, args) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        fn(rank, world, *args)
    finally:
        dist.destroy_process_group()


def sgd_step(model, opt, x, y):
    """One training step of ``model`` on ``(x, y)``: MSE loss, backward, ``opt.step()``."""
    import torch

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    return step
