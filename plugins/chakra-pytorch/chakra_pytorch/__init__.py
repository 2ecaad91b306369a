"""chakra-pytorch: PyTorch host execution traces + Kineto traces to Chakra ETs."""

from .convert import RankFiles, convert_rank, find_rank_files, open_pytorch
from .schema_version import KNOWN_SCHEMAS, PyTorchTraceWarning

__all__ = ["open_pytorch", "convert_rank", "find_rank_files", "RankFiles", "KNOWN_SCHEMAS",
           "PyTorchTraceWarning"]
