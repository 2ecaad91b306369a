"""chakra_collect on a 2-rank DDP job (gloo over 127.0.0.1): each rank writes its own ET."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, get_int, open_traceset, validate

pytest.importorskip("torch")

_JOB = textwrap.dedent('''
    import os, socket, sys
    import torch, torch.distributed as dist, torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
    from chakra_collect import record_steps

    def run(rank, out):
        torch.set_num_threads(1)
        dist.init_process_group("gloo", rank=rank, world_size=2)
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(4, 8), torch.randn(4, 2)
        def step():
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        record_steps(step, out, steps=2, warmup=1, convert=True)
        dist.destroy_process_group()

    if __name__ == "__main__":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        mp.spawn(run, args=(sys.argv[1],), nprocs=2, join=True)
''')


def test_two_ranks_write_a_valid_set(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(_JOB)
    out = tmp_path / "traces"
    subprocess.run([sys.executable, str(script), str(out)], check=True, timeout=240,
                   capture_output=True)
    assert sorted(p.name for p in out.glob("trace.*.et")) == ["trace.0.et", "trace.1.et"]
    ts = open_traceset(str(out / "trace"))
    assert [str(f) for f in validate(ts)] == []
    params = (8 * 16 + 16 + 16 * 2 + 2) * 4  # bytes of the model's float32 parameters
    for rank in ts.ranks:
        ar = [n for n in ts[rank].nodes() if n.type == NodeType.COMM_COLL_NODE
              and get_int(n, "comm_type") == CommType.ALL_REDUCE]
        assert [get_int(n, "comm_size") for n in ar] == [params, params]  # one bucket per step
    assert Path(out / "pytorch_et.1.json.gz").exists() and Path(out / "kineto.1.json.gz").exists()
