"""The input kinds of ``benches/fuzz.py`` added for issue 32: sweeps, command options, results,
graphs, comm-group files, emulation, JAX programs and profiles, and synth models.

Each kind has seeds made from the repository's real inputs (:func:`build`) and a case maker
(:func:`make`) that mutates one seed file or one command line and names the command it runs:

- ``sweep``: a pipeline with a ``sweep:`` section (grid, random draws, derive, constraints) whose
  text is mutated or given a hostile expression, a huge grid or an escaping ``timeline``;
  ``chakra sweep --check`` (one case in eight runs the points);
- ``transform``: ``chakra transform SET NAME -O key=value`` with strange values of the
  transforms' declared options (and unknown keys);
- ``generate``: ``chakra generate transformer`` on a small model with one or two options given
  strange values (the options that multiply the number of ranks or nodes take small or invalid
  values only: a huge one is a legal, long job, not a fault);
- ``result``: ``chakra report --result`` / ``chakra diff`` on a simulated ``result.json`` and its
  ``spans.npz``, either of them damaged (text mutations, a shortened column, an index past its
  table, a cut or flipped archive), with ``--what-if`` values;
- ``graph``: ``chakra graph`` of a mutated ``.et`` set, with strange ``--around``/``--depth``;
- ``comm-groups``: ``chakra simulate --comm-groups`` with a mutated ASTRA-sim group file;
- ``emulate``: ``chakra emulate`` of a two-rank set with strange emulator options (not those that
  set how long a legal run lasts: ``warmup``, ``repeats``, ``node_timeout``, ``startup_timeout``,
  ``realtime``).
- ``jax-hlo``, ``jax-proto``: an XLA program (HLO text of chakra-jax's recorded and public
  modules; the ``.hlo.pb`` HloModuleProto) mutated, sometimes with strange ``-I`` options of
  the jax format; ``convert`` (read back), ``validate``, ``stats``, ``jsonize``, ``simulate``;
- ``jax-profile``, ``jax-xplane``: a recorded program with its Chrome-trace profile (one value
  of its JSON replaced, its text mutated inside or outside its gzip) or its xplane; the same
  commands (``simulate`` and ``jsonize`` given the case's directory, which holds both);
- ``synth-model``: a model fitted by ``chakra synth fit`` (structural, markov, learned) on the
  recorded PyTorch ``ddp`` pair, its JSON text or one of its values mutated (a number often to a
  near legal one: 0, 1, negated, doubled, x1000, /3, 2^62); ``synth show``, or
  ``synth sample`` with strange ``--seed``/``--ranks``/``-O`` values (the sample read back);
- ``synth-fit``: ``chakra synth fit`` of the converted set or the recorded ``ddp`` pair, with
  strange synthesizer options, sometimes a mutated input (the model written read back by
  ``synth show``).

No StableHLO kind: the jax format reads HLO text and HloModuleProto only.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

KINDS = ("sweep", "transform", "generate", "result", "graph", "comm-groups", "emulate", "jax-hlo", "jax-proto",
         "jax-profile", "jax-xplane", "synth-model", "synth-fit")
SYNTHESIZERS = ("structural", "markov", "learned")
#: synth options that size the output: small or invalid values only
SYNTH_SIZING = frozenset({"ranks", "nodes_per_rank", "max_period"})
#: values put in place of one value of a model file
LEAVES: list[Any] = [None, -1, 0, 1, 2**31, 2**63, 2**64, 10**30, 1e308, -1e308, 0.5, "", "x", "COMP_NODE", [],
                     {}, [1, 2], True, float("nan"), float("inf")]
#: ``synth sample --seed`` values
SEEDS = ["0", "1", "-1", "7", "2147483648", "4294967296", "9223372036854775807", "18446744073709551616",
         "1" + "0" * 400, "-" + "9" * 30, "x", "1.5", ""]
#: what the jax format's options are given (``-I``)
JAX_OPTIONS = ("devices", "step", "unroll_limit", "schedule", "device", "idle_gaps")

#: values given to options, as typed on a command line
VALUES = ["0", "-1", "1", "2", "0.5", "1e-300", "1e300", "nan", "inf", "-inf", "2147483647", "2147483648",
          "4294967296", "9223372036854775807", "18446744073709551616", "1" + "0" * 400, "", "x", "true",
          "[]", "{}", "[1,2]", "0-3", "1:0", "a,b", "\u00e9", "../escape", "/tmp/abs", "-0", "3.5"]
#: hostile sweep expressions
EXPRESSIONS = ["(10**10000)**10000", "'a'*10**10", "[0]*10**9", "[[0]*1000]*1000", "2**10000*2**10000",
               "'%099999999d' % 1", "round(1.5, 10**9)", "9" * 5000, "(" * 200 + "1" + ")" * 200,
               "__import__('os')", "().__class__", "npus.__class__", "open('x')", "lambda: 1",
               "[x for x in [1]]", "1/0", "10**400 * 1.0", "int('9'*5000)", "len(npus)", "max()",
               "abs(-2**63)", "input.options.npus ** 1000", "'a' in 1", "npus if npus else 1/0"]
#: generator options that multiply the ranks or nodes: small or invalid values only
SIZING = frozenset({"layers", "micro_batches", "steps", "dp", "pp", "tp", "cp", "ep", "virtual_stages"})
SMALL = ["0", "-1", "1", "2", "x", "", "1.5", "nan"]
#: values most options accept (half the cases use them, so that runs get past option checks)
PLAIN = ["1", "2", "4", "0.5", "1.5", "true", "false", "fp16", "h100", "0-1", "compute"]
#: emulator options left out (how long a legal run lasts)
TIMED = frozenset({"warmup", "repeats", "node_timeout", "startup_timeout", "realtime"})
_GENERATOR_BASE = ["-O", "layers=1", "-O", "micro_batches=1", "-O", "hidden=64", "-O", "heads=4",
                   "-O", "seq=64", "-O", "vocab=128"]


def _options(kind: str, name: str) -> dict[str, Any]:
    from chakra_core.host._plugins import get_host

    return dict(get_host().registry.get(kind, name).options or {})


def build(work: Path, cli: Callable[..., None], root: Path, small: bool) -> dict[str, list[Any]]:
    """The seeds of every kind here (``(name, files, target, extra)`` tuples)."""
    text = root / "examples" / "text" / "resnet50_like.txt"
    cli("simulate", str(work / "set"), "-O", "spans=true", "-o", str(work / "res"))
    result = {"result.json": (work / "res" / "result.json").read_bytes(),
              "spans.npz": (work / "res" / "spans.npz").read_bytes()}
    data = json.loads(result["result.json"])
    data["files"] = ["spans.npz"]
    result["result.json"] = json.dumps(data).encode()
    sweep = (
        "input:\n  format: text\n  paths: [resnet50_like.txt]\n  options: {npus: 2, time_unit: cycles}\n"
        "system:\n  network:\n    - {topology: Ring, npus_count: 2, bandwidth: 50, latency: 500}\n"
        "backends:\n  - name: simpy\n    options: {timeline: t.json}\n"
        "sweep:\n  grid:\n    system.network[0].bandwidth: [25, 50]\n    input.options.npus: [2, 4]\n"
        "  random:\n    seed: 1\n    count: 2\n    params:\n"
        "      backends[0].options.streams: [1, 2]\n"
        "  derive:\n    system.network[0].npus_count: input.options.npus\n"
        "  constraints:\n    - \"npus % 2 == 0\"\n    - {expr: \"bandwidth >= 25\", reason: slow}\n"
        "  timeout_s: 60\n")
    groups = (root / "examples" / "system" / "astra" / "groups.json").read_bytes()
    et = {p.name: p.read_bytes() for p in sorted((work / "set").iterdir())}
    return {
        "sweep": [("sweep", {"pipeline.yaml": sweep.encode(), "resnet50_like.txt": text.read_bytes()},
                   "pipeline.yaml", [])],
        "transform": [("resnet-2", {}, "", [])],
        "generate": [("transformer", {}, "", [])],
        "result": [("simpy", result, "result.json", []), ("simpy-spans", result, "spans.npz", [])],
        "graph": [("resnet-2", et, "trace.0.et", [])],
        "comm-groups": [("groups", {"groups.json": groups.replace(b"4, 5, 6, 7", b"1").replace(
            b"0, 1, 2, 3", b"0, 1")}, "groups.json", [])],
        "emulate": [("dp-2", _tiny_set(), "", [])],
        **_jax_seeds(root, small),
        **_synth_seeds(work, cli, root, et),
    }


def _jax_seeds(root: Path, small: bool) -> dict[str, list[Any]]:
    """chakra-jax's recorded programs (and public HLO texts) alone, and with each profile."""
    data = root / "plugins" / "chakra-jax" / "tests" / "data"
    recorded = ["mlp"] if small else ["mlp", "mesh8", "scan", "shard_map", "control"]
    texts = [data / r / "program.hlo.txt" for r in recorded] + [data / "handmade" / "p2p.hlo.txt"]
    if not small:
        texts += sorted((data / "handmade").glob("*.txt")) + sorted((data / "public").rglob("*.hlo.txt"))
    hlo: list[Any] = [(str(p.relative_to(data)), {p.name: p.read_bytes()}, p.name, []) for p in dict.fromkeys(texts)]
    proto: list[Any] = [("mlp/program.hlo.pb", {"program.hlo.pb": (data / "mlp" / "program.hlo.pb").read_bytes()},
              "program.hlo.pb", [])]
    profiles: dict[str, list[Any]] = {"jax-profile": [], "jax-xplane": []}
    for r in recorded:
        program = (data / r / "program.hlo.txt").read_bytes()
        for kind, name in (("jax-profile", "profile.trace.json.gz"), ("jax-xplane", "profile.xplane.pb")):
            profiles[kind].append((f"{r}/{name}", {"program.hlo.txt": program,
                                                   name: (data / r / name).read_bytes()}, name, []))
    return {"jax-hlo": hlo, "jax-proto": proto, **profiles}


