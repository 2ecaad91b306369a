"""Progress bars: on stderr when it is a terminal (a pseudo-terminal here), never otherwise,
never with -q; and the public ``chakra_core.progress`` a plugin uses."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

import chakra_core as chakra
from chakra_core.validation._validate import CROSS_RANK_STATUS


def _chakra_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run ``chakra ARGS`` with stderr on a pseudo-terminal: ``(status, stdout, terminal text)``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 x 100 characters
    proc = subprocess.Popen([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal's other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(), out, b"".join(chunks).decode(errors="replace")


@pytest.fixture
def et_set(tmp_path, dp_set):
    dp_set.write(tmp_path / "job")
    return tmp_path / "job"


@pytest.mark.parametrize("command, label", [
    (["validate", "{set}"], "validating"),
    (["stats", "{set}"], "reading"),
    (["convert", "{set}", "-o", "{tmp}/c/"], "converting"),
    (["jsonize", "{set}", "-o", "{tmp}/j/"], "writing JSON"),
    (["export", "{set}", "--to", "et", "-o", "{tmp}/e"], "validating"),
    (["export", "{set}", "--to", "astrasim", "-o", "{tmp}/a"], "writing the workload"),  # a plugin's ranks
    (["report", "{set}", "-o", "{tmp}/r.html"], "building the report"),
    (["simulate", "{set}"], "loading ranks"),  # the simpy plugin's bar, through chakra_core.progress
])
def test_progress_on_a_terminal_only(et_set, tmp_path, command, label):
    args = [a.format(set=et_set, tmp=tmp_path) for a in command]
    status, out, terminal = _chakra_on_a_terminal(*args)
    assert status == 0 and f"{label}:" in terminal and "/2 [" in terminal
    status, _, terminal = _chakra_on_a_terminal("-q", *args)
    assert status == 0 and terminal == ""
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *args], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
    assert _untimed(r.stdout) == _untimed(out)


def test_simulate_shows_nodes_simulated_time_and_ranks_finished(et_set, dp_set):
    status, _, terminal = _chakra_on_a_terminal("simulate", et_set)
    nodes = sum(len(list(rt.nodes())) for rt in dp_set)  # 2 ranks of 11 nodes, of different roles
    finish_ns = chakra.simulate(str(et_set)).summary["finish_ns"]
    assert status == 0 and "simulating:" in terminal and f"{nodes}/{nodes} [" in terminal
    assert f"at {finish_ns / 1e6:,.3f} ms simulated, 2/2 ranks finished" in terminal


def test_every_phase_of_a_simulation_with_a_timeline_is_shown(et_set, tmp_path):
    status, _, terminal = _chakra_on_a_terminal("simulate", et_set, "--timeline", tmp_path / "t.pftrace")
    assert status == 0
    labels = ["validating:", CROSS_RANK_STATUS, "grouping ranks by role:", "loading ranks:", "simulating:",
              "analysing the run:", "writing the timeline:"]
    at = [terminal.find(label) for label in labels]
    assert -1 not in at and at == sorted(at), dict(zip(labels, at))


def test_validate_says_when_it_checks_across_ranks(et_set):
    status, _, terminal = _chakra_on_a_terminal("validate", et_set)
    assert status == 0 and "2/2 [" in terminal and CROSS_RANK_STATUS in terminal


def _untimed(text: str) -> list[str]:
    """The lines of a command's output, less the simulator's speed (events per wall second)."""
    return [line for line in text.splitlines() if not line.startswith("events_per_s:")]


def test_pipeline_counts_backends(et_set, tmp_path):
    (tmp_path / "p.yaml").write_text(f"input: {{paths: ['{et_set}']}}\nbackends: [{{name: et}}, {{name: json}}]\n")
    status, _, terminal = _chakra_on_a_terminal("run", tmp_path / "p.yaml")
    assert status == 0 and "backends:" in terminal and "/2 [" in terminal


def test_progress_is_silent_off_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with chakra.progress("working", total=3) as bar:
        bar.advance()
        bar(3, 3)
    assert not bar.shown and err.getvalue() == ""


def test_progress_can_be_turned_off_on_a_terminal(monkeypatch):
    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", err)
    with chakra.progress("working", total=3) as bar:
        bar.advance(3)
    assert bar.shown and "working" in err.getvalue()
    err.seek(0)
    err.truncate()
    chakra.set_progress_enabled(False)
    try:
        with chakra.progress("working", total=3) as bar:
            bar.advance(3)
    finally:
        chakra.set_progress_enabled(True)
    assert not bar.shown and err.getvalue() == ""


def test_sweep_shows_points_done_running_failed_and_an_eta(et_set, tmp_path):
    (tmp_path / "s.yaml").write_text(f"input: {{paths: ['{et_set}']}}\nbackends: [{{name: et}}]\n"
                                     "sweep:\n  grid:\n    backends.et.options.compress: [false, true]\n")
    status, out, terminal = _chakra_on_a_terminal("sweep", tmp_path / "s.yaml", "-o", tmp_path / "out", "-j", "1")
    assert status == 0 and out.startswith("2 point(s): 2 ok")
    assert "sweep:" in terminal and "/2 [" in terminal and "running=1 failed=0" in terminal
    assert re.search(r"\d\d:\d\d<\d\d:\d\d", terminal)  # elapsed < remaining (the ETA)
