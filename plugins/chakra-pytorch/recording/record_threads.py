"""Record the ``threads`` fixture: forward on the main thread, backward on a second thread.

Model: Linear(16, 32) -> ReLU -> Linear(32, 4), batch 8; each step runs the forward pass on the
main thread, then ``loss.backward()`` in a ``threading.Thread`` that the main thread joins, then
the SGD step on the main thread; 1 warm-up step, 1 recorded.  Writes tests/data/threads/.
"""

import threading

import torch
from _common import out_dir

from chakra_collect import record_steps


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def step() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        worker = threading.Thread(target=loss.backward)
        worker.start()
        worker.join()
        opt.step()

    record_steps(step, out_dir("threads"), steps=1, warmup=1, rank=0)


if __name__ == "__main__":
    main()
