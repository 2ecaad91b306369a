"""The ``chakra`` command line: convert, jsonize, stats, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.fixture
def et_prefix(tmp_path, dp_set):
    dp_set.write(tmp_path / "job")
    return tmp_path / "job"


def test_stats_json(et_prefix, chakra_cli):
    status, out, _ = chakra_cli("stats", et_prefix, "--json")
    s = json.loads(out)
    assert status == 0 and s["nodes"] == 2 * 11 and s["ranks"] == 2
    assert s["by_type"] == {"COMM_COLL_NODE": 6, "COMM_RECV_NODE": 2, "COMM_SEND_NODE": 2, "COMP_NODE": 12}
    assert s["collectives"]["ALL_REDUCE"] == {"count": 6, "bytes": 2 * 4096 * (1 + 2 + 3)}
    # forward 10+11+12, backward 22+21+20: one chain
    assert s["longest_path_us"] == 96 and s["per_rank"][0]["compute_us"] == 96


def test_jsonize_then_convert_back_is_byte_identical(et_prefix, tmp_path, chakra_cli):
    status, out, _ = chakra_cli("jsonize", et_prefix, "-o", f"{tmp_path}/js/")
    assert status == 0 and len(out.split()) == 2
    status, out, _ = chakra_cli("convert", tmp_path / "js", "-o", tmp_path / "back")
    assert status == 0
    for r in (0, 1):
        assert (tmp_path / f"back.{r}.et").read_bytes() == (tmp_path / f"job.{r}.et").read_bytes()


def test_jsonize_loads_no_yaml(et_prefix, tmp_path):
    """Writing JSON needs the JSON parser alone: PyYAML (about 10 ms to import) stays out."""
    code = ("import sys; from chakra_core.cli.main import main; main(['jsonize', sys.argv[1], '-o', sys.argv[2]])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'yaml'))")
    r = subprocess.run([sys.executable, "-c", code, str(et_prefix), f"{tmp_path}/js/"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]" and (tmp_path / "js" / "trace.0.json").exists()


@pytest.mark.parametrize("preset, kept", [(None, "4"), ("30", "30")])
def test_the_blas_threads_are_told_not_to_spin_before_numpy_loads(et_prefix, preset, kept):
    """OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when numpy first loads: the command line sets it
    before any import of numpy (``stats`` imports it), and keeps a value the user set."""
    import os

    code = ("import sys, os; from chakra_core.cli.main import main; before = 'numpy' in sys.modules; "
            "main(['stats', sys.argv[1]]); "
            "print(before, 'numpy' in sys.modules, os.environ['OPENBLAS_THREAD_TIMEOUT'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if preset is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = preset
    r = subprocess.run([sys.executable, "-c", code, str(et_prefix)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"False True {kept}"


_HEAP_PROBE = """
import ctypes, sys
from chakra_core.cli.main import main
main(['stats', sys.argv[1]])
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
blocks = [libc.malloc(64 << 10) for _ in range(64)]
for block in reversed(blocks):
    libc.free(ctypes.c_void_p(block))
print(libc.mallinfo2().keepcost >= 4 << 20)
"""


def test_a_command_keeps_the_top_of_glibc_s_heap(et_prefix):
    """On glibc, 4 MiB of blocks freed at the top of a command's heap stay there, free for the
    next allocation (mallinfo2's ``keepcost``), rather than being handed back to the system."""
    import ctypes
    import os

    try:
        glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):
        glibc = False
    if not glibc or not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("glibc 2.33 or later only")
    r = subprocess.run([sys.executable, "-c", _HEAP_PROBE, str(et_prefix)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "True"


def test_listing_the_plugins_loads_no_ctypes():
    """``chakra plugins`` reads no trace: it leaves glibc's heap as it is and so does not load
    ctypes (about 3 ms of its start-up)."""
    code = "import sys; from chakra_core.cli.main import main; main(['plugins']); print('ctypes' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False"


def test_convert_to_directory_with_format_and_gzip(et_prefix, tmp_path, chakra_cli):
    status, out, _ = chakra_cli("convert", et_prefix, "--format", "et", "-o", f"{tmp_path}/outdir/", "--gzip")
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "outdir").iterdir()) == ["trace.0.et.gz", "trace.1.et.gz"]


@pytest.mark.parametrize("content, what", [
    (b"\x05\x0a\x03a", "truncated message"),
    (b"", "empty file"),
    (b"\x1f\x8b\x08\x00\x00\x00junk", "bad gzip"),
    (b"\x02\x0a\x00\x03\xff\xff\xff", "not a Chakra node"),
])
@pytest.mark.parametrize("command", ["stats", "validate", "jsonize"])
def test_malformed_input_one_line_exit_2(tmp_path, chakra_cli, content, what, command):
    bad = tmp_path / "bad.0.et"
    bad.write_bytes(content)
    args = [command, bad] + (["-o", tmp_path / "x.json"] if command == "jsonize" else [])
    status, out, err = chakra_cli(*args)
    assert status == 2
    assert err.count("\n") == 1 and "bad.0.et" in err and what in err and "Traceback" not in err


def test_unknown_format_and_paths(tmp_path, chakra_cli):
    status, _, err = chakra_cli("convert", tmp_path / "nothing", "-o", tmp_path / "o")
    assert status == 2 and "no such file" in err
    (tmp_path / "w.xyz").write_text("hello")
    status, _, err = chakra_cli("convert", tmp_path / "w.xyz", "-o", tmp_path / "o")
    assert status == 2 and "cannot tell the input format" in err
    status, _, err = chakra_cli("convert", tmp_path / "w.xyz", "--format", "nope", "-o", tmp_path / "o")
    assert status == 2 and "unknown format 'nope'" in err


def test_debug_shows_traceback(tmp_path):
    bad = tmp_path / "bad.et"
    bad.write_bytes(b"")
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "--debug", "stats", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" in r.stderr
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "stats", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_simulate_rejects_an_exporter(et_prefix, chakra_cli):
    status, _, err = chakra_cli("simulate", et_prefix, "--backend", "et")
    assert status == 2 and "backend 'et' is of kind 'exporter', not 'simulator'" in err


def test_input_options_reach_the_input_format(tmp_path, chakra_cli):
    """-I passes options to a non-.et input format (here the text plugin's npus)."""
    wl = tmp_path / "w.txt"
    wl.write_text("DATA\n1\nfc -1 50 NONE 0 60 NONE 0 55 ALLREDUCE 1024 10\n")
    status, out, _ = chakra_cli("stats", wl, "-I", "npus=4", "--json")
    assert status == 0 and json.loads(out)["ranks"] == 4
    status, _, err = chakra_cli("validate", wl, "-I", "npux=4")
    assert status == 2 and "did you mean 'npus'" in err
