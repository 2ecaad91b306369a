"""Seeded mutation fuzzing of every input kind through every command of the ``chakra`` CLI.

Seeds are real inputs of the repository: the golden trace (tests/data), the text workloads and
system files of examples/, a trace set converted from one of them, its JSON form, and the recorded
PyTorch host ET + Kineto pairs of chakra-pytorch.  Each case mutates one file of a seed (bit
flips, interesting bytes, cut and repeated ranges, truncation, interesting numbers and tokens,
deep nesting, length prefixes) and runs one command on it.  Mutations come from a
``random.Random`` seeded by ``(seed, case index)``, so a case is reproduced by its number.

Cases run in-process (``chakra_core.cli.main.main``) inside a worker subprocess that has a memory
limit (``resource.setrlimit``) and a per-case alarm; the parent restarts a worker that dies or
stops answering.  Each case ends as one of:

- ``ok``: exit 0 (or 1 from ``validate`` with findings);
- ``error``: exit 2 with a one-line error (``error-unlocated`` when it names no file);
- ``internal``: exit 1 with "internal error", or an exception that escaped ``main``;
- ``crash``: the worker died of a signal; ``hang``: the case ran past its time limit;
- ``garbage``: ``convert``/``jsonize``/``transform``/``generate``/``synth sample`` exited 0 but
  their output does not read back or has a structural validation error, or ``synth fit`` exited
  0 but ``synth show`` refuses its model.

Run: ``python benches/fuzz.py --cases 10000 --seed 1`` (prints figures per kind and outcome;
``--keep DIR`` saves the inputs of bad cases).  tests/test_fuzz.py runs a short subset.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("et", "et.gz", "json", "pytorch", "text", "system", "pipeline")
TRACE_COMMANDS = ("convert", "validate", "stats", "jsonize", "simulate", "export")
BAD = ("internal", "crash", "hang", "garbage", "error-unlocated", "outside-write")


def _load_kinds():
    """benches/fuzz_kinds.py (the kinds of issue 32), loaded beside this file however it was loaded."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("chakra_fuzz_kinds", Path(__file__).with_name("fuzz_kinds.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_KINDS = _load_kinds()
#: the kinds added for issue 32 (benches/fuzz_kinds.py), and every kind
NEW_KINDS: tuple[str, ...] = _KINDS.KINDS
ALL_KINDS = KINDS + NEW_KINDS
#: files an escaping case would write outside its directory
_OUTSIDE = ("/tmp/abs", "/tmp/ESC.json", "/tmp/ESCAPED.json")

# -- seeds ---------------------------------------------------------------------------------------


@dataclass
class Seed:
    """One seed input: its files (name -> bytes), the file to mutate, and extra CLI arguments."""

    kind: str
    name: str
    files: dict[str, bytes]
    target: str
    args: list[str] = field(default_factory=list)


def _cli(*argv: str) -> None:
    import contextlib

    from chakra_core.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()):
        status = main(list(argv))
    if status != 0:
        raise SystemExit(f"seed preparation failed: chakra {' '.join(argv)}")