def _synth_seeds(work: Path, cli: Callable[..., None], root: Path, et: dict[str, bytes]) -> dict[str, list[Any]]:
    """A model of each synthesizer fitted on the recorded ``ddp`` pair; the inputs of ``synth fit``."""
    import gzip

    ddp = root / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"
    models: list[Any] = []
    for synthesizer in SYNTHESIZERS:
        path = work / f"{synthesizer}.model.json"
        cli("synth", "fit", str(ddp), "-o", str(path), "--synthesizer", synthesizer)
        models.append((synthesizer, {"model.json": path.read_bytes()}, "model.json", []))
    pairs = {p.name[: -len(".gz")]: gzip.decompress(p.read_bytes()) for p in sorted(ddp.glob("*.json.gz"))}
    return {"synth-model": models,
            "synth-fit": [("resnet-2", et, "trace.0.et", []), ("ddp", pairs, "pytorch_et.0.json", [])]}


def _tiny_set() -> dict[str, bytes]:
    """Two ranks of three compute nodes and one all-reduce (a quick emulation)."""
    from chakra_core import GlobalMetadata, Node, NodeType, encode_varint, make_attr

    files = {}
    for rank in (0, 1):
        nodes = [Node(id=1, name="mm", type=NodeType.COMP_NODE, duration_micros=20),
                 Node(id=2, name="ar", type=NodeType.COMM_COLL_NODE, duration_micros=5, data_deps=[1]),
                 Node(id=3, name="mm2", type=NodeType.COMP_NODE, duration_micros=20, data_deps=[2])]
        nodes[1].attr.extend([make_attr("comm_type", 4), make_attr("comm_size", 4096)])
        out = [GlobalMetadata(version="0.0.4").SerializeToString(), *(n.SerializeToString() for n in nodes)]
        files[f"trace.{rank}.et"] = b"".join(encode_varint(len(x)) + x for x in out)
    return files


