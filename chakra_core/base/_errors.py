"""Errors that the CLI turns into one line and exit status 2."""

from __future__ import annotations

__all__ = ["ChakraError", "TraceFormatError", "ConfigError", "PluginError", "TraceFormatWarning"]


class ChakraError(Exception):
    """A user-facing error: bad input, a bad option, a missing plugin.

    ``where`` names the file and ``location`` the place in it (``line 12``, ``node 7``,
    ``byte 4096``); ``str()`` gives the one-line message the CLI prints.
    """

    def __init__(self, message: str, where: str | None = None, location: str | None = None):
        self.message = message
        self.where = where
        self.location = location
        super().__init__(self.__str__())

    def __str__(self) -> str:
        prefix = ""
        if self.where:
            prefix = str(self.where)
            if self.location:
                prefix += f":{self.location}"
            prefix += ": "
        elif self.location:
            prefix = f"{self.location}: "
        return prefix + " ".join(self.message.split())


class TraceFormatError(ChakraError):
    """An input file that cannot be decoded (truncated, garbage, bad gzip, malformed text)."""


class ConfigError(ChakraError):
    """A bad pipeline, system description, or plugin option."""


class PluginError(ChakraError):
    """A plugin that cannot be found, loaded or used."""


class TraceFormatWarning(UserWarning):
    """An input file read with a fallback its format leaves to the reader (an ``.et`` file
    without a GlobalMetadata message: its metadata read as empty); the CLI prints it as a warning line."""