def _read_dir(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


#: the seeds of ``--small`` campaigns (the test suite's): the quickest of each kind
SMALL = {"golden", "resnet-2", "golden-lines", "mlp/kineto.0.json", "mlp/pytorch_et.0.json",
         "resnet50_like.txt", "system.yaml", "system.json", "network.yml", "quickstart-like"}


def build_seeds(work: Path, small: bool = False) -> dict[str, list[Seed]]:
    """The seeds of every kind, made from the repository's real inputs under ``work``
    (only the :data:`SMALL` ones with ``small``)."""
    seeds: dict[str, list[Seed]] = defaultdict(list)
    text = ROOT / "examples" / "text"
    _cli("convert", str(text / "resnet50_like.txt"), "-I", "npus=2", "-o", str(work / "set") + "/")
    et_set = _read_dir(work / "set")
    golden = (ROOT / "tests" / "data" / "golden.0.et").read_bytes()
    seeds["et"] += [Seed("et", "golden", {"golden.0.et": golden}, "golden.0.et"),
                    Seed("et", "resnet-2", et_set, "trace.1.et")]
    gz = {k + ".gz": gzip.compress(v, mtime=0) for k, v in et_set.items()}
    seeds["et.gz"] += [Seed("et.gz", "resnet-2", gz, "trace.0.et.gz"),
                       Seed("et.gz", "golden", {"golden.0.et.gz": gzip.compress(golden, mtime=0)},
                            "golden.0.et.gz")]
    _cli("jsonize", str(work / "set"), "-o", str(work / "json") + "/")
    _cli("jsonize", str(ROOT / "tests" / "data" / "golden.0.et"), "-o", str(work / "golden.jsonl"), "--lines")
    seeds["json"] += [Seed("json", "resnet-2", _read_dir(work / "json"), "trace.0.json"),
                      Seed("json", "golden-lines", {"golden.jsonl": (work / "golden.jsonl").read_bytes()},
                           "golden.jsonl")]
    data = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
    for name in ("mlp", "ddp", "collectives"):
        files = {p.name[: -len(".gz")]: gzip.decompress(p.read_bytes())
                 for p in sorted((data / name).glob("*.json.gz"))}
        for target in sorted(files)[:2]:
            seeds["pytorch"].append(Seed("pytorch", f"{name}/{target}", files, target))
    for p in sorted(text.glob("*.txt")):
        seeds["text"].append(Seed("text", p.name, {p.name: p.read_bytes()}, p.name, ["-I", "npus=8"]))
    system = ROOT / "examples" / "system"
    for p in sorted(system.glob("*.yaml")) + sorted((system / "astra").iterdir()):
        if p.name != "simulate_text.yaml":
            seeds["system"].append(Seed("system", p.name, {p.name: p.read_bytes()}, p.name))
    pipeline = (
        "requires: [\"chakra-text>=0.1\", \"chakra-simpy>=0.1\"]\n"
        "input:\n  format: text\n  paths: [resnet50_like.txt]\n  options: {npus: 2, time_unit: cycles}\n"
        "backends:\n  - name: et\n    output: out/et\n  - name: simpy\n    output: out/simpy\n"
        "    options: {system: system.yaml}\n  - name: astrasim\n    output: out/astrasim\n"
    )
    seeds["pipeline"].append(Seed("pipeline", "quickstart-like", {
        "pipeline.yaml": pipeline.encode(), "resnet50_like.txt": (text / "resnet50_like.txt").read_bytes(),
        "system.yaml": (system / "system.yaml").read_bytes()}, "pipeline.yaml"))
    seeds["pipeline"].append(Seed("pipeline", "system-of-pipeline", dict(seeds["pipeline"][0].files),
                                  "system.yaml"))
    if small:
        seeds = defaultdict(list, {k: [s for s in v if s.name in SMALL] for k, v in seeds.items()})
    for kind, items in _KINDS.build(work, _cli, ROOT, small).items():
        seeds[kind] += [Seed(kind, name, files, target, extra) for name, files, target, extra in items]
    return seeds


# -- mutations -----------------------------------------------------------------------------------

_NUMBERS = [b"0", b"-1", b"1", b"2147483647", b"2147483648", b"4294967296", b"9223372036854775807",
            b"9223372036854775808", b"18446744073709551616", b"1000000000000", b"1e3", b"+2", b"1_000",
            "\u0663".encode(), b"1e400", b"NaN", b"Infinity", b"-0", b"0.5", b"99999999999999999999999"]
_TOKENS = [b"\xff", b"\xfe\xff", b"\xed\xa0\x80", b"\\ud800", b"\x00", b"!!int abc", b"!!binary x",
           b"&a [*a]", b"null", b"[]", b"{}", b'""', b"true", b"#", b"\n", b"\t", b",", b"]", b"}", b":",
           b"'", b'"', b"NONE", b"ALLREDUCE", b"\r\n", "\u00e9".encode()]
_VARINTS = [b"\x00", b"\x7f", b"\x80\x01", b"\xff\xff\xff\xff\x0f", b"\xff" * 9 + b"\x01", b"\x80" * 11,
            b"\xff\xff\xff\x7f", b"\x12\x02\xff\xfe", b"\x2a\x05\x01\x02\x03\x04\x05"]
_DEPTHS = (50, 99, 101, 300, 5000)
_NUMBER_RE = re.compile(rb"-?\d+(\.\d+)?")


def _span(rng: random.Random, n: int) -> tuple[int, int]:
    a = rng.randrange(max(n, 1))
    return a, min(n, a + rng.choice((1, 2, 4, 16, 256, 4096)))


def _mutate_once(rng: random.Random, data: bytes, binary: bool) -> bytes:
    n = len(data)
    op = rng.randrange(9)
    if n == 0:
        return rng.choice(_TOKENS)
    if op == 0:  # flip bits
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 8))):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 1:  # an interesting byte
        i = rng.randrange(n)
        return data[:i] + bytes([rng.choice((0, 0xFF, 0x7F, 0x80, 0xFE, 0x0A, 0x22))]) + data[i + 1:]
    if op == 2:  # cut a range
        a, b = _span(rng, n)
        return data[:a] + data[b:]
    if op == 3:  # repeat a range
        a, b = _span(rng, n)
        return data[:b] + data[a:b] * rng.choice((2, 3, 100)) + data[b:]
    if op == 4:  # truncate
        return data[: rng.randrange(n)]
    if op == 5 and not binary:  # an interesting number in place of one
        ms = list(_NUMBER_RE.finditer(data[:1 << 20]))
        if ms:
            m = rng.choice(ms)
            return data[: m.start()] + rng.choice(_NUMBERS) + data[m.end():]
    if op == 6 and not binary:  # deep nesting at a value position
        i = data.find(b"[", rng.randrange(n))
        i = i if i >= 0 else rng.randrange(n)
        d = rng.choice(_DEPTHS)
        return data[:i] + b"[" * d + b"]" * d + (b"," if data[i:i + 1] == b"[" else b"") + data[i:]
    if op == 7 and binary:  # a length prefix or field with a strange varint
        i = rng.randrange(n)
        return data[:i] + rng.choice(_VARINTS) + data[i + 1:]
    i = rng.randrange(n + 1)  # insert a token or number
    return data[:i] + rng.choice(_TOKENS + _NUMBERS) + data[i:]


