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


_BLAS_PROBE = """
import os, sys
seen = []
sys.addaudithook(lambda event, args: seen.append(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))
                 if event == 'import' and args[0] == 'numpy' and not seen else None)
from chakra_core.cli.main import command
sys.argv = ['chakra', 'stats', sys.argv[1]]
command()
print(seen[:1])
"""


@pytest.mark.parametrize("preset, kept", [(None, "4"), ("30", "30")])
def test_the_blas_threads_are_told_not_to_spin_before_numpy_loads(et_prefix, preset, kept):
    """OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when numpy first loads: the ``chakra`` command has
    it set when numpy is imported (``stats`` imports it), and keeps a value the user set."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if preset is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = preset
    r = subprocess.run([sys.executable, "-c", _BLAS_PROBE, str(et_prefix)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"[{kept!r}]"


def test_main_in_a_caller_s_process_leaves_it_as_it_is(et_prefix):
    """``main()`` called in a process of someone else's (a test, a notebook) makes none of the
    command's own settings: no variable set, glibc's heap as it was."""
    import os

    code = ("import os, sys; import chakra_core.cli.main as m; made = []; "
            "m.settle = lambda heap=True: made.append(heap); m.main(['stats', sys.argv[1]]); "
            "print(made, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    r = subprocess.run([sys.executable, "-c", code, str(et_prefix)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[] None"


@pytest.mark.parametrize("args, heap", [(["plugins"], False), (["plugin", "--help"], False), (["stats"], True)])
def test_only_commands_that_read_traces_keep_the_heap(et_prefix, args, heap):
    """``chakra plugins`` and ``chakra plugin`` read no trace: they leave glibc's heap as it is
    (loading ctypes would cost them about 3 ms); the others keep it."""
    argv = [*args, str(et_prefix)] if args == ["stats"] else args
    code = ("import sys; import chakra_core.cli.main as m; made = []; "
            "m.settle = lambda heap=True: made.append(heap); sys.argv = ['chakra', *sys.argv[1:]]\n"
            "try:\n    m.command()\nexcept SystemExit:\n    pass\nprint(made)")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"[{heap}]"


_HEAP_PROBE = """
import ctypes, sys
from chakra_core.cli.main import command
sys.argv = ['chakra', 'stats', sys.argv[1]]
command()
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
_CHUNKS_PROBE = """
import resource
from chakra_core.cli._process import settle
settle()
data = bytes(512 << 10)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):  # blocks of 512 KiB made and freed in turn, as a reader's chunks are
    copy = data[1:] + b"x"
    again = copy[1:] + b"y"
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults < 2000)
"""


def test_a_command_keeps_the_top_of_glibc_s_heap(et_prefix):
    """On glibc, 4 MiB of blocks freed at the top of a command's heap stay there, free for the
    next allocation (mallinfo2's ``keepcost``), rather than being handed back to the system; and
    blocks of 512 KiB made and freed in turn come from the heap, even while its top is small, not
    from mappings of their own faulted in anew each time (200 such blocks: 25,600 page faults)."""
    import ctypes
    import os

    from chakra_core.cli._process import glibc

    if not glibc() or not hasattr(ctypes.CDLL(None), "mallinfo2") or os.environ.get("LD_PRELOAD"):
        pytest.skip("glibc 2.33 or later, its own malloc")
    for probe in (_HEAP_PROBE, _CHUNKS_PROBE):
        r = subprocess.run([sys.executable, "-c", probe, str(et_prefix)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "True", probe


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
