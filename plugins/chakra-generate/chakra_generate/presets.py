"""Named model shapes (``preset``): published configurations the generators start from.

A preset fills the shape options the user does not give; an option given explicitly wins.
Llama 2 and Llama 3 (Touvron et al., 2023; Meta's released ``config.json`` files): grouped-query
attention, a SwiGLU MLP, RMSNorm, rotary positions, no linear biases, untied output layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core import ConfigError

__all__ = ["PRESETS", "with_preset"]

_LLAMA = {"mlp": "swiglu", "norm": "rmsnorm", "bias": False, "positions": "rope", "tie_embeddings": False}

#: preset name -> options
PRESETS: dict[str, dict[str, Any]] = {
    "llama2-70b": {**_LLAMA, "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672,
                   "vocab": 32000, "seq": 4096},
    "llama3-8b": {**_LLAMA, "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336,
                  "vocab": 128256, "seq": 8192},
}


def with_preset(owner: str, known: Mapping[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with the named ``preset``'s values (those in ``known``) under the given ones."""
    options = dict(options or {})
    name = options.get("preset")
    if not name:
        return options
    if name not in PRESETS:
        raise ConfigError(f"{owner}: preset {name!r} is not one of {', '.join(sorted(PRESETS))}")
    return {**{k: v for k, v in PRESETS[name].items() if k in known}, **options}