_FIELD_VALUES = {
    "duration_micros": (0, 1 << 62, (1 << 64) - 1, 1 << 53),
    "start_time_micros": (0, (1 << 64) - 1),
    "type": (0, 1, 2, 3, 4, 5, 6, 7, 8, 255, 1 << 31),
}
_ATTR_VALUES = {
    "comm_size": (-1, 0, (1 << 63) - 1, 1 << 40), "comm_type": (-1, 0, 1, 2, 3, 4, 5, 6, 99),
    "comm_src": (-1, 0, 1, 5, (1 << 31) - 1), "comm_dst": (-1, 0, 1, 5, (1 << 31) - 1),
    "comm_tag": (-1, 0, 7, (1 << 31) - 1), "pg_name": ("", "0", "1", "nope", "\u00e9"),
    "num_ops": (-1, 0, (1 << 63) - 1), "tensor_size": (0, (1 << 64) - 1), "is_cpu_op": (True, False),
}


def _mutate_nodes(rng: random.Random, data: bytes) -> bytes:
    """Decode an .et file, give one node a strange field, attribute or dependency; re-encode."""
    from chakra_core import GlobalMetadata, Node, encode_varint, set_attr

    frames, pos = [], 0
    while pos < len(data):
        ln, p = 0, pos
        shift = 0
        while True:
            b = data[p]
            ln |= (b & 0x7F) << shift
            p += 1
            shift += 7
            if not b & 0x80:
                break
        frames.append(data[p:p + ln])
        pos = p + ln
    meta, nodes = GlobalMetadata.FromString(frames[0]), [Node.FromString(f) for f in frames[1:]]
    n = rng.choice(nodes)
    what = rng.randrange(4)
    try:
        if what == 0:
            name = rng.choice(sorted(_FIELD_VALUES))
            setattr(n, name, rng.choice(_FIELD_VALUES[name]))
        elif what == 1:
            name = rng.choice(sorted(_ATTR_VALUES))
            set_attr(n, name, rng.choice(_ATTR_VALUES[name]))
        elif what == 2:
            deps = n.data_deps if rng.random() < 0.5 else n.ctrl_deps
            deps.append(rng.choice([n.id, 0, (1 << 64) - 1, rng.choice(nodes).id, 10**9]))
        else:
            nodes.append(nodes[rng.randrange(len(nodes))])  # a duplicate id
    except (ValueError, TypeError, OverflowError):
        pass
    out = [meta.SerializeToString()] + [x.SerializeToString() for x in nodes]
    return b"".join(encode_varint(len(x)) + x for x in out)


