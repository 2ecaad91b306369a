"""The version of the chakra-core distribution."""

__version__ = "0.1.0"
