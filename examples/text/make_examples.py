"""Write the example ASTRA-sim 1.0 text workloads of this folder (run from anywhere).

They are ours, shaped like the public ResNet-50, GPT-3 and DLRM text workloads: compute times
in cycles of 1 ns, estimated from each layer's FLOPs on a 100 TFLOP/s accelerator, and
collective sizes from the layer's parameters (fp16, 2 bytes each) or activations.

    python examples/text/make_examples.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOPS_PER_NS = 100e3  # 100 TFLOP/s


def _ns(flops: float) -> int:
    return max(1, round(flops / FLOPS_PER_NS))


def _line(name, fwd, fwd_c, ig, ig_c, wg, wg_c, update=10):
    cols = [name, "-1", fwd, *fwd_c, ig, *ig_c, wg, *wg_c, update]
    return "\t".join(str(c) for c in cols)


NONE = ("NONE", 0)


def resnet50(batch: int = 32) -> str:
    """DATA-parallel ResNet-50: 53 convolutions and the classifier, one all-reduce per layer."""
    rows = []
    hw = 112

    def conv(name, cin, cout, k, hw_out):
        params = cin * cout * k * k
        flops = 2 * params * hw_out * hw_out * batch
        rows.append(_line(name, _ns(flops), NONE, _ns(flops), NONE, _ns(flops), ("ALLREDUCE", 2 * params)))

    conv("conv1", 3, 64, 7, hw)
    hw = 56
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), 2):
        for b in range(blocks):
            if b == 0 and stage > 2:
                hw //= 2
            out = width * 4
            conv(f"res{stage}{chr(97 + b)}_branch2a", cin, width, 1, hw)
            conv(f"res{stage}{chr(97 + b)}_branch2b", width, width, 3, hw)
            conv(f"res{stage}{chr(97 + b)}_branch2c", width, out, 1, hw)
            if b == 0:
                conv(f"res{stage}a_branch1", cin, out, 1, hw)
            cin = out
    params = 2048 * 1000
    flops = 2 * params * batch
    rows.append(_line("fc1000", _ns(flops), NONE, _ns(flops), NONE, _ns(flops), ("ALLREDUCE", 2 * params)))
    return "DATA\n" + f"{len(rows)}\n" + "\n".join(rows) + "\n"


def gpt3(blocks: int = 96, hidden: int = 12288, seq: int = 2048, vocab: int = 50257, tp: int = 8,
         segment: int = 8) -> str:
    """GPT-3 175B, Megatron tensor parallelism of ``tp`` with activation checkpointing.

    Per block: QKV and MLP-up are column-parallel (input-gradient all-reduce in the model-parallel
    group), attention projection and MLP-down are row-parallel (forward all-reduce); every
    layer's weight gradient is all-reduced across the data-parallel group.  Each ``segment`` of
    blocks is a checkpoint: its forward pass is recomputed before its backward pass.
    """
    act = 2 * seq * hidden  # one micro-batch's activations, fp16
    rows = []
    p = vocab * hidden // tp
    rows.append(_line("embedding", _ns(2 * p * seq / vocab), ("ALLREDUCE", act), 1, NONE, 1,
                      ("ALLREDUCE", 2 * p)))
    per_block = {
        "attn_qkv": (3 * hidden * hidden // tp, NONE, ("ALLREDUCE", act)),
        "attn_proj": (hidden * hidden // tp, ("ALLREDUCE", act), NONE),
        "mlp_up": (4 * hidden * hidden // tp, NONE, ("ALLREDUCE", act)),
        "mlp_down": (4 * hidden * hidden // tp, ("ALLREDUCE", act), NONE),
    }
    checkpoints, initiates = [], []
    for b in range(blocks):
        if b % segment == 0:
            checkpoints.append(len(rows))
        for name, (params, fwd_c, ig_c) in per_block.items():
            flops = 2 * params * seq
            if name == "attn_proj":
                flops += 4 * seq * seq * hidden // tp  # attention scores and context
            rows.append(_line(f"block{b}_{name}", _ns(flops), fwd_c, _ns(flops), ig_c, _ns(flops),
                              ("ALLREDUCE", 2 * params)))
        if b % segment == segment - 1:
            initiates.append(len(rows) - 1)
    p = vocab * hidden // tp
    rows.append(_line("lm_head", _ns(2 * p * seq), ("ALLGATHER", 2 * seq * vocab // tp), _ns(2 * p * seq),
                      ("ALLREDUCE", act), _ns(2 * p * seq), ("ALLREDUCE", 2 * p)))
    head = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} "
            f"checkpoints: {len(checkpoints)} {' '.join(map(str, checkpoints))} "
            f"checkpoint_initiates: {len(initiates)} {' '.join(map(str, initiates))}")
    return head + "\n" + f"{len(rows)}\n" + "\n".join(rows) + "\n"


def dlrm(batch: int = 2048, tables: int = 64, dim: int = 128, bottom=(13, 512, 256, 128),
         top=(1024, 1024, 512, 256, 1)) -> str:
    """DLRM: sharded embedding tables (all-to-all), data-parallel bottom and top MLPs.

    Layer 0 is the embedding lookup: its forward and input-gradient collectives are the
    all-to-alls; the index on line 1 is the last bottom-MLP layer.
    """
    rows = []
    emb = batch * tables * dim * 2
    rows.append(_line("embedding", _ns(batch * tables * dim), ("ALLTOALL", emb), _ns(batch * tables * dim),
                      ("ALLTOALL", emb), _ns(batch * tables * dim), NONE))
    mlp = [("bottom", bottom), ("top", top)]
    last_bottom = 0
    for kind, sizes in mlp:
        widths = list(sizes)
        if kind == "top":
            widths = [tables * dim + bottom[-1]] + widths
        for i, (cin, cout) in enumerate(zip(widths, widths[1:])):
            params = cin * cout
            flops = 2 * params * batch
            rows.append(_line(f"{kind}_mlp{i}", _ns(flops), NONE, _ns(flops), NONE, _ns(flops),
                              ("ALLREDUCE", 2 * params)))
        if kind == "bottom":
            last_bottom = len(rows) - 1
    return f"HYBRID_DLRM {last_bottom}\n{len(rows)}\n" + "\n".join(rows) + "\n"


def main() -> None:
    """Write resnet50_like.txt, gpt3_like.txt and dlrm_like.txt next to this script."""
    (HERE / "resnet50_like.txt").write_text(resnet50())
    (HERE / "gpt3_like.txt").write_text(gpt3())
    (HERE / "dlrm_like.txt").write_text(dlrm(top=(1024,) * 12 + (512, 256, 1), bottom=(13,) + (512,) * 8 + (128,)))


if __name__ == "__main__":
    main()
