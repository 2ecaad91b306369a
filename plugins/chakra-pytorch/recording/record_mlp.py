"""Record the ``mlp`` fixture: one SGD step of a 2-layer MLP on the CPU (torch 2.13.0).

Model: Linear(16, 32) -> ReLU -> Linear(32, 4), batch 8, MSE loss; 1 warm-up step, 1 recorded.
Writes tests/data/mlp/pytorch_et.0.json.gz and kineto.0.json.gz.
"""

import torch
from _common import out_dir, sgd_step

from chakra_collect import record_steps


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    record_steps(sgd_step(model, opt, x, y), out_dir("mlp"), steps=1, warmup=1, rank=0)


if __name__ == "__main__":
    main()
