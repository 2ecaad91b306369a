"""Entry point of the ``chakra-synth`` distribution: registers the ``learned``, ``structural`` and
``markov`` synthesizers and the ``obfuscate`` transform (nothing heavy is imported here)."""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_synthesizers(register: Register) -> None:
    """Register the ``learned`` synthesizer, the ``structural`` obfuscating copy and the
    ``markov`` baseline."""
    register("learned", "chakra_synth.learned:LearnedSynthesizer",
             description="hierarchical model: blocks, communication anchors, per-segment op count, mix and time",
             install_hint="pip install chakra-synth")
    register("structural", "chakra_synth.structural:StructuralSynthesizer",
             description="motifs, rank classes and per-kind distributions learnt from ET sets",
             install_hint="pip install chakra-synth")
    register("markov", "chakra_synth.markov:MarkovSynthesizer",
             description="baseline: a first-order Markov chain of node kinds, per-kind distributions",
             install_hint="pip install chakra-synth")



@hookimpl
def chakra_register_transforms(register: Register) -> None:
    """Register the ``obfuscate`` transform."""
    register("obfuscate", "chakra_synth.obfuscate:Obfuscate",
             description="replace names by salted hashes or kind labels, quantise/perturb numbers, perturb deps",
             install_hint="pip install chakra-synth")