def mutate(rng: random.Random, data: bytes, kind: str) -> bytes:
    """One to three mutations of ``data`` (a gzip file is mutated inside or outside)."""
    if kind in ("et", "et.gz") and rng.random() < 0.3:
        inner = gzip.decompress(data) if kind == "et.gz" else data
        inner = _mutate_nodes(rng, inner)
        return gzip.compress(inner, mtime=0) if kind == "et.gz" else inner
    if kind == "et.gz" and rng.random() < 0.7:
        inner = gzip.decompress(data)
        for _ in range(rng.randint(1, 3)):
            inner = _mutate_once(rng, inner, True)
        return gzip.compress(inner, mtime=0)
    binary = kind in ("et", "et.gz")
    for _ in range(rng.randint(1, 3)):
        data = _mutate_once(rng, data, binary)
    return data


_ABSOLUTE = re.compile(rb"(^|[\s\[,:{'\"])[/~]")


def make_case(seeds: dict[str, list[Seed]], seed: int, index: int, kinds: tuple[str, ...]) -> dict:
    """Case ``index`` of campaign ``seed``: its kind, files and command line."""
    rng = random.Random(f"{seed}:{index}")
    kind = kinds[index % len(kinds)]
    s = rng.choice(seeds[kind])
    if kind in NEW_KINDS:
        command, argv, files = _KINDS.make(kind, rng, (s.name, s.files, s.target, s.args), mutate)
        return {"index": index, "kind": kind, "seed": s.name, "command": command, "argv": argv,
                "files": {k: v.hex() for k, v in files.items()}}
    files = dict(s.files)
    while True:
        files[s.target] = mutate(rng, s.files[s.target], kind)
        # a mutated pipeline writes where it says: keep its outputs inside the case directory
        if kind != "pipeline" or not _ABSOLUTE.search(files[s.target]):
            break
    if kind == "system":
        command = rng.choice(("simulate", "export"))
        argv = [command, "SET", "--system", s.target]
    elif kind == "pipeline":
        command, argv = "run", ["run", "pipeline.yaml"]
    else:
        command = TRACE_COMMANDS[(index // len(kinds)) % len(TRACE_COMMANDS)]
        inputs = [s.target] if kind in ("text",) or (kind == "et" and s.name == "golden") else sorted(files)
        if kind == "et.gz" and s.name == "golden":
            inputs = [s.target]
        if command == "jsonize" and len(inputs) > 1:
            inputs = ["."]  # one PATH: the case directory holds the set
        argv = [command, *inputs, *s.args]
    if command == "convert":
        argv += ["-o", "out/"]
    elif command == "jsonize":
        argv += ["-o", "out/"]
    elif command == "export":
        argv += ["--to", "astrasim", "-o", "out"]
    return {"index": index, "kind": kind, "seed": s.name, "command": command, "argv": argv,
            "files": {k: v.hex() for k, v in files.items()}}


# -- the worker (runs in a subprocess) -----------------------------------------------------------


class _Timeout(BaseException):
    """The per-case alarm (a BaseException, so no handler of the CLI swallows it)."""


def _call(argv: list[str]) -> tuple[int | None, str, str]:
    """Run ``chakra argv`` in-process: (exit status or None when it raised, stdout, stderr)."""
    import contextlib
    import traceback
    import warnings

    from chakra_core.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("default")
        try:
            rc = main(argv)
        except _Timeout:
            raise
        except SystemExit as e:  # argparse usage errors
            rc = e.code if isinstance(e.code, int) else 2
        except BaseException:  # noqa: BLE001 - what escaped main is the finding itself
            return None, out.getvalue(), err.getvalue() + traceback.format_exc()
    return rc, out.getvalue(), err.getvalue()


def _classify(command: str, rc: int | None, out: str, err: str) -> str:
    if rc is None or "internal error" in err or "Traceback" in err:
        return "internal"
    if rc == 0 or (command == "validate" and re.search(r"^FAILED: \d+ rank", out + err, re.M)):
        return "ok"  # validate: 2 with findings
    if command == "sweep" and rc == 1:
        return "ok"  # points failed, each with its one-line error
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ": error: " in ln or ln.startswith("usage:")]
        if any(ln.startswith("usage:") for ln in err.splitlines()):
            return "error"
        return "error" if len(lines) == 1 and re.search(r"error: \S+", lines[0]) else "error-unlocated"
    return "internal"


def _read_back(command: str) -> str | None:
    """For a command that wrote a trace set and succeeded: the error reading it back, or the
    first error it has that keeps a set from being written (a set written although invalid), if any."""
    if command in ("convert", "transform", "generate", "synth-sample"):
        rc, _, err = _call(["stats", "out", "--no-longest-path"])
    elif command == "synth-fit":
        rc, _, err = _call(["synth", "show", "model.json"])
        return err.strip()[-300:] if rc != 0 else None
    elif command == "jsonize":
        rc, _, err = _call(["stats", "--format", "json", "out", "--no-longest-path"])
    else:
        return None
    if rc != 0:
        return err.strip()[-300:]
    return _refused("out") if command != "jsonize" else None


def _refused(path: str) -> str | None:
    """The first validation error of the set at ``path`` that keeps a set from being written
    (None when it has none)."""
    from chakra_core.pipeline._validated import REFUSED_RULES
    from chakra_core.trace._traceset import open_traceset
    from chakra_core.validation._validate import validate

    found = [f for f in validate(open_traceset(path)) if f.severity == "error" and f.rule in REFUSED_RULES]
    return f"written although invalid: {found[0]}" if found else None


def _run_case(case: dict, base: Path, timeout: float) -> dict:
    import signal

    d = base / f"case{case['index']}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, hexdata in case["files"].items():
        (d / name).write_bytes(bytes.fromhex(hexdata))
    argv = [a if a != "SET" else str(base / "set") for a in case["argv"]]
    around = set(os.listdir(base))
    os.chdir(d)

    def alarm(signum, frame):
        raise _Timeout

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    t0 = time.perf_counter()
    try:
        rc, out, err = _call(argv)
        outcome = _classify(case["command"], rc, out, err)
        if outcome == "ok" and rc == 0:
            back = _read_back(case["command"])
            if back is not None:
                outcome, err = "garbage", back
    except _Timeout:
        rc, err, outcome = None, f"ran past {timeout} s", "hang"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.chdir(base)
        shutil.rmtree(d, ignore_errors=True)
    escaped = _escaped(base, around)
    if escaped:
        outcome, err = "outside-write", f"wrote {escaped} outside its directory"
    last = err.strip().splitlines()[-1][:300] if err.strip() else ""
    return {"index": case["index"], "outcome": outcome, "rc": rc, "message": last,
            "seconds": time.perf_counter() - t0}


def _escaped(base: Path, around: set[str]) -> list[str]:
    """What a case wrote outside its directory (removed, so that later cases start clean)."""
    found = [str(base / n) for n in set(os.listdir(base)) - around] + [p for p in _OUTSIDE if os.path.lexists(p)]
    for p in found:
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)
    return found