def _option_args(rng: random.Random, declared: dict[str, Any], count: int, skip: frozenset[str] = frozenset(),
                 small: frozenset[str] = frozenset()) -> list[str]:
    args = []
    names = sorted(k for k in declared if k not in skip)
    for _ in range(count):
        key = rng.choice(names + ["nope", "timeline"]) if rng.random() < 0.95 else "x" * rng.choice((1, 300))
        value = rng.choice(SMALL if key in small else PLAIN if rng.random() < 0.5 else VALUES)
        args += ["-O", f"{key}={value}"]
    return args


def _mutate_spans(rng: random.Random, data: bytes) -> bytes:
    import numpy as np

    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = dict(z)
    key = rng.choice(sorted(arrays))
    col = arrays[key]
    what = rng.randrange(4)
    if what == 0 and col.ndim == 1 and len(col):
        arrays[key] = col[: rng.randrange(len(col))]
    elif what == 1 and col.ndim == 1 and len(col) and col.dtype.kind in "iu":
        col = col.copy()
        info = np.iinfo(col.dtype)
        col[rng.randrange(len(col))] = min(max(rng.choice([-1, -2, 1 << 30, info.max]), info.min), info.max)
        arrays[key] = col
    elif what == 2:
        meta = json.loads(str(arrays["meta"]))
        field = rng.choice(sorted(meta))
        meta[field] = rng.choice([None, 1, "x", [], {}, [1, 2], -1, 10**30])
        arrays["meta"] = np.array(json.dumps(meta))
    else:
        arrays.pop(key)
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()


