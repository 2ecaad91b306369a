"""Light hook implementations of chakra-pytorch (nothing heavy is imported here)."""

from __future__ import annotations

import os

from chakra_core import Register, hookimpl

_DESC = "PyTorch execution trace (+ Kineto profiler trace) per rank, .json or .json.gz"


@hookimpl
def chakra_register_formats(register: Register) -> None:
    """Register the ``pytorch`` input format."""
    register("pytorch", "chakra_pytorch.format:PyTorchFormat", description=_DESC,
             install_hint="pip install chakra-pytorch")


@hookimpl
def chakra_detect_format(paths: list[str]) -> str | None:
    """``pytorch`` when the first JSON input (or the first in a directory) is a host ET or Kineto."""
    from .sniff import is_json_name, sniff_kind

    first = str(paths[0]) if paths else ""
    if os.path.isdir(first):
        names = sorted(n for n in os.listdir(first) if is_json_name(n))
        if not names:
            return None
        first = os.path.join(first, names[0])
    if is_json_name(first) and os.path.isfile(first) and sniff_kind(first) is not None:
        return "pytorch"
    return None