def worker(base: str, timeout: float, memory_mb: int) -> None:
    """Read cases (JSON lines) on stdin, answer outcomes (JSON lines) on stdout."""
    import resource

    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    for line in sys.stdin:
        case = json.loads(line)
        reply.write(json.dumps(_run_case(case, Path(base), timeout)) + "\n")


# -- the campaign (parent) -----------------------------------------------------------------------


class _Worker:
    def __init__(self, base: Path, timeout: float, memory_mb: int):
        self.args = [sys.executable, str(Path(__file__).resolve()), "--worker", str(base),
                     "--timeout", str(timeout), "--memory-mb", str(memory_mb)]
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
        return self.proc

    def run(self, case: dict, limit: float) -> dict:
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(case) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([proc.stdout], [], [], limit)
        line = proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        if not ready:
            self.stop()
            return {"index": case["index"], "outcome": "hang", "rc": None,
                    "message": f"no answer in {limit:.0f} s", "seconds": limit}
        rc = proc.wait()
        self.proc = None
        return {"index": case["index"], "outcome": "crash", "rc": rc,
                "message": f"worker died (status {rc})", "seconds": 0.0}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def campaign(cases: int, seed: int = 1, timeout: float = 60.0, memory_mb: int = 3072,
             kinds: tuple[str, ...] = KINDS, keep: Path | None = None, progress: bool = False,
             small: bool = False) -> dict:
    """Run ``cases`` cases; return figures: per kind and outcome counts, bad cases, seconds."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chakra-fuzz-") as tmp:
        base = Path(tmp)
        cwd = os.getcwd()
        try:
            seeds = build_seeds(base, small)
        finally:
            os.chdir(cwd)
        w = _Worker(base, timeout, memory_mb)
        by_kind: dict[str, Counter] = defaultdict(Counter)
        by_command: dict[str, Counter] = defaultdict(Counter)
        seconds: Counter = Counter()
        bad = []
        try:
            for i in range(cases):
                case = make_case(seeds, seed, i, kinds)
                r = w.run(case, timeout + 30)
                by_kind[case["kind"]][r["outcome"]] += 1
                by_command[case["command"]][r["outcome"]] += 1
                seconds[case["kind"]] += r["seconds"]
                if r["outcome"] in BAD:
                    bad.append({**r, "kind": case["kind"], "seed": case["seed"], "argv": case["argv"]})
                    if keep is not None:
                        _keep(keep, case)
                if progress and (i + 1) % 500 == 0:
                    print(f"  {i + 1} cases, {len(bad)} bad, {time.perf_counter() - t0:.0f} s", flush=True)
        finally:
            w.stop()
    return {"cases": cases, "seed": seed, "small": small, "seconds": round(time.perf_counter() - t0, 1),
            "by_kind": {k: dict(v) for k, v in by_kind.items()},
            "by_command": {k: dict(v) for k, v in by_command.items()},
            "seconds_by_kind": {k: round(v, 1) for k, v in seconds.items()}, "bad": bad}


def _keep(keep: Path, case: dict) -> None:
    d = keep / f"case{case['index']}"
    d.mkdir(parents=True, exist_ok=True)
    for name, hexdata in case["files"].items():
        (d / name).write_bytes(bytes.fromhex(hexdata))
    (d / "argv.json").write_text(json.dumps(case["argv"]))


def _print(fig: dict) -> None:
    outcomes = ["ok", "error", *BAD]
    print(f"fuzz campaign: {fig['cases']} cases, seed {fig['seed']}, {fig['seconds']} s "
          f"({fig['cases'] / max(fig['seconds'], 1e-9):.0f} cases/s)")
    print(f"{'kind':<10}" + "".join(f"{o:>16}" for o in ["cases", *outcomes, "seconds"]))
    for k, c in sorted(fig["by_kind"].items()):
        print(f"{k:<10}{sum(c.values()):>16}" + "".join(f"{c.get(o, 0):>16}" for o in outcomes)
              + f"{fig['seconds_by_kind'].get(k, 0):>16}")
    print(f"{'command':<10}" + "".join(f"{o:>16}" for o in ["cases", *outcomes]))
    for k, c in sorted(fig["by_command"].items()):
        print(f"{k:<10}{sum(c.values()):>16}" + "".join(f"{c.get(o, 0):>16}" for o in outcomes))
    for b in fig["bad"][:40]:
        print(f"  case {b['index']} {b['kind']} {b['seed']} {b['outcome']}: chakra {' '.join(b['argv'])}"
              f" -> {b['message']}")


def main(argv: list[str] | None = None) -> int:
    """Command line: run a campaign and print its figures (exit 1 when any case was bad)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    p.add_argument("--memory-mb", type=int, default=3072, help="address-space limit of the worker")
    p.add_argument("--kinds", default=",".join(ALL_KINDS), help=f"comma-separated subset of {', '.join(ALL_KINDS)}")
    p.add_argument("--keep", type=Path, help="save the inputs of bad cases here")
    p.add_argument("--small", action="store_true", help="only the quickest seed of each kind")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker(a.worker, a.timeout, a.memory_mb)
        return 0
    kinds = tuple(k for k in a.kinds.split(",") if k)
    fig = campaign(a.cases, a.seed, a.timeout, a.memory_mb, kinds, a.keep, progress=not a.json, small=a.small)
    print(json.dumps(fig, indent=1)) if a.json else _print(fig)
    return 1 if fig["bad"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