def make(kind: str, rng: random.Random, seed: tuple, mutate: Callable[[random.Random, bytes, str], bytes]
         ) -> tuple[str, list[str], dict[str, bytes]]:
    """A case of ``kind`` from ``seed``: (command, argv, files)."""
    name, files, target, _extra = seed
    files = dict(files)
    if kind == "sweep":
        return _sweep_case(rng, files, target, mutate)
    if kind == "transform":
        names = ["scale", "retime", "resize_dp", "straggler", "obfuscate"]
        chosen = rng.sample(names, rng.choice((1, 1, 2)))
        args = [a for t in chosen for a in _option_args(rng, _options("transform", t), rng.randint(1, 2))]
        return "transform", ["transform", "SET", *chosen, *args, "-o", "out/"], files
    if kind == "generate":
        declared = _options("generator", "transformer")
        args = _option_args(rng, declared, rng.randint(1, 2), skip=frozenset({"devices"}), small=SIZING)
        return "generate", ["generate", "transformer", *_GENERATOR_BASE, *args, "-o", "out/"], files
    if kind == "result":
        if rng.random() < 0.25:
            pass
        elif target == "spans.npz" and rng.random() < 0.6:
            files[target] = _mutate_spans(rng, files[target])
        else:
            files[target] = mutate(rng, files[target], "npz" if target.endswith(".npz") else "json")
        what_if = ["--what-if", f"{rng.choice(['compute', 'comm', 'memory', 'name:x', 'cpu'])}="
                                f"{rng.choice(VALUES)}"] if rng.random() < 0.3 else []
        if rng.random() < 0.3:
            return "diff", ["diff", "result.json", "result.json"], files
        return "report", ["report", "--result", "result.json", *what_if], files
    if kind == "graph":
        if rng.random() < 0.5:
            files[target] = mutate(rng, files[target], "et")
        extra = []
        if rng.random() < 0.5:
            extra += ["--around", rng.choice(VALUES[:16] + ["1", "2", "3"])]
        if rng.random() < 0.5:
            extra += ["--depth", rng.choice(VALUES[:16] + ["1", "2", "3"])]
        return "graph", ["graph", ".", "-o", rng.choice(["out.dot", "out.svg", "out.graphml"]), *extra], files
    if kind == "comm-groups":
        if rng.random() < 0.7:
            files[target] = mutate(rng, files[target], "json")
        return "simulate", ["simulate", "SET", "--comm-groups", target], files
    if kind.startswith("jax-"):
        return _jax_case(rng, kind, files, target, mutate)
    if kind == "synth-model":
        return _model_case(rng, name, files, target, mutate)
    if kind == "synth-fit":
        return _fit_case(rng, files, target, mutate)
    declared = _options("backend", "emulator")
    args = _option_args(rng, declared, rng.randint(1, 2), skip=TIMED | {"system", "network", "memory"})
    return "emulate", ["emulate", ".", "-O", "startup_timeout=60", "-O", "node_timeout=10", *args], files


def _sweep_case(rng: random.Random, files: dict[str, bytes], target: str,
                mutate: Callable[[random.Random, bytes, str], bytes]) -> tuple[str, list[str], dict[str, bytes]]:
    text = files[target].decode()
    what = rng.randrange(6)
    if what == 0:
        text = text.replace("input.options.npus\n", f"{json.dumps(rng.choice(EXPRESSIONS))}\n")
    elif what == 1:
        text = text.replace('"npus % 2 == 0"', json.dumps(rng.choice(EXPRESSIONS)))
    elif what == 2:
        keys = "".join(f"    input.options.k{i}: [1, 2]\n" for i in range(rng.choice((14, 30, 64))))
        text = text.replace("  grid:\n", "  grid:\n" + keys)
    elif what == 3:
        escape = rng.choice(["../ESCAPED.json", "/tmp/ESC.json", "..", ".", "a/../../b.json"])
        text = text.replace("timeline: t.json", f"timeline: {escape}")
    files[target] = text.encode()
    if what == 4 or what < 4 and rng.random() < 0.3:
        files[target] = mutate(rng, files[target], "pipeline")
    run = rng.random() < 0.125
    return "sweep", ["sweep", target, "-o", "out", "-j", "1", *([] if run else ["--check"])], files


