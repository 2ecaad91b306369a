"""Native libraries' stderr kept off the terminal while jaxlib parses a file.

jaxlib's C++ code (protobuf's parser, XLA's logging) writes to file descriptor 2 directly, so a
damaged ``.hlo.pb`` or ``.xplane.pb`` prints a C++ log line before the converter's own one-line
error. :func:`quiet_native_stderr` points descriptor 2 at a temporary file for the duration of
the call; what the library wrote is dropped (the converter's error says what went wrong).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["quiet_native_stderr"]


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Send what native code writes to file descriptor 2 to a scratch file while inside."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with tempfile.TemporaryFile() as scratch:
            sys.stderr.flush()
            os.dup2(scratch.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
