"""Outputs are never half replaced: failures, full or read-only disks, things in the way, stale
temporaries, publication failures, and options that try to write outside the output directory.

Inputs are the text workloads in examples/text (the traces of a small and a large job)."""

from __future__ import annotations

import errno
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core import ConfigError, output_directory
from chakra_core.cli.main import main
from chakra_core.io import _publish
from chakra_core.testing import one_error
from chakra_core.trace._traceset import open_traceset

EXAMPLES = Path(__file__).parent.parent / "examples" / "text"
SMALL = [str(EXAMPLES / "dlrm_like.txt"), "-I", "npus=4"]
LARGE = [str(EXAMPLES / "gpt3_like.txt"), "-I", "npus=16"]


def export(out: Path, workload: list[str], *extra: str) -> int:
    return main(["export", *workload, "--to", "astrasim", "-o", str(out), *extra])


def convert(out: str, workload: list[str]) -> int:
    return main(["convert", *workload, "-o", out])


def snapshot(d: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``d``: relative path -> (content, permission bits)."""
    return {str(p.relative_to(d)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(d.rglob("*")) if p.is_file()}


def temporaries(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if ".chakra-" in p.name and p.name.endswith(".tmp"))


def one_error_line(capsys, target: Path) -> str:
    err = one_error(2, capsys.readouterr().err)
    assert str(target) in err and not re.search(r"\.chakra-\w+-\d+-", err), err
    return err


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (root only): a disk that fills up, and can be remounted read-only."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_failed_export_keeps_the_complete_earlier_one(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    assert export(out, SMALL) == 0
    before = snapshot(out)
    from chakra_core.io import _etio

    real = _etio.EtWriter.write_raw
    calls = {"n": 0}

    def fill_disk(self, data):  # the disk fills up while the export's workload is written
        calls["n"] += ".chakra-new-" in str(self.path)
        if calls["n"] > 200:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(_etio.EtWriter, "write_raw", fill_disk)
    capsys.readouterr()
    assert export(out, LARGE) == 2
    err = one_error_line(capsys, out / "workload")
    assert "No space left on device" in err
    assert snapshot(out) == before and temporaries(tmp_path) == []


def test_disk_full_export_and_convert(small_fs, capsys):
    out = small_fs / "export"
    assert export(out, SMALL) == 0
    before = snapshot(out)
    capsys.readouterr()
    assert export(out, LARGE) == 2
    assert "No space left on device" in one_error_line(capsys, out)
    assert snapshot(out) == before and temporaries(small_fs) == []
    sets = small_fs / "sets"
    assert convert(f"{sets}/", SMALL) == 0
    before = snapshot(sets)
    capsys.readouterr()
    assert convert(f"{sets}/", LARGE) == 2
    assert "No space left on device" in one_error_line(capsys, sets)
    assert snapshot(sets) == before and temporaries(small_fs) == []


def test_read_only_output_keeps_the_earlier_result(small_fs, capsys):
    out = small_fs / "export"
    assert export(out, SMALL) == 0 and convert(f"{small_fs}/job", SMALL) == 0
    before, sets = snapshot(out), snapshot(small_fs)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    capsys.readouterr()
    assert export(out, LARGE) == 2
    assert "Read-only file system" in one_error_line(capsys, out)
    assert convert(f"{small_fs}/job", LARGE) == 2
    assert "Read-only file system" in one_error_line(capsys, small_fs)
    assert snapshot(out) == before and snapshot(small_fs) == sets


def test_things_in_the_way(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    assert export(blocker, SMALL) == 2
    one_error_line(capsys, blocker)
    assert blocker.read_text() == "mine"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert export(foreign, SMALL) == 2
    assert ".chakra-output" in one_error_line(capsys, foreign)
    assert (foreign / "notes.txt").read_text() == "mine" and sorted(os.listdir(foreign)) == ["notes.txt"]
    (tmp_path / "job.0.et").mkdir()
    assert convert(f"{tmp_path}/job", SMALL) == 2
    one_error_line(capsys, tmp_path / "job.0.et")
    assert not list(tmp_path.glob("job.[1-9].et")) and temporaries(tmp_path) == []


def test_a_file_in_the_way_of_an_output_file_s_directory_is_named(tmp_path, capsys):
    # an output file under a file (report -o, graph -o, --timeline) said only "File exists"
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    assert convert(f"{tmp_path}/set/", SMALL) == 0
    capsys.readouterr()
    for args in (["report", f"{tmp_path}/set", "-o", f"{blocker}/r.html"],
                 ["graph", f"{tmp_path}/set", "-o", f"{blocker}/deeper/g.dot"]):
        assert main(args) == 2
        assert "a file is in the way of the output directory" in one_error_line(capsys, blocker)
    assert blocker.read_text() == "mine"


def test_a_set_in_a_shared_directory_keeps_the_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    assert convert(f"{tmp_path}/job", LARGE) == 0
    assert convert(f"{tmp_path}/job", SMALL) == 0
    assert sorted(os.listdir(tmp_path)) == ["job.0.et", "job.1.et", "job.2.et", "job.3.et", "notes.txt"]
    assert len(open_traceset(tmp_path / "job")) == 4


def test_a_directory_of_one_set_is_swapped_whole(tmp_path):
    out = tmp_path / "sets"
    assert convert(f"{out}/", LARGE) == 0
    inode = out.stat().st_ino
    assert convert(f"{out}/", SMALL) == 0
    assert sorted(os.listdir(out)) == [f"trace.{r}.et" for r in range(4)]
    assert out.stat().st_ino != inode  # a new directory, not the old one rewritten


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_dead_runs_are_removed_and_nothing_else(tmp_path):
    out = tmp_path / "out"
    assert export(out, SMALL) == 0
    dead, live = _dead_pid(), os.getpid()
    stale = [tmp_path / f".out.chakra-new-{dead}-0badcafe.tmp", tmp_path / f".out.chakra-old-{dead}-0badcafe.tmp"]
    for d in stale:
        (d / "workload").mkdir(parents=True)
        (d / "workload" / "trace.0.et").write_bytes(b"x" * 1000)
    sim = tmp_path / "sim"
    sim.mkdir()
    files = [sim / f".result.json.chakra-file-{dead}-abc.tmp"]
    kept = [tmp_path / f".out.chakra-new-{live}-0badcafe.tmp", tmp_path / ".out.mine.tmp",
            tmp_path / "out.chakra-new-1-0badcafe.tmp", sim / ".result.json.tmp"]
    for f in files + kept:
        f.write_text("x")
    assert export(out, LARGE) == 0
    assert main(["simulate", *SMALL, "-o", str(sim)]) == 0
    assert not any(p.exists() for p in stale + files) and all(p.exists() for p in kept)
    sets = tmp_path / "sets"
    sets.mkdir()
    leftover = sets / f".trace.chakra-set-{dead}-0badcafe.tmp"
    leftover.mkdir()
    (leftover / "trace.0.et").write_bytes(b"half written")
    assert convert(f"{sets}/trace", SMALL) == 0
    assert not leftover.exists() and len(open_traceset(sets)) == 4


def test_failure_at_publication_keeps_the_old_directory(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    assert export(out, SMALL) == 0
    before = snapshot(out)

    def refuse(a, b):
        raise OSError(errno.EIO, "Input/output error", str(a), None, str(b))

    monkeypatch.setattr(_publish, "_exchange", refuse)
    capsys.readouterr()
    assert export(out, LARGE) == 2
    assert "Input/output error" in one_error_line(capsys, out)
    assert snapshot(out) == before and temporaries(tmp_path) == []
    # without an atomic exchange: a second rename that fails puts the old directory back
    monkeypatch.setattr(_publish, "_exchange", lambda a, b: False)
    real_rename = os.rename

    def second_fails(a, b):
        if ".chakra-new-" in str(a):
            raise OSError(errno.EIO, "Input/output error", str(a), None, str(b))
        return real_rename(a, b)

    monkeypatch.setattr(_publish.os, "rename", second_fails)
    assert export(out, LARGE) == 2
    assert snapshot(out) == before and temporaries(tmp_path) == []
    monkeypatch.setattr(_publish.os, "rename", real_rename)
    assert export(out, LARGE) == 0 and snapshot(out) != before and temporaries(tmp_path) == []


def test_a_swap_killed_between_its_renames_is_undone_next_run(tmp_path):
    """The fallback swap killed after renaming the old directory aside: the next run puts it back
    before it builds, so a failing run leaves the complete old result."""
    out = tmp_path / "out"
    assert export(out, SMALL) == 0
    before = snapshot(out)
    aside = tmp_path / f".out.chakra-old-{_dead_pid()}-0badcafe.tmp"
    os.rename(out, aside)
    with pytest.raises(RuntimeError), output_directory(out):
        raise RuntimeError("the new run fails")
    assert snapshot(out) == before and not aside.exists()


class Killed(BaseException):
    """Stands for SIGKILL: no handler of the CLI catches it."""


def test_a_set_publication_cut_during_its_renames_is_completed_by_the_next_reader(tmp_path, monkeypatch):
    assert convert(f"{tmp_path}/job", LARGE) == 0
    new_dir = tmp_path / "new"
    assert convert(f"{new_dir}/", SMALL) == 0
    real_replace = os.replace
    moved = []

    def killed_after_two(a, b):
        if Path(b).parent == tmp_path:  # a publication rename (not one inside the staging directory)
            if len(moved) == 2:
                raise Killed  # nothing after this runs in a killed process
            moved.append(b)
        return real_replace(a, b)

    monkeypatch.setattr(_publish.os, "replace", killed_after_two)
    with pytest.raises(Killed):
        convert(f"{tmp_path}/job", SMALL)
    monkeypatch.setattr(_publish.os, "replace", real_replace)
    monkeypatch.setattr(_publish, "_alive", lambda pid: False)  # as the next process sees it
    assert len(list(tmp_path.glob("job.*.et"))) == 16  # two new ranks, fourteen old ones
    ts = open_traceset(tmp_path / "job")  # rolls the publication forward
    assert ts.ranks == [0, 1, 2, 3] and not [p for p in os.listdir(tmp_path) if ".chakra-" in p]
    assert all((tmp_path / f"job.{r}.et").read_bytes() == (new_dir / f"trace.{r}.et").read_bytes()
               for r in range(4))


@pytest.mark.parametrize("backend", ["et", "json"])
@pytest.mark.parametrize("prefix", ["../escaped", "/tmp/absolute", "a/../../b", ".", ""])
def test_exporter_prefix_stays_inside_the_output(tmp_path, capsys, backend, prefix):
    out = tmp_path / "a" / "out"
    rc = main(["export", *SMALL, "--to", backend, "-o", str(out), "-O", f"prefix={prefix}"])
    err = capsys.readouterr().err
    assert "option 'prefix'" in one_error(rc, err)
    assert list(tmp_path.rglob("*")) == []  # not even the directories made for the output


def test_exporter_prefix_may_name_a_subdirectory(tmp_path):
    out = tmp_path / "out"
    assert main(["export", *SMALL, "--to", "json", "-o", str(out), "-O", "prefix=sub/job"]) == 0
    assert sorted(p.name for p in (out / "sub").iterdir()) == [f"job.{r}.json" for r in range(4)]


def test_run_hint_is_shell_quoted(tmp_path, capsys):
    out = tmp_path / "it's $(touch PWNED) `touch PWNED2`"
    assert export(out, SMALL) == 0
    hint = next(line for line in capsys.readouterr().out.splitlines() if "run it:" in line)
    cmd = hint.split("run it: ", 1)[1].split(" (binary", 1)[0]
    assert cmd == f"cd {shlex.quote(str(out))} && ./run.sh"
    proc = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "CHAKRA_ASTRASIM_BIN": "true"})
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.rglob("PWNED*"))


def test_network_far_larger_than_the_set_is_refused(tmp_path, capsys):
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 200000 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    out = tmp_path / "out"
    assert export(out, SMALL, "--network", str(net)) == 2
    err = capsys.readouterr().err
    assert "199996 idle ranks" in err and "max_idle_ranks" in err and not out.exists()


def test_inside_output_refuses_escapes(tmp_path):
    assert _publish.inside_output(tmp_path, "a/b", "prefix") == tmp_path / "a" / "b"
    for bad in ("..", "../x", "/x", "a/../../x"):
        with pytest.raises(ConfigError, match="option 'timeline'"):
            _publish.inside_output(tmp_path, bad, "timeline")


def test_a_failed_write_to_a_new_directory_leaves_none_behind(tmp_path, monkeypatch, capsys):
    from chakra_core.io import _etio

    def full_disk(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_etio.EtWriter, "write_raw", full_disk)
    monkeypatch.setattr(_etio.EtWriter, "write_many", full_disk)
    monkeypatch.setattr(_etio.EtWriter, "write_framed", lambda self, data, count: full_disk(self, data))
    (tmp_path / "kept").mkdir()
    assert convert(f"{tmp_path}/kept/new/deeper/", SMALL) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept"]


def test_a_failed_run_leaves_no_directory_it_made(tmp_path, capsys):
    """A backend that fails removes the directories it made for its output, never one that was there."""
    (tmp_path / "kept").mkdir()
    outputs = [tmp_path / "new" / "deeper" / "simpy", tmp_path / "kept"]
    for output in outputs:
        pipe = tmp_path / "p.yaml"
        pipe.write_text(f"input: {{format: text, paths: [{EXAMPLES / 'dlrm_like.txt'}], options: {{npus: 4}}}}\n"
                        f"backends:\n  - name: simpy\n    output: {output}\n"
                        f"    options: {{system: {EXAMPLES.parent / 'system' / 'two_nodes.yaml'}}}\n")
        assert main(["run", str(pipe)]) == 2
        assert "the network has 16 NPUs" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "p.yaml"] and not any((tmp_path / "kept").iterdir())


def test_python_api_refuses_a_file_or_a_directory_in_the_way(tmp_path):
    import chakra_core

    assert convert(f"{tmp_path}/et/", SMALL) == 0
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    (tmp_path / "dir").mkdir()
    calls = [(lambda: chakra_core.simulate(f"{tmp_path}/et/", output=blocker), blocker, "a file is in the way"),
             (lambda: chakra_core.export(f"{tmp_path}/et/", "astrasim", blocker), blocker, "a file is in the way"),
             (lambda: chakra_core.export(f"{tmp_path}/et/", "astrasim", blocker / "sub"), blocker,
              "a file is in the way"),
             (lambda: chakra_core.simulate(f"{tmp_path}/et/", timeline=str(tmp_path / "dir")), tmp_path / "dir",
              "a directory is in the way of an output file")]
    for call, path, message in calls:
        with pytest.raises(ConfigError) as e:
            call()
        assert e.value.where == str(path) and message in e.value.message
    assert blocker.read_text() == "mine" and not any((tmp_path / "dir").iterdir())
