"""Light hook implementations of chakra-pytorch (nothing heavy is imported here)."""

from __future__ import annotations

from chakra_core import Register, expand_paths, hookimpl

_DESC = "PyTorch execution trace (+ Kineto trace) per rank, or Kineto traces alone, .json or .json.gz"


@hookimpl
def chakra_register_formats(register: Register) -> None:
    """Register the ``pytorch`` input format."""
    register("pytorch", "chakra_pytorch.format:PyTorchFormat", description=_DESC,
             install_hint="pip install chakra-pytorch")


@hookimpl
def chakra_detect_format(paths: list[str]) -> str | None:
    """``pytorch`` when the first JSON file the first path names is a host ET or Kineto trace."""
    from .sniff import JSON_SUFFIXES, sniff_kind

    found = expand_paths(paths[0], JSON_SUFFIXES) if paths else []
    first = next((f for f in found if f.endswith(JSON_SUFFIXES)), None)
    return "pytorch" if first is not None and sniff_kind(first) is not None else None
