"""Record the ``transformer`` fixture: one AdamW step of one transformer encoder layer (CPU).

Layer: nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128), input (4, 16, 64),
AdamW(foreach=False); 1 warm-up step, 1 recorded.  Writes tests/data/transformer/.
"""

import torch
from _common import out_dir

from chakra_collect import record_steps


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             batch_first=True, dropout=0.0)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(4, 16, 64)

    def step() -> None:
        opt.zero_grad()
        layer(x).pow(2).mean().backward()
        opt.step()

    record_steps(step, out_dir("transformer"), steps=1, warmup=1, rank=0)


if __name__ == "__main__":
    main()
