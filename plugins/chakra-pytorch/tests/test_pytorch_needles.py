"""The set-up scan's search for the names of ``record_param_comms`` and the pg-init node: the
recorded sets, and a name placed across the boundary of two read chunks, plain and gzipped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chakra_pytorch import needles
from chakra_pytorch.needles import PARAM_COMMS, PG_INIT_NEEDLE, holds

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("path,param_comms,pg_init", [
    ("nccl/pytorch_et.0.json", True, True),  # plain JSON
    ("collectives/pytorch_et.0.json.gz", False, True),
    ("mlp/pytorch_et.0.json.gz", False, False),
])
def test_recorded_sets(path, param_comms, pg_init):
    assert holds(str(DATA / path), PARAM_COMMS) is param_comms
    assert holds(str(DATA / path), PG_INIT_NEEDLE) is pg_init


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("shift", [1, 10, len(PG_INIT_NEEDLE) - 1])
def test_name_across_chunks(tmp_path, compress, shift):
    """The pg-init name starts ``shift`` bytes before the end of the first 1 MiB chunk; the other
    name is nowhere."""
    size = needles._CHUNK
    body = b" " * (size - shift) + PG_INIT_NEEDLE + b" " * 100
    p = tmp_path / ("t.json.gz" if compress else "t.json")
    p.write_bytes(gzip.compress(body) if compress else body)
    assert holds(str(p), PG_INIT_NEEDLE)
    assert not holds(str(p), PARAM_COMMS)


def test_unreadable_and_empty(tmp_path):
    """An empty file and a truncated gzip stream hold nothing (the conversion reports them)."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert not holds(str(empty), PG_INIT_NEEDLE)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(b" " * 100 + PG_INIT_NEEDLE)[:20])
    assert not holds(str(cut), PG_INIT_NEEDLE)
    assert not holds(str(tmp_path / "missing.json"), PG_INIT_NEEDLE)
