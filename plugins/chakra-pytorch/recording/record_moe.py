"""Record the ``moe`` fixture: a mixture-of-experts layer whose token dispatch is uneven, 4 gloo ranks.

Each rank holds ``TOKENS`` tokens of width ``WIDTH`` and one expert (a linear layer). A router
(a linear layer seeded per rank) sends each token to the expert of its highest score, so each
rank sends a different number of tokens to each other rank: ``all_to_all_single`` with uneven
split sizes, as an MoE layer's dispatch does, then the experts' outputs go back by the reverse
splits (the combine), and the gradients of the shared router are all-reduced. The split sizes
of each rank are written beside the folder, to ``moe_splits.json`` (rank -> the dispatch's input
and output splits, in tokens), the facts the tests check the converted sizes against (inside
the folder, a conversion would skip it with a warning).  Writes tests/data/moe/ (ranks 0-3).
"""

import json

import torch
from _common import out_dir, run_ranks

TOKENS, WIDTH, WORLD = 32, 16, 4


def step_fn(rank: int, world: int, splits: dict):
    import torch.distributed as dist

    torch.manual_seed(100 + rank)
    tokens = torch.randn(TOKENS, WIDTH)
    torch.manual_seed(0)
    router = torch.nn.Linear(WIDTH, world)
    expert = torch.nn.Linear(WIDTH, WIDTH)

    def step() -> None:
        dest = router(tokens).argmax(dim=1)
        order = torch.argsort(dest, stable=True)
        send = torch.bincount(dest, minlength=world)
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)  # how many tokens each rank will get (even: 1 each)
        ins, outs = send.tolist(), recv.tolist()
        splits[rank] = {"input_splits": ins, "output_splits": outs}
        got = torch.empty(sum(outs), WIDTH)
        dist.all_to_all_single(got, tokens[order].contiguous(), output_split_sizes=outs, input_split_sizes=ins)
        done = expert(got).relu()
        back = torch.empty(TOKENS, WIDTH)
        dist.all_to_all_single(back, done.detach().contiguous(), output_split_sizes=ins, input_split_sizes=outs)
        loss = back.sum() + router(tokens).sum()
        loss.backward()
        for p in router.parameters():
            dist.all_reduce(p.grad)
            p.grad = None

    return step


def run(rank: int, world: int, out: str) -> None:
    from chakra_collect import record_steps

    splits: dict = {}
    record_steps(step_fn(rank, world, splits), out, steps=1, warmup=1, rank=rank)
    with open(f"{out}/splits.{rank}.json", "w") as f:
        json.dump(splits[rank], f)


def merge(out: str) -> None:
    """Join the ranks' split files into ``NAME_splits.json`` beside the folder ``out``."""
    from pathlib import Path

    parts = {r: json.loads(Path(f"{out}/splits.{r}.json").read_text()) for r in range(WORLD)}
    folder = Path(out)
    facts = {"tokens": TOKENS, "width": WIDTH, "bytes_per_value": 4, "ranks": parts}
    (folder.parent / f"{folder.name}_splits.json").write_text(json.dumps(facts, indent=1) + "\n")
    for r in range(WORLD):
        Path(f"{out}/splits.{r}.json").unlink()


if __name__ == "__main__":
    out = out_dir("moe")
    out.mkdir(parents=True, exist_ok=True)
    run_ranks(WORLD, run, str(out))
    merge(str(out))
