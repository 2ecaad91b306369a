"""chakra-pytorch: PyTorch host execution traces + Kineto traces to Chakra ETs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .convert import RankFiles, convert_rank, find_rank_files, open_pytorch
    from .schema_version import KNOWN_SCHEMAS, PyTorchTraceWarning

__all__ = ["open_pytorch", "convert_rank", "find_rank_files", "RankFiles", "KNOWN_SCHEMAS", "PyTorchTraceWarning"]

_WHERE = {
    "open_pytorch": "convert",
    "convert_rank": "convert",
    "find_rank_files": "convert",
    "RankFiles": "convert",
    "KNOWN_SCHEMAS": "schema_version",
    "PyTorchTraceWarning": "schema_version",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
