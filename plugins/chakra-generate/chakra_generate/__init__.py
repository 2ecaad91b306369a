"""chakra-generate: the ``transformer`` and ``inference`` workload generators and the what-if transforms
``resize_dp``, ``straggler`` and ``retime`` (docs/generate.md, docs/transforms.md).

Public API: :class:`TransformerGenerator` and :class:`InferenceGenerator` (the registered
generators), :data:`PRESETS` (named model shapes), :class:`Model` and
:func:`model_from_options` (a checked configuration with its closed forms), :func:`schedule`
(the pass order of a pipeline stage), :class:`ParallelLayout` (rank order and process groups).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .inference import InferenceGenerator
    from .layout import ParallelLayout
    from .model import Model, model_from_options
    from .presets import PRESETS
    from .schedule import schedule
    from .transformer import TransformerGenerator

__all__ = ["TransformerGenerator", "InferenceGenerator", "PRESETS", "Model", "model_from_options", "schedule",
           "ParallelLayout"]

_WHERE = {
    "TransformerGenerator": "transformer",
    "InferenceGenerator": "inference",
    "PRESETS": "presets",
    "Model": "model",
    "model_from_options": "model",
    "schedule": "schedule",
    "ParallelLayout": "layout",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
