"""The ``ray`` and ``dask`` executors' local clusters listen on the loopback interface only
(``ss -ltnp`` lists every listening socket of the cluster's processes), unless ``listen_all``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from chakra_core.host._plugins import get_host

pytestmark = pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")


def _pid(_task):
    return os.getpid()


def _listening(pids: set[int]) -> list[str]:
    """The local addresses that the processes ``pids`` listen on (TCP)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if {int(p) for p in re.findall(r"pid=(\d+)", line)} & pids:
            found.append(line.split()[3])
    return found


def _cluster_pids(worker_pids: set[int]) -> set[int]:
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    return {me.pid, *worker_pids, *(p.pid for p in me.children(recursive=True))}


def _loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "::1", "::ffff:127.0.0.1")


@pytest.mark.parametrize("name, module", [("ray", "ray"), ("dask", "distributed")])
def test_local_cluster_listens_on_loopback_only(name, module):
    lib = pytest.importorskip(module)
    if name == "ray" and lib.is_initialized():
        pytest.skip("a Ray runtime of another test is running")
    impl = get_host().registry.get("executor", name)
    options = impl.check_options({"workers": 1})
    assert options["listen_all"] is False
    with impl.session(options):
        worker_pids = {value for _i, value in impl.map(_pid, [0, 1], options)}
        addresses = _listening(_cluster_pids(worker_pids))
    assert addresses, "the cluster's processes listen on no TCP port"
    assert [a for a in addresses if not _loopback(a)] == []
