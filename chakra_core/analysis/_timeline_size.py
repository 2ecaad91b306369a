"""The size of a timeline before it is written, and the warning for a large one.

Bytes per drawn item were measured on simulated sets (a generated 8-layer transformer and the
recorded DDP set): a span costs about 90 bytes in Perfetto's protobuf (names are interned) and
140 in Chrome JSON; a flow, a counter value and a critical-path segment cost what
:data:`BYTES_PER_ITEM` says.  Names longer than those sets' make the file larger.
"""

from __future__ import annotations

import os
import warnings

from chakra_core.analysis._timeline_data import TimelineData
from chakra_core.base._errors import ConfigError
from chakra_core.base._human import size as human_size

__all__ = ["BYTES_PER_ITEM", "WARN_ENV", "estimate_bytes", "warn_threshold_bytes", "size_warning"]

#: format -> bytes per (span, flow, counter value, critical-path segment), measured
BYTES_PER_ITEM = {"perfetto": (90, 20, 25, 85), "json": (140, 190, 76, 110)}

#: the environment variable holding the size (MB, 10**6 bytes) above which a timeline is announced
WARN_ENV = "CHAKRA_TIMELINE_WARN_MB"
_DEFAULT_MB = 100.0


def estimate_bytes(data: TimelineData, fmt: str) -> int:
    """About how many bytes the timeline ``data`` takes in format ``fmt``."""
    span, flow, counter, segment = BYTES_PER_ITEM[fmt]
    return (len(data.index) * span + len(data.flow_src) * flow + len(data.counter_ts) * counter
            + len(data.path_start) * segment)


def warn_threshold_bytes() -> float:
    """The size (bytes) above which a timeline is announced: ``CHAKRA_TIMELINE_WARN_MB`` MB
    (default 100 MB), a ConfigError when the variable is not a number of 0 or more."""
    text = os.environ.get(WARN_ENV, "").strip()
    if not text:
        return _DEFAULT_MB * 1e6
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise ConfigError(f"{WARN_ENV} must be a size in MB (0 or more), got {text!r}")
    return mb * 1e6


def size_warning(data: TimelineData, fmt: str, path: str) -> str | None:
    """Warn (``warnings.warn``, printed by ``chakra`` as ``chakra: warning: ...``) before a
    timeline larger than :func:`warn_threshold_bytes` is written, and return the message (None
    for a smaller one)."""
    size = estimate_bytes(data, fmt)
    if size <= warn_threshold_bytes():
        return None
    message = (f"writing a timeline of about {human_size(size)} to {path} ({len(data.index):,} spans, "
               f"{len(data.flow_src):,} flows, {fmt}): draw fewer with timeline_ranks, timeline_window or "
               f"timeline_max_spans (threshold: {WARN_ENV})")
    warnings.warn(message, stacklevel=3)
    return message
