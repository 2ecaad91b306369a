"""A small input is read without loading numba (about 0.35 s of CPU and 85 MB a process); a large
one, or any input once numba is loaded, takes the compiled loops.  Each case runs in a fresh
interpreter so that what loads numba is this command alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core.base._jitchoice import compiled_worthwhile

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "examples" / "text" / "dlrm_like.txt"
RUN = '''
import sys
from chakra_core.cli.main import main
status = main(sys.argv[1:])
print("numba loaded" if "numba" in sys.modules else "numba not loaded", status)
'''

pytest.importorskip("numba")


def _run(*args) -> str:
    r = subprocess.run([sys.executable, "-c", RUN, *map(str, args)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("small")
    assert _run("convert", SMALL, "-I", "npus=2", "-o", f"{out}/et/").endswith(" 0")
    return out / "et"


@pytest.mark.parametrize("command", [["jsonize", "-o", "{tmp}/json/"], ["stats"]])
def test_a_small_set_is_read_without_numba(small_set, tmp_path, command):
    args = [a.format(tmp=tmp_path) for a in command]
    assert _run(args[0], small_set, *args[1:]) == "numba not loaded 0"


def test_worthwhile_from_the_files_together(small_set):
    files = sorted(small_set.glob("*.et"))
    size = sum(f.stat().st_size for f in files)
    code = ("import sys; from chakra_core.base._jitchoice import compiled_worthwhile as w; "
            f"print(w({[str(f) for f in files]}, {size}), w({[str(f) for f in files]}, {size + 1}), "
            f"w({str(files[0])!r}, {size}), w('/nonexistent', 0), 'numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "False", "False", "True", "False"], r.stderr
    # in this process numba is loaded (the import above skips otherwise): any input qualifies
    import numba  # noqa: F401

    assert compiled_worthwhile("/nonexistent", 1 << 40)


def test_ranks_worthwhile_from_their_files_or_whenever_installed(small_set):
    """Ranks of a set: their files' bytes together against the bound; a rank that is not a file
    (in memory: size unknown before reading) makes any bound met, numba being installed."""
    files = sorted(small_set.glob("*.et"))
    size = sum(f.stat().st_size for f in files)
    code = ("import sys; from chakra_core import open_traceset, ranks_compiled_worthwhile as w, "
            "MemoryRank, GlobalMetadata, TraceSet; "
            f"ts = open_traceset({str(small_set)!r}); "
            "mem = TraceSet([MemoryRank(0, GlobalMetadata(version='0.0.4'), [])]); "
            f"print(w(ts, ts.ranks, {size}), w(ts, ts.ranks, {size + 1}), w(ts, ts.ranks[:1], {size}), "
            "w(mem, [0], 1 << 40), 'numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "False", "False", "True", "False"], r.stderr


def test_keys_worthwhile_from_the_files_keyed_by_their_walk(small_set, tmp_path):
    """The role keys' rule counts the files of 16 KiB or more only (a smaller file naming no
    peer is keyed by its bytes): the 2-rank DLRM-like set's files are under 16 KiB; a GPT-3-like
    set's are not."""
    files = sorted(small_set.glob("*.et"))
    assert all(f.stat().st_size < 16 << 10 for f in files)
    big = tmp_path / "gpt3"
    assert _run("convert", ROOT / "examples" / "text" / "gpt3_like.txt", "-I", "npus=2", "-I", "mp_group=2", "-o", f"{big}/").endswith(" 0")
    sizes = [f.stat().st_size for f in sorted(big.glob("*.et"))]
    assert min(sizes) >= 16 << 10
    code = ("import sys; from chakra_core import open_traceset, keys_compiled_worthwhile as w; "
            f"small, big = open_traceset({str(small_set)!r}), open_traceset({str(big)!r}); "
            f"print(w(small, small.ranks, 1), w(big, big.ranks, {sum(sizes)}), w(big, big.ranks, {sum(sizes) + 1}), "
            f"w(big, big.ranks[:1], {sizes[0]}), 'numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["False", "True", "False", "True", "False"], r.stderr


def test_keys_worthwhile_from_small_files_together(tmp_path):
    """Small files that name peers are not keyed by their bytes: all the files together still
    count, from 16 MiB (1,100 files of 15.5 KiB: 17 MB; 1,000: 15.9 MB).  Sizes only: the files
    are not read."""
    for r in range(1100):
        (tmp_path / f"trace.{r}.et").write_bytes(bytes(15872))
    code = ("import sys; from chakra_core import open_traceset, keys_compiled_worthwhile as w; "
            f"ts = open_traceset({str(tmp_path)!r}); "
            "print(w(ts, ts.ranks, 1 << 40), w(ts, ts.ranks[:1000], 1 << 40), 'numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "False", "False"], r.stderr
