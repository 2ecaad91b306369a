"""The size of a timeline is estimated before it is written, and a large one is announced
(the recorded DDP set of plugins/chakra-pytorch/tests/data/ddp, simulated; a threshold of a few
kB set through ``CHAKRA_TIMELINE_WARN_MB`` keeps the files small)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import ConfigError
from chakra_core.analysis._timeline import _prepare
from chakra_core.analysis._timeline_size import estimate_bytes

pytest.importorskip("chakra_pytorch")
pytest.importorskip("chakra_simpy")

DDP = Path(__file__).resolve().parents[1] / "plugins/chakra-pytorch/tests/data/ddp"


@pytest.fixture(scope="module")
def spans():
    return chakra.simulate(str(DDP), options={"spans": True}).spans


@pytest.mark.parametrize("fmt, name", [("perfetto", "t.pftrace"), ("json", "t.json")])
def test_the_estimate_is_within_a_factor_of_two_of_the_file(spans, tmp_path, fmt, name):
    data, _ = _prepare(spans, None, None, False, True, True, True, None)
    chakra.write_timeline(spans, tmp_path / name, format=fmt)
    written = os.path.getsize(tmp_path / name)
    assert written / 2 <= estimate_bytes(data, fmt) <= written * 2


def test_a_timeline_over_the_threshold_is_announced_before_it_is_written(spans, tmp_path, monkeypatch):
    path = tmp_path / "t.pftrace"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = chakra.write_timeline(spans, path)
    assert not seen and out["notes"] == []
    size = os.path.getsize(path)
    path.unlink()
    monkeypatch.setenv("CHAKRA_TIMELINE_WARN_MB", str(size / 4 / 1e6))
    shown = []  # (message, whether the file existed when it was shown)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *a, **k: shown.append((str(message), path.exists()))
        out = chakra.write_timeline(spans, path)
    assert len(shown) == 1 and shown[0][1] is False and path.exists()
    message = shown[0][0]
    assert message.startswith("writing a timeline of about ") and f"{out['spans']:,} spans" in message
    assert "timeline_max_spans" in message and any(n.startswith("written: about ") for n in out["notes"])


def test_the_threshold_variable_is_checked(spans, tmp_path, monkeypatch):
    monkeypatch.setenv("CHAKRA_TIMELINE_WARN_MB", "lots")
    with pytest.raises(ConfigError, match="CHAKRA_TIMELINE_WARN_MB must be a size in MB"):
        chakra.write_timeline(spans, tmp_path / "t.pftrace")
    assert not (tmp_path / "t.pftrace").exists()


def test_simulate_warns_on_stderr_and_in_its_notes(tmp_path):
    env = dict(os.environ, CHAKRA_TIMELINE_WARN_MB="0.001")
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "simulate", str(DDP), "--timeline",
                        str(tmp_path / "t.pftrace"), "--json"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "chakra: warning: writing a timeline of about " in r.stderr
    assert any(n.startswith("timeline written: about ") for n in json.loads(r.stdout)["notes"])
