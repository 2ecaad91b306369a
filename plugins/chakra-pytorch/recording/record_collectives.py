"""Record the ``collectives`` fixture: every collective and point-to-point kind on 2 gloo ranks.

One recorded step calls, in this order, on float32 tensors (sizes in elements, see SIZES):
all_reduce, broadcast (src 0), all_gather, all_gather_into_tensor, reduce_scatter,
reduce_scatter_tensor, all_to_all, all_to_all_single, reduce (dst 0), gather (dst 0),
scatter (src 0), barrier, send/recv (0 -> 1, tag 7), isend/irecv (1 -> 0, tag 9),
batch_isend_irecv (both directions, tag 11), and all_reduce on a second group made by
new_group([0, 1]).  Writes tests/data/collectives/ (rank 0, 1); with ``--steps N`` N recorded
steps into tests/data/collectives_steps/.
"""

import torch
from _common import run_two_ranks, steps_and_dir

#: elements per call (the per-rank shard for gathers/scatters, the whole buffer otherwise)
SIZES = {
    "all_reduce": 1000, "broadcast": 200, "all_gather": 30, "all_gather_into_tensor": 40,
    "reduce_scatter": 50, "reduce_scatter_tensor": 60, "all_to_all": 70,
    "all_to_all_single": 80, "reduce": 90, "gather": 100, "scatter": 110,
    "send": 120, "isend": 130, "batch": 140, "group_all_reduce": 150,
}


def step_fn(rank: int, world: int, group):
    import torch.distributed as dist

    def t(n: int) -> torch.Tensor:
        return torch.ones(n)

    def step() -> None:
        dist.all_reduce(t(SIZES["all_reduce"]))
        dist.broadcast(t(SIZES["broadcast"]), src=0)
        n = SIZES["all_gather"]
        dist.all_gather([t(n) for _ in range(world)], t(n))
        n = SIZES["all_gather_into_tensor"]
        dist.all_gather_into_tensor(t(n * world), t(n))
        n = SIZES["reduce_scatter"]
        dist.reduce_scatter(t(n), [t(n) for _ in range(world)])
        n = SIZES["reduce_scatter_tensor"]
        dist.reduce_scatter_tensor(t(n), t(n * world))
        n = SIZES["all_to_all"]
        dist.all_to_all([t(n) for _ in range(world)], [t(n) for _ in range(world)])
        n = SIZES["all_to_all_single"]
        dist.all_to_all_single(t(n * world), t(n * world))
        dist.reduce(t(SIZES["reduce"]), dst=0)
        n = SIZES["gather"]
        dist.gather(t(n), [t(n) for _ in range(world)] if rank == 0 else None, dst=0)
        n = SIZES["scatter"]
        dist.scatter(t(n), [t(n) for _ in range(world)] if rank == 0 else None, src=0)
        dist.barrier()
        n = SIZES["send"]
        if rank == 0:
            dist.send(t(n), dst=1, tag=7)
        else:
            dist.recv(t(n), src=0, tag=7)
        n = SIZES["isend"]
        work = dist.isend(t(n), dst=0, tag=9) if rank == 1 else dist.irecv(t(n), src=1, tag=9)
        work.wait()
        n = SIZES["batch"]
        peer = 1 - rank
        ops = [dist.P2POp(dist.isend, t(n), peer, tag=11), dist.P2POp(dist.irecv, t(n), peer, tag=11)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        dist.all_reduce(t(SIZES["group_all_reduce"]), group=group)

    return step


def run(rank: int, world: int, out: str, steps: int) -> None:
    import torch.distributed as dist

    from chakra_collect import record_steps

    group = dist.new_group([0, 1])
    record_steps(step_fn(rank, world, group), out, steps=steps, warmup=1, rank=rank)


if __name__ == "__main__":
    steps, out = steps_and_dir("collectives")
    run_two_ranks(run, str(out), steps)
