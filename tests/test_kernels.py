"""Kernels written once (:mod:`chakra_core.base._kernels`): the plain function runs as Python,
its compiled form is numba's, with the kernels it calls compiled too; closed-form answers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from chakra_core.base._inttable import new_table, table_get, table_put
from chakra_core.base._kernels import chosen, compiled, kernel
from chakra_core.validation import _frontkernel

pytest.importorskip("numba")


@pytest.mark.parametrize("compile_it", [False, True])
def test_union_of_two_sorted_sets(compile_it):
    pool = np.array([1, 3, 5, 2, 3, 6], np.int64)
    out = np.zeros(6, np.int64)
    m = chosen(_frontkernel._merge, compile_it)(pool, 0, 3, 3, 3, out)
    assert out[:m].tolist() == [1, 2, 3, 5, 6]


def test_compiled_form_calls_compiled_kernels():
    import numba

    reduce = compiled(_frontkernel._reduce)
    assert compiled(_frontkernel._reduce) is reduce and isinstance(reduce, numba.core.dispatcher.Dispatcher)
    assert reduce.py_func.__globals__["_mark_common"] is compiled(_frontkernel._mark_common)
    assert _frontkernel._reduce.__globals__["_mark_common"] is _frontkernel._mark_common  # the module's stays plain
    # set 1 = {0}; skeleton node 1 waits for set 1, node 0 for nothing: of {0, 1}, 0 goes
    pool, start, size = np.array([0], np.int64), np.array([0, 0], np.int64), np.array([0, 1], np.int64)
    waits = np.array([0, 1], np.int64)
    for compile_it in (False, True):
        items, marks = np.array([0, 1], np.int64), np.zeros(2, np.int64)
        r = chosen(_frontkernel._reduce, compile_it)(pool, start, size, waits, items, 2, marks)
        assert items[:r].tolist() == [1]


@pytest.mark.parametrize("compile_it", [False, True])
def test_int_table_keeps_every_key_as_it_grows(compile_it):
    # keys that share their low bits, negative ones, and the extremes: a dict is the reference
    get, put = chosen(table_get, compile_it), chosen(table_put, compile_it)
    keys = [k << 31 | 7 for k in range(300)] + [-k for k in range(1, 300)] + [-(1 << 63), (1 << 63) - 1, 0]
    table, kept = new_table(4), {}
    for v, key in enumerate(keys):
        assert get(table, key) == -1
        table = put(table, len(kept), key, v)
        kept[key] = v
    assert table.shape[1] == 2048  # doubled from 4 before half full: 901 keys
    assert {k: int(get(table, k)) for k in keys} == kept
    assert get(table, 12345) == -1


def test_int_table_puts_in_the_same_slots_either_way():
    # the compiled form against the plain one, key after key, through two doublings
    keys = [3, 1 << 40, -5, 3 << 31, -(1 << 63), (1 << 63) - 1] + [k * 7919 - 500 for k in range(60)]
    table, plain = new_table(32), new_table(32)
    for v, key in enumerate(keys):
        table = compiled(table_put)(table, v, key, v)
        plain = table_put(plain, v, key, v)
        assert np.array_equal(table, plain), key
    assert table.shape[1] == 256


def test_importing_the_validator_does_not_load_numba():
    code = ("import sys; import chakra_core.validation._validate, chakra_core.trace._roles; "
            "print('numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr


@kernel()
def _twice(x):  # pragma: no cover - compiled by the test below
    return 2 * x


def test_compiled_form_is_made_once_when_threads_ask_at_once(monkeypatch):
    """Threads asking for a kernel's compiled form at once (the role keys' threads at their first
    key) get one dispatcher: made under a lock, while the others wait (a slow numba import, as on a
    cold machine, holds the first thread in the middle)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from chakra_core.base import _kernels

    real = _kernels._numba

    def slow():
        time.sleep(0.05)
        return real()

    monkeypatch.setattr(_kernels, "_numba", slow)
    with ThreadPoolExecutor(4) as pool:
        forms = list(pool.map(lambda _: compiled(_twice), range(8)))
    assert all(f is forms[0] for f in forms)
    assert forms[0](21) == 42


def _copy_cases():
    """(dst, at, src, start, count) runs between arrays and within one, overlapping either way,
    empty, at both ends, of bytes and of int64 (numpy's slice assignment is the reference)."""
    rng = np.random.default_rng(7)
    cases = []
    for dtype in (np.uint8, np.int64):
        for _ in range(60):
            n = int(rng.integers(1, 90))
            src = rng.integers(0, 250, n).astype(dtype)
            dst = rng.integers(0, 250, int(rng.integers(1, 90))).astype(dtype)
            count = int(rng.integers(0, min(n, len(dst)) + 1))
            start, at = int(rng.integers(0, n - count + 1)), int(rng.integers(0, len(dst) - count + 1))
            cases.append((dst, at, src, start, count))
            same = src.copy()  # within one array: the runs overlap in either direction or not at all
            cases.append((same, int(rng.integers(0, n - count + 1)), same, start, count))
    return cases


