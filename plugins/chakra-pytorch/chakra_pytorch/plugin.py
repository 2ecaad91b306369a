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
    """``pytorch`` when a JSON file that the paths name is a host ET or a Kineto trace (every
    file is looked at: a stray JSON file beside the traces does not hide them); None when they
    name an XLA program (``.hlo.txt``/``.hlo.pb``: a JAX trace set)."""
    from .sniff import HLO_SUFFIXES, JSON_SUFFIXES, sniff_kind

    found = expand_paths(paths, JSON_SUFFIXES + HLO_SUFFIXES) if paths else []
    if any(f.endswith(HLO_SUFFIXES) for f in found):
        return None
    return "pytorch" if any(sniff_kind(f) is not None for f in found) else None
