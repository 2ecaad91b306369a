"""Seeded mutation fuzzing of the loops that run either compiled (numba) or as Python: both forms
must give the same answer on the same bytes, broken ones included.

Seeds: the golden trace (tests/data) and the 8-rank ResNet-50-like text workload converted to
``.et`` (examples/text).  Each case copies the seed set, changes 1 to 4 random bytes of one of its
rank files, and runs one check both ways:

- ``role_key``: the rank's key (or the error's type), with the key caches emptied between forms;
- ``node_columns``: the rank's columns with ``comm_size``, ``pg_name`` and ``comm_src`` asked for
  (every array, the names, the flags), or the error's type and text;
- ``validate``: ``validate_as`` of the whole set: its findings (rule, rank, message), or the
  error's type and text.

A case where the forms differ is printed with its number (``random.Random((seed, case))`` remakes
it).  Known and documented (docs/api.md, ``role_key``): as Python, ``role_key`` reads a rank that
is not a plain file under 16 KiB naming no peer with ``EtReader``, which checks that each batch
decodes (a ``TraceFormatError``, "not a Chakra node message", where the compiled walk gives a
key); such a case counts as ``python-checks``, not as a difference.

Needs numba.  Usage: ``python benches/fuzz_forms.py [--cases 300] [--seed 1] [--checks role_key,...]``
(exit 1 when a case differs).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ("role_key", "node_columns", "validate")


def seed_sets(work: Path) -> list[Path]:
    """The seed sets, each a folder of ``.et`` ranks: the golden trace, the 8-rank ResNet-50-like
    workload converted."""
    golden = work / "golden"
    golden.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "golden.0.et", golden / "trace.0.et")
    resnet = work / "resnet"
    subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "convert",
                    str(ROOT / "examples" / "text" / "resnet50_like.txt"), "-O", "npus=8", "-o", f"{resnet}/"],
                   check=True, capture_output=True, cwd=work)
    return [golden, resnet]


def _forget_keys() -> None:
    """Empty the process's role keys (kept by file and by content), so that each form takes its own."""
    from chakra_core.trace import _roles

    _roles._KEPT.clear()
    _roles._BY_CONTENT.clear()
    _roles._LAST[0] = None


def _role_key(folder: Path, rank: int, compile_it: bool) -> Any:
    from chakra_core import open_traceset, role_key

    _forget_keys()
    return repr(role_key(open_traceset(str(folder))[rank], compile_it=compile_it))


def _columns(folder: Path, rank: int, compile_it: bool) -> Any:
    from chakra_core import node_columns, open_traceset

    c = node_columns(open_traceset(str(folder))[rank], attrs=("comm_size", "pg_name", "comm_src"),
                     compile_it=compile_it)
    arrays = (c.ids, c.types, c.duration_micros, c.dep_ptr, c.dep_ids, c.name_ptr, c.flags)
    attrs = {k: tuple(repr(getattr(v, f, None)) for f in ("kind", "values")) for k, v in c.attrs.items()}
    return [a.tolist() for a in arrays], bytes(c.name_bytes), attrs


def _validate(folder: Path, rank: int, compile_it: bool) -> Any:
    from chakra_core import open_traceset
    from chakra_core.validation._validate import validate_as

    _forget_keys()
    return sorted((f.rule, f.rank, str(f.message)) for f in validate_as(open_traceset(str(folder)), compile_it))


_RUN: dict[str, Callable[[Path, int, bool], Any]] = {"role_key": _role_key, "node_columns": _columns,
                                                     "validate": _validate}


def _outcome(check: str, folder: Path, rank: int, compile_it: bool) -> tuple[str, Any]:
    try:
        return "ok", _RUN[check](folder, rank, compile_it)
    except Exception as e:  # the answer compared is the error's type and text
        return type(e).__name__, str(e).replace(str(folder), "SET")


def run_case(seeds: list[Path], work: Path, seed: int, case: int, check: str) -> str:
    """One case: ``same``, ``python-checks`` or ``differs``."""
    rng = random.Random(f"{seed}:{case}")
    source = rng.choice(seeds)
    folder = work / f"case{case}"
    shutil.copytree(source, folder)
    files = sorted(folder.glob("*.et"))
    victim = rng.randrange(len(files))
    data = bytearray(files[victim].read_bytes())
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    files[victim].write_bytes(bytes(data))
    rank = int(files[victim].name.split(".")[1])
    try:
        plain, compiled = (_outcome(check, folder, rank, c) for c in (False, True))
    finally:
        shutil.rmtree(folder)
    if plain == compiled:
        return "same"
    if (check == "role_key" and plain[0] == "TraceFormatError" and "not a Chakra node message" in plain[1]
            and compiled[0] == "ok"):
        return "python-checks"
    print(f"case {case} ({check}, {source.name} rank {rank}) differs:\n  python:   {str(plain)[:300]}\n"
          f"  compiled: {str(compiled)[:300]}")
    return "differs"


def campaign(cases: int, seed: int = 1, checks: tuple[str, ...] = CHECKS) -> dict[str, Counter]:
    """Run ``cases`` cases over ``checks`` in turn; the outcomes per check."""
    from chakra_core.base._kernels import INSTALLED

    if not INSTALLED:
        raise SystemExit("fuzz_forms: numba is not installed (pip install 'chakra-core[fast]')")
    figures: dict[str, Counter] = {c: Counter() for c in checks}
    with tempfile.TemporaryDirectory(prefix="fuzz_forms_") as tmp:
        work = Path(tmp)
        seeds = seed_sets(work)
        for case in range(cases):
            check = checks[case % len(checks)]
            figures[check][run_case(seeds, work, seed, case, check)] += 1
    return figures


def main() -> int:
    """Print the outcomes per check; exit 1 when a case differs."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checks", default=",".join(CHECKS), help=f"comma-separated subset of {', '.join(CHECKS)}")
    args = ap.parse_args()
    checks = tuple(c for c in args.checks.split(",") if c)
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        ap.error(f"unknown check {unknown[0]!r} (choose from {', '.join(CHECKS)})")
    os.chdir(tempfile.gettempdir())
    figures = campaign(args.cases, args.seed, checks)
    for check, counts in figures.items():
        print(f"{check:<13} " + "  ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if any(c["differs"] for c in figures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
