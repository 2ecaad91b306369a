"""chakra-collect: record a PyTorch training loop and write a Chakra ET set directly."""

from .convert import write_chakra
from .record import Recorder, raw_paths, record_steps

__all__ = ["Recorder", "raw_paths", "record_steps", "write_chakra"]
