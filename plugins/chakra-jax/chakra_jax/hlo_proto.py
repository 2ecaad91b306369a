"""``HloModuleProto`` binaries (an XLA dump's ``*.hlo.pb``) as HLO text, through jaxlib.

jaxlib's ``HloModule`` reads the proto and prints it as HLO text, which the streaming text
parser then reads, so both inputs go through one parser. A dump's ``HloProto`` wrapper (the
module in field 1, with a buffer assignment beside it) is unwrapped first.
"""

from __future__ import annotations

from chakra_core import ConfigError, TraceFormatError, decode_varint

from .hlo_text import HloModule, parse_hlo_lines
from .native import quiet_native_stderr

__all__ = ["parse_hlo_proto"]


def _unwrap_hlo_proto(data: bytes) -> bytes | None:
    """The ``hlo_module`` (field 1) of an ``HloProto``, or None when ``data`` is not one (an
    EOFError or ValueError from a varint cut short or over 10 bytes)."""
    pos = 0
    module = None
    while pos < len(data):
        key, pos = decode_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire != 2:
            return None
        size, pos = decode_varint(data, pos)
        if field == 1:
            module = data[pos:pos + size]
        elif field != 3:
            return None
        pos += size
    return module if pos == len(data) else None


def parse_hlo_proto(path: str) -> HloModule:
    """Read an ``HloModuleProto`` (or ``HloProto``) file and parse its HLO text."""
    try:
        from jaxlib import xla_client
    except ImportError:
        raise ConfigError(f"{path}: reading .hlo.pb needs jaxlib (pip install jax); "
                          "or give the HLO text (compiled.as_text()) instead") from None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceFormatError(f"cannot read: {e.strerror or e}", path) from None
    candidates = [data]
    try:
        inner = _unwrap_hlo_proto(data)
    except (EOFError, ValueError):
        inner = None
    if inner:
        candidates.insert(0, inner)
    error = None
    for blob in candidates:
        try:
            with quiet_native_stderr():
                text = xla_client.hlo.HloModule.from_serialized_hlo_module_proto(blob).to_string()
        except Exception as e:  # jaxlib raises its own status errors for a bad proto
            error = e
            continue
        return parse_hlo_lines(text.splitlines(), path)
    raise TraceFormatError(f"not an HloModuleProto ({type(error).__name__}: {str(error)[:200]})", path)