@pytest.mark.parametrize("compile_it", [False, True])
def test_copy_run_copies_as_a_slice_assignment_does(compile_it):
    from chakra_core.base._copyrun import copy_run

    copy = chosen(copy_run, compile_it)
    for dst, at, src, start, count in _copy_cases():
        want = dst.copy()
        want[at:at + count] = (want if src is dst else src)[start:start + count].copy()
        copy(dst, at, src, start, count)
        assert dst.tolist() == want.tolist()


@pytest.mark.parametrize("compile_it", [False, True])
def test_copy_run_takes_strided_and_read_only_arrays(compile_it):
    from chakra_core.base._copyrun import copy_run

    copy = chosen(copy_run, compile_it)
    base = np.arange(40, dtype=np.int64)
    dst = np.zeros(12, np.int64)
    copy(dst, 1, base[::3], 2, 10)  # every third item: items 6, 9, ..., 33
    assert dst.tolist() == [0, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 0]
    frozen = np.frombuffer(b"\x01\x02\x03\x04\x05", np.uint8)
    out = np.zeros(4, np.uint8)
    copy(out, 0, frozen, 1, 4)
    assert out.tolist() == [2, 3, 4, 5]
    view = np.zeros(10, np.uint8)[::2]  # a strided destination
    copy(view, 1, frozen, 0, 3)
    assert view.tolist() == [0, 1, 2, 3, 0]


@pytest.mark.parametrize("compile_it", [False, True])
@pytest.mark.parametrize("run", [(-1, 0, 2), (0, -1, 2), (0, 0, -1), (3, 0, 2), (0, 4, 2), (0, 0, 6),
                                 (1, 1, 2**63 - 1)])  # the last: an end past int64's range
def test_copy_run_refuses_a_run_outside_an_array(compile_it, run):
    from chakra_core.base._copyrun import copy_run

    dst, src = np.zeros(4, np.uint8), np.arange(5, dtype=np.uint8)
    with pytest.raises(IndexError, match="outside an array"):
        chosen(copy_run, compile_it)(dst, run[0], src, run[1], run[2])
    assert dst.tolist() == [0, 0, 0, 0]


def test_copy_run_compiles_to_a_memmove_for_contiguous_arrays():
    import numba

    from chakra_core.base._copyrun import copy_run

    native = compiled(copy_run)
    assert isinstance(native, numba.core.dispatcher.Dispatcher) and native is compiled(copy_run)
    src = np.ones(8, np.uint8)
    for dst, memmove in ((np.zeros(8, np.uint8), True), (np.zeros(16, np.uint8)[::2], False)):
        native(dst, 0, src, 0, 8)  # the strided destination: numba's own slice copy
        sig = tuple(numba.typeof(v) for v in (dst, 0, src, 0, 8))
        assert ("llvm.memmove" in native.inspect_llvm(sig)) is memmove


@pytest.mark.parametrize("args", ["read-only destination", "item types differ", "two dimensions",
                                  "unsigned count"])
def test_compiled_copy_run_refuses_what_it_cannot_copy(args):
    import numba

    from chakra_core.base._copyrun import copy_run

    dst, src, count = np.zeros(4, np.uint8), np.arange(4, dtype=np.uint8), 2
    if args == "read-only destination":
        dst = np.frombuffer(b"\0\0\0\0", np.uint8)
    elif args == "item types differ":
        dst = np.zeros(4, np.int64)
    elif args == "two dimensions":
        dst, src = np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8)
    else:
        count = np.uint64(2)
    with pytest.raises(numba.core.errors.TypingError):
        compiled(copy_run)(dst, 0, src, 0, count)


def test_the_first_compiled_kernel_skips_numbas_blas_probe():
    """numba's first load imports scipy only to ask whether a BLAS is there (0.13-0.21 s): skipped
    (:mod:`chakra_core.base._blasprobe`); scipy imports as before outside the probe, and numba's
    own use of BLAS (``np.dot`` of floats) still works."""
    pytest.importorskip("scipy")
    code = ("import sys, numpy as np; from chakra_core.base._kernels import compiled; "
            "from chakra_core.base._inttable import new_table, table_put; "
            "compiled(table_put)(new_table(32), 0, 5, 1); "
            "import numba, numba.np.arraymath as m; print('scipy.linalg' in sys.modules, m._HAVE_BLAS); "
            "import scipy.linalg; print(hasattr(scipy.linalg, 'solve')); "
            "print(numba.njit(lambda a, b: np.dot(a, b))(np.ones(3), np.arange(3.0)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.stdout.split("\n")[:3] == ["False False", "True", "3.0"], r.stderr
