"""Record the ``ddp_buckets`` fixture: DDP with small gradient buckets on 2 gloo ranks (CPU).

Model: Linear(16, 32) -> ReLU -> Linear(32, 32) -> ReLU -> Linear(32, 4) (1732 float32
parameters = 6928 bytes), ``bucket_cap_mb=0.002`` so that the gradients travel in several
all-reduces that overlap the backward pass; batch 8 per rank, SGD; 1 warm-up step, 1 recorded.
Writes tests/data/ddp_buckets/ (rank 0, 1); with ``--steps N`` N recorded steps into
tests/data/ddp_buckets_steps/.
"""

import torch
from _common import run_two_ranks, sgd_step, steps_and_dir

from chakra_collect import record_steps


def train(rank: int, world: int, out: str, steps: int) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                              torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = DDP(net, bucket_cap_mb=0.002)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(rank)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    record_steps(sgd_step(model, opt, x, y), out, steps=steps, warmup=1, rank=rank)


if __name__ == "__main__":
    steps, out = steps_and_dir("ddp_buckets")
    run_two_ranks(train, str(out), steps)