def _jax_case(rng: random.Random, kind: str, files: dict[str, bytes], target: str,
              mutate: Callable[[random.Random, bytes, str], bytes]) -> tuple[str, list[str], dict[str, bytes]]:
    data, what = files[target], rng.random()
    if target.endswith(".gz") and what < 0.8:
        inner = gzip.decompress(data)
        inner = _mutate_leaf(rng, inner) if what < 0.4 else mutate(rng, inner, "json")
        files[target] = gzip.compress(inner, mtime=0)
    elif rng.random() < 0.9:
        files[target] = mutate(rng, data, "pb" if target.endswith(".pb") else "hlo")
    args = []
    if rng.random() < 0.3:
        for key in rng.sample(JAX_OPTIONS, rng.choice((1, 2))):
            small = key in ("devices", "unroll_limit")
            args += ["-I", f"{key}={rng.choice(SMALL if small else PLAIN if rng.random() < 0.5 else VALUES)}"]
    command = rng.choice(["convert", "convert", "validate", "stats", "simulate", "jsonize"])
    inputs = ["."] if command in ("simulate", "jsonize") else sorted(files)  # one PATH: the directory
    out = {"convert": ["-o", "out/"], "jsonize": ["-o", "out/"]}.get(command, [])
    return command, [command, *inputs, *args, *out], files


def _model_case(rng: random.Random, synthesizer: str, files: dict[str, bytes], target: str,
                mutate: Callable[[random.Random, bytes, str], bytes]) -> tuple[str, list[str], dict[str, bytes]]:
    what = rng.random()
    if what < 0.45:
        files[target] = _mutate_leaf(rng, files[target])
    elif what < 0.9:
        files[target] = mutate(rng, files[target], "json")
    if rng.random() < 0.25:
        return "synth-show", ["synth", "show", target, *(["--json"] if rng.random() < 0.5 else [])], files
    args = []
    if rng.random() < 0.3:
        args += ["--seed", rng.choice(SEEDS)]
    if rng.random() < 0.3:
        args += ["--ranks", rng.choice(SMALL)]
    if rng.random() < 0.3:
        args += _option_args(rng, _options("synthesizer", synthesizer), 1, skip=frozenset({"seed", "ranks"}),
                             small=SYNTH_SIZING)
    gz = ["--gzip"] if rng.random() < 0.2 else []
    return "synth-sample", ["synth", "sample", target, "-o", "out/", *args, *gz], files


def _mutate_leaf(rng: random.Random, data: bytes) -> bytes:
    """One value of a JSON document (a model) replaced by a strange one."""
    doc = json.loads(data)
    leaves: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        for key in range(len(node)) if isinstance(node, list) else list(node) if isinstance(node, dict) else []:
            leaves.append((node, key))
            stack.append(node[key])
    if leaves:
        node, key = rng.choice(leaves)
        if isinstance(node, dict) and rng.random() < 0.1:
            node.pop(key)
        elif isinstance(node[key], (int, float)) and not isinstance(node[key], bool) and rng.random() < 0.6:
            value = node[key]
            node[key] = rng.choice([0, 1, -value, value + 1, value * 2, value * 1000, value / 3, 2**62])
        else:
            node[key] = rng.choice(LEAVES)
    return json.dumps(doc).encode()


def _fit_case(rng: random.Random, files: dict[str, bytes], target: str,
              mutate: Callable[[random.Random, bytes, str], bytes]) -> tuple[str, list[str], dict[str, bytes]]:
    if rng.random() < 0.3:
        files[target] = mutate(rng, files[target], "et" if target.endswith(".et") else "json")
    synthesizer = rng.choice(SYNTHESIZERS)
    declared = _options("synthesizer", synthesizer)
    args = _option_args(rng, declared, rng.randint(1, 2), small=SYNTH_SIZING) if rng.random() < 0.5 else []
    if rng.random() < 0.1:
        args += ["--synthesizer", rng.choice(["nope", "", "STRUCTURAL", "../x"])]
    return "synth-fit", ["synth", "fit", ".", "-o", "model.json", "--synthesizer", synthesizer, *args], files
