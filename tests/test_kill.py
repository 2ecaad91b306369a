"""Kill tests: ``chakra export --to astrasim`` and ``chakra convert`` killed (SIGKILL, SIGINT) at
seeded random moments, and while they build or publish their output, always leave the complete
old result or the complete new one, and the next run removes what the killed ones left.

The two results are the text workloads of examples/text (a 4-rank and a 16-rank job); the
references are uninterrupted runs into the same path.  Each killed run writes the result that
is not there now, so every run replaces one complete result by the other."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra_core.io._publish import finish_interrupted

EXAMPLES = Path(__file__).parent.parent / "examples" / "text"
WORKLOADS = ([str(EXAMPLES / "dlrm_like.txt"), "-I", "npus=4"],
             [str(EXAMPLES / "gpt3_like.txt"), "-I", "npus=16"])
CHAKRA = [sys.executable, "-m", "chakra_core.cli.main"]
RUNS = 4  # per test: half killed after a random delay, half while the output is being built


def command(kind: str, workload: list[str], target: Path) -> list[str]:
    if kind == "export":
        return [*CHAKRA, "export", *workload, "--to", "astrasim", "-o", str(target)]
    if kind == "convert-dir":
        return [*CHAKRA, "convert", *workload, "-o", f"{target}/"]
    return [*CHAKRA, "convert", *workload, "-o", str(target / "job")]


def snapshot(kind: str, target: Path) -> dict[str, bytes]:
    """The result as a reader sees it (a prefix set after the next reader completes it)."""
    if kind == "convert-prefix":
        finish_interrupted(target / "job")
        return {p.name: p.read_bytes() for p in sorted(target.glob("job.*"))}
    return {str(p.relative_to(target)): p.read_bytes() for p in sorted(target.rglob("*")) if p.is_file()}


def building(parent: Path) -> bool:
    return any(".chakra-" in name for name in os.listdir(parent))


def run_killed(cmd: list[str], sig: int, delay: float | None, watch: Path, rng: random.Random) -> None:
    """Run ``cmd`` and send ``sig`` after ``delay`` s, or (None) soon after a temporary appears."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if delay is not None:
            time.sleep(delay)
        else:
            while proc.poll() is None and not building(watch):
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("kind,sig", [
    ("export", signal.SIGKILL), ("export", signal.SIGINT),
    ("convert-dir", signal.SIGKILL), ("convert-dir", signal.SIGINT),
    ("convert-prefix", signal.SIGKILL),
])
def test_killed_runs_leave_the_old_or_the_new_result(tmp_path, kind, sig):
    rng = random.Random(f"{kind}-{sig}")
    root = tmp_path / "work"
    root.mkdir()
    target = root / "out"
    if kind == "convert-prefix":
        target.mkdir()
        (target / "notes.txt").write_text("the user's file")
    refs, seconds = [], 0.0
    for workload in WORKLOADS:
        t0 = time.perf_counter()
        subprocess.run(command(kind, workload, target), check=True, capture_output=True)
        seconds = max(seconds, time.perf_counter() - t0)
        refs.append(snapshot(kind, target))
    assert refs[0] != refs[1]
    current = 1
    watch = target if kind == "convert-prefix" else root
    for i in range(RUNS):
        delay = rng.uniform(0.2, 1.0) * seconds if i % 2 == 0 else None
        run_killed(command(kind, WORKLOADS[1 - current], target), sig, delay, watch, rng)
        now = snapshot(kind, target)
        assert now in refs, f"run {i}: a mixed or incomplete result"
        current = refs.index(now)
    subprocess.run(command(kind, WORKLOADS[1 - current], target), check=True, capture_output=True)
    assert snapshot(kind, target) == refs[1 - current]
    assert not building(watch), "the next run removes what killed runs left"
    if kind == "convert-prefix":
        assert (target / "notes.txt").read_text() == "the user's file"
