"""Entry point of ``chakra-generate``: registers the generator and the what-if transforms.

Only names and import paths here; the implementations are imported on first use.
"""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_generators(register: Register) -> None:
    """Register ``transformer`` (training steps of a GPT/Llama-like dense or MoE model) and
    ``inference`` (its prefill and decode steps)."""
    register("transformer", "chakra_generate.transformer:TransformerGenerator",
             description="LLM training steps: tp x cp x dp x pp, sp, ZeRO 0-3, MoE, gpipe/1f1b/interleaved")
    register("inference", "chakra_generate.inference:InferenceGenerator",
             description="LLM inference: prefill and decode steps with a KV cache, tp x pp")


@hookimpl
def chakra_register_transforms(register: Register) -> None:
    """Register the what-if transforms ``resize_dp``, ``straggler`` and ``retime``, and
    ``even_collectives``."""
    register("resize_dp", "chakra_generate.resize:ResizeDp",
             description="what-if: change the data-parallel width (replicate ranks, re-size groups)")
    register("straggler", "chakra_generate.straggler:Straggler",
             description="what-if: slow down the compute of some ranks by a factor")
    register("retime", "chakra_generate.retime:Retime",
             description="what-if: re-time compute nodes from a roofline of a named device")
    register("even_collectives", "chakra_generate.even:EvenCollectives",
             description="one size for all members of an uneven collective (MoE all-to-all): the largest or the mean")
