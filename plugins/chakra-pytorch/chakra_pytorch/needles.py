"""Which of the names the set-up scans look for a host execution trace holds.

Before converting, the inputs are sorted and described: the rank a host ET records (its first
``record_param_comms``) and its process groups (the ``## process_group:init ##`` node).  Each
scan parses nodes only when the decompressed bytes hold the name it looks for; the file is read
once for all the names (a plain one searched in place, mapped into memory, a compressed one a
chunk at a time), and the answer is kept per file version (path, size and modification time), so
the set-up reads a large trace through once, not once per scan.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
import zlib
from functools import lru_cache
from typing import BinaryIO

from chakra_core import open_binary

__all__ = ["PARAM_COMMS", "PG_INIT_NEEDLE", "holds"]

PARAM_COMMS = b'"record_param_comms"'
PG_INIT_NEEDLE = b"## process_group:init ##"
_NEEDLES = (PARAM_COMMS, PG_INIT_NEEDLE)
_CHUNK = 1 << 20


def holds(path: str, needle: bytes) -> bool:
    """True when the decompressed bytes of ``path`` contain ``needle`` (one of the names above);
    False for a file that cannot be read (the conversion reports it)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return needle in _found(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=64)
def _found(path: str, size: int, mtime_ns: int) -> frozenset[bytes]:
    """The names the file holds, in one pass (``size`` and ``mtime_ns`` key the file version)."""
    try:
        with open_binary(path) as f:
            if isinstance(f, io.BufferedReader) and size > 0 and stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    return frozenset(n for n in _NEEDLES if m.find(n) >= 0)
            return _found_in_chunks(f)
    except (OSError, EOFError, ValueError, zlib.error):
        return frozenset()


def _found_in_chunks(f: BinaryIO) -> frozenset[bytes]:
    """The names a stream (a decompressed one) holds, read a chunk at a time; a name across two
    chunks is found in the joint of the end of one and the start of the next."""
    found: set[bytes] = set()
    keep = max(map(len, _NEEDLES)) - 1
    tail = b""
    try:
        while len(found) < len(_NEEDLES) and (chunk := f.read(_CHUNK)):
            joint = tail + chunk[:keep]
            found.update(n for n in _NEEDLES if n in chunk or n in joint)
            tail = chunk[-keep:] if len(chunk) >= keep else (tail + chunk)[-keep:]
    except (OSError, EOFError, ValueError, zlib.error):
        pass
    return frozenset(found)
