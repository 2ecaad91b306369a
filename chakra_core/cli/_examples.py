"""Examples shown at the end of each command's ``--help``, on inputs bundled with the project.

Run from the repository root; ``out/`` is where they write.  A command's examples may use what
an earlier example (of the same or another command) wrote there.
"""

from __future__ import annotations

__all__ = ["EXAMPLES", "epilog"]

_DDP = "plugins/chakra-pytorch/tests/data/ddp"
_MESH8 = "plugins/chakra-jax/tests/data/mesh8"

#: command -> ``(command line, what it does)`` pairs
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "convert": (
        (f"chakra convert {_DDP} -o out/ddp/", "two recorded PyTorch ranks (host ET + Kineto) to .et files"),
        (f"chakra convert {_MESH8}/program.hlo.txt {_MESH8}/profile.xplane.pb -o out/jax/",
         "a compiled JAX program and its profile, one ET per device"),
        ("chakra convert examples/text/gpt3_like.txt -I npus=16 -o out/gpt3/", "an ASTRA-sim text workload"),
    ),
    "validate": (
        ("chakra validate out/ddp/", "a converted set (exit 2 on any error)"),
        (f"chakra validate {_DDP} --json", "a recorded PyTorch set, read directly"),
    ),
    "stats": (
        ("chakra stats out/gpt3/", "node and collective counts, longest path"),
        (f"chakra stats {_DDP} --json", ""),
    ),
    "jsonize": (
        ("chakra jsonize out/ddp/trace.0.et -o out/rank0.json",
         "exact inverse: chakra convert out/rank0.json -o out/back/"),
    ),
    "plugins": (
        ("chakra plugins", "what is installed, and what failed"),
        ("chakra plugins --options simpy", "the options of one implementation"),
    ),
    "plugin": (
        ("chakra plugin new myfmt --dir out/", "a plugin to start from: format, simulator, transform, tests"),
    ),
    "run": (
        ("chakra run examples/quickstart/pipeline.yaml", "convert, simulate and export a ResNet-50-like job"),
        ("chakra run examples/quickstart/pipeline.yaml --check", "check the pipeline without running it"),
    ),
    "simulate": (
        (f"chakra simulate {_DDP} --system examples/system/any_size.yaml", "a ring sized to the set"),
        ("chakra simulate out/gpt3/ --system examples/system/two_nodes.yaml --timeline out/gpt3.timeline.json",
         "16 ranks on two 8-NPU nodes, with a Perfetto timeline"),
    ),
    "emulate": (
        (f"chakra emulate {_DDP} --timeline out/ddp.replay.json", "replay on this machine (gloo), vs the trace"),
    ),
    "export": (
        ("chakra export out/gpt3/ --to astrasim --system examples/system/two_nodes.yaml -o out/astra/",
         "a ready-to-run ASTRA-sim directory"),
    ),
    "generate": (
        ("chakra generate transformer -o out/llm/ -O layers=8 -O tp=2 -O pp=2 -O dp=4",
         "an LLM training step, 16 ranks"),
    ),
    "transform": (
        ("chakra transform out/llm/ resize_dp straggler -O dp=8 -O ranks=0 -O factor=1.5 -o out/llm-whatif/",
         "what-ifs, applied in order"),
        ("chakra transform out/gpt3/ obfuscate -O quantize=0.05 -o out/hidden/", "hashed names, bounded numbers"),
    ),
    "synth": (
        ("chakra synth fit out/gpt3/ -o out/gpt3.model.json", "learn a model (no names kept)"),
        ("chakra synth sample out/gpt3.model.json -o out/synth/ --seed 1", "sample a new valid set"),
    ),
    "sweep": (
        ("chakra sweep examples/sweep/pipeline.yaml -o out/sweep -j 2", "every design point, one results table"),
    ),
    "report": (
        (f"chakra report {_DDP} --system examples/system/any_size.yaml", "breakdown, critical path, stragglers"),
        ("chakra report out/gpt3/ --system examples/system/two_nodes.yaml -o out/gpt3.html", "the same as a page"),
    ),
    "diff": (
        ("chakra diff out/llm/ out/llm-whatif/ --system examples/system/any_size.yaml", "two sets side by side"),
    ),
    "graph": (
        ("chakra graph out/ddp/ --rank 0 --around 13 --depth 2 -o out/node13.svg", "a node's neighbourhood"),
    ),
    "compare": (
        ("chakra compare out/gpt3/ out/synth/ --json", "fidelity of a sample against its source"),
    ),
}


def epilog(command: str) -> str:
    """The ``examples:`` block of ``command``'s help ("" when it has none)."""
    lines = []
    for line, what in EXAMPLES.get(command, ()):
        lines.append(f"  {line}")
        if what:
            lines.append(f"      {what}")
    return "examples (from the repository root):\n" + "\n".join(lines) if lines else ""
