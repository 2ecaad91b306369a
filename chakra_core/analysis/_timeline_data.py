"""What a timeline writer (Perfetto, Chrome JSON) draws, as :mod:`._timeline` prepares it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from chakra_core.analysis._spans import Spans

__all__ = ["TimelineData"]


@dataclass
class TimelineData:
    """What a timeline writer draws: the kept spans (``index`` into ``spans``, with the rank and
    the lane track each is drawn on), tracks, flows, counters and the critical path."""

    spans: Spans
    index: np.ndarray
    rank: np.ndarray
    lane: np.ndarray
    start_ns: np.ndarray
    dur_ns: np.ndarray
    lanes: list[tuple[int, str]]
    process_names: dict[int, str]
    flow_src: np.ndarray
    flow_dst: np.ndarray
    flow_kind: np.ndarray
    counter_rank: np.ndarray
    counter_ts: np.ndarray
    counter_value: np.ndarray
    counter_series: np.ndarray
    counter_names: list[tuple[int, str]]
    path_start: np.ndarray
    path_dur: np.ndarray
    path_label: list[str]
    notes: list[str] = field(default_factory=list)
