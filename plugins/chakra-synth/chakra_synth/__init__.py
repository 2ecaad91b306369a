"""chakra-synth: synthesizers that learn from Chakra ET sets and generate new ones (docs/synth.md).

Public API: :class:`LearnedSynthesizer` (registered as synthesizer ``learned``),
:class:`StructuralSynthesizer` (``structural``, an obfuscating copy) and :class:`MarkovSynthesizer`
(``markov``, the baseline).  Modules: ``profile`` (a rank read into
arrays), ``layout`` (tiles, rank classes, groups), ``motifs`` (the grammar of repeats),
``quantiles`` (fitted tables, stratified draws), ``fit_structure``, ``expand`` and
``sample_structure`` (fitting and sampling), ``emit`` (spills, per-rank suffixes, the validity
check), ``markov``, ``describe``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .learned import LearnedSynthesizer
    from .markov import MarkovSynthesizer
    from .structural import StructuralSynthesizer

__all__ = ["LearnedSynthesizer", "StructuralSynthesizer", "MarkovSynthesizer"]

__getattr__, __dir__ = lazy_exports(__name__, {"LearnedSynthesizer": "learned", "StructuralSynthesizer": "structural",
                                               "MarkovSynthesizer": "markov"})
