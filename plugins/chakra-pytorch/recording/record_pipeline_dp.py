"""Record the ``pipeline_dp`` fixture: 2 pipeline stages x 2 data-parallel replicas on 4 gloo ranks.

Rank r is stage ``r % 2`` of replica ``r // 2``: ranks 0 -> 1 and 2 -> 3 are the two pipelines,
ranks {0, 2} and {1, 3} the data-parallel groups (``new_group([0, 2])`` and ``new_group([1, 3])``).
Stage 0 is Linear(16, 32) -> ReLU, stage 1 Linear(32, 4) and an MSE loss; batch 8 in 2
micro-batches of 4.  Per micro-batch the forward activations (4 x 32 float32 = 512 bytes) go
from stage 0 to stage 1 (``send``/``recv``, tag 1) and their gradients back (tag 2); then each
stage all-reduces its flattened parameter gradients in its data-parallel group (stage 0: 544
float32 = 2176 bytes, stage 1: 132 = 528 bytes) and takes an SGD step.  1 warm-up step, 2
recorded.  Writes tests/data/pipeline_dp/ (ranks 0-3).
"""

import torch
from _common import out_dir, run_ranks

from chakra_collect import record_steps

STEPS = 2
MICRO = 2
BATCH = 8


def _stage(stage: int) -> torch.nn.Module:
    torch.manual_seed(stage)
    if stage == 0:
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU())
    return torch.nn.Linear(32, 4)


def step_fn(rank: int, model: torch.nn.Module, group, opt):
    import torch.distributed as dist

    stage, peer = rank % 2, rank ^ 1
    torch.manual_seed(100 + rank)
    xs = torch.randn(BATCH, 16).chunk(MICRO)
    ys = torch.randn(BATCH, 4).chunk(MICRO)

    def step() -> None:
        opt.zero_grad()
        for x, y in zip(xs, ys):
            if stage == 0:
                h = model(x)
                dist.send(h.detach(), dst=peer, tag=1)
                grad = torch.empty_like(h)
                dist.recv(grad, src=peer, tag=2)
                h.backward(grad)
            else:
                h = torch.empty(x.shape[0], 32)
                dist.recv(h, src=peer, tag=1)
                h.requires_grad_(True)
                torch.nn.functional.mse_loss(model(h), y).backward()
                dist.send(h.grad, dst=peer, tag=2)
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        dist.all_reduce(flat, group=group)
        flat /= 2
        offset = 0
        for p in model.parameters():
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        opt.step()

    return step


def train(rank: int, world: int, out: str, steps: int) -> None:
    import torch.distributed as dist

    groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    model = _stage(rank % 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    record_steps(step_fn(rank, model, groups[rank % 2], opt), out, steps=steps, warmup=1, rank=rank)


if __name__ == "__main__":
    run_ranks(4, train, str(out_dir("pipeline_dp")), STEPS)
