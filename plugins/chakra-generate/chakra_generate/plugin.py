"""Entry point of ``chakra-generate``: registers the ``transformer`` generator.

Only names and import paths here; the implementations are imported on first use.
"""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_generators(register: Register) -> None:
    """Register ``transformer`` (training steps of a GPT/Llama-like dense or MoE model)."""
    register("transformer", "chakra_generate.transformer:TransformerGenerator",
             description="LLM training steps: tp x cp x dp x pp, sp, ZeRO 0-3, MoE, gpipe/1f1b/interleaved")
