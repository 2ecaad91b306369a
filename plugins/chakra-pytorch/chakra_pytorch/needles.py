"""Which of the names the set-up scans look for a host execution trace holds.

Before converting, the inputs are sorted and described: the rank a host ET records (its first
``record_param_comms``) and its process groups (the ``## process_group:init ##`` node).  Each
scan parses nodes only when the decompressed bytes hold the name it looks for; the bytes are
searched once for all the names, and the answer is kept per file version (path, size and
modification time), so the set-up reads a large trace through once, not once per scan.
"""

from __future__ import annotations

import io
import os
import zlib
from functools import lru_cache
from typing import cast

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
    """The names the file holds, in one pass (``size`` and ``mtime_ns`` key the file version).

    A name found is not looked for again. The bytes are read into one reused buffer (a plain
    file straight into it; a compressed one through the decompressor's own chunks, then copied
    in), never joined into a window; a name across two reads is found in the joint of the end of
    one and the start of the next."""
    found: set[bytes] = set()
    keep = max(map(len, _NEEDLES)) - 1
    buf = bytearray(_CHUNK)
    tail = b""
    try:
        with open_binary(path) as f:
            readinto = cast(io.BufferedIOBase, f).readinto  # a buffered file or a GzipFile
            while len(found) < len(_NEEDLES) and (n := readinto(buf)):
                joint = tail + buf[:min(n, keep)]
                found.update(x for x in _NEEDLES if x not in found and (buf.find(x, 0, n) >= 0 or x in joint))
                tail = bytes(buf[n - keep:n]) if n >= keep else joint[-keep:]
    except (OSError, EOFError, ValueError, zlib.error):
        pass
    return frozenset(found)
