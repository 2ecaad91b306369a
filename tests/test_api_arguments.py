"""Public helpers given values no input could hold: each names the value in a documented error
(they returned garbage, read bytes from the end, or raised a bare KeyError/IndexError)."""

from __future__ import annotations

import math
import re

import pytest

from chakra_core import (
    ConfigError,
    TraceFormatError,
    check_limit,
    decode_varint,
    encode_varint,
    get_limit,
    open_traceset,
)
from chakra_core.system import load_system, roofline_ns


def test_decode_varint_positions():
    # a negative position read from the end: (2, 0), a position before the start
    with pytest.raises(ValueError, match="a varint at byte -1: positions start at 0"):
        decode_varint(b"\x01\x02", -1)
    # an end past the bytes is the end of the bytes: EOFError as documented, not IndexError
    with pytest.raises(EOFError, match="the bytes end inside the varint at byte 0"):
        decode_varint(b"\x81", 0, 100)
    assert decode_varint(encode_varint(300) + b"\x07", 0, 100) == (300, 2)


@pytest.mark.parametrize("peak, bw", [(-1, 1), (0, 1), (math.nan, 1), (1, 0), (1, -5), (1, math.nan)])
def test_roofline_refuses_a_machine_without_speed(peak, bw):
    # a negative peak gave -1000 ns; nan gave 1 ns
    with pytest.raises(ValueError, match="must be above 0"):
        roofline_ns(10**6, 1, peak, bw)


def test_roofline_closed_form():
    # 2 * 4096^3 FLOPs on 3 * 4096^2 * 2 bytes at 1000 TFLOPS and 100 GB/s: memory-bound,
    # ops / (bw * 1e9 * ops / bytes) = bytes / (bw * 1e9) s = 100,663,296 / 1e11 s
    assert roofline_ns(2 * 4096**3, 3 * 4096**2 * 2, 1000, 100) == int(3 * 4096**2 * 2 / 100)


@pytest.mark.parametrize("args, words", [
    ((-2,), "-2 NPUs"), ((2.5,), "2.5 NPUs"), ((0,), "0 NPUs"), ((4, "Torus"), "topology 'Torus'"),
    ((4, "Ring", 0), "bandwidth 0 GB/s"), ((4, "Ring", math.nan), "bandwidth nan GB/s"),
    ((4, "Ring", math.inf), "bandwidth inf GB/s"), ((4, "Ring", 50, -1), "latency -1 ns"),
])
def test_default_network_takes_what_a_system_file_could_say(args, words):
    # each gave a Dimension no file could describe (a Ring of -2 NPUs, a Torus, 0 GB/s)
    with pytest.raises(ConfigError, match=words):
        load_system().with_default_network(*args)
    dims = load_system().with_default_network(4).dimensions
    assert [(d.topology, d.npus_count, d.bandwidth, d.latency) for d in dims] == [("Ring", 4, 50.0, 500.0)]


def test_limits_by_name_and_counts():
    with pytest.raises(ValueError, match="no limit named 'bogus'; the limits: rank, npus, deps, nodes, depth, inflation"):
        get_limit("bogus")
    for bad in (-1, math.nan):
        with pytest.raises(TraceFormatError, match="is not a count"):
            check_limit("rank", bad, "rank")
    assert check_limit("rank", 0, "rank") == 0


def test_an_empty_list_of_paths():
    with pytest.raises(TraceFormatError, match="no paths given"):
        open_traceset([])


def test_implementation_of_a_collective_by_name():
    sd = load_system()
    assert sd.implementation("all-reduce") == sd.implementation("ALL_REDUCE") == sd.all_reduce_implementation
    for bad in ("", "bogus", "all-reduce-implementation"):
        with pytest.raises(ConfigError, match=f"no collective {bad!r}: expected one of all-reduce"):
            sd.implementation(bad)


def test_group_ranks_out_of_order_are_named_so():
    # [1, 0] was said to name "rank 0 but there are ranks 0 to 3"
    from chakra_core import check_group_ranks

    with pytest.raises(ConfigError, match=r"group 'g': its ranks are not in ascending order \(rank 1 before"):
        check_group_ranks("g", [1, 0], 4)
    with pytest.raises(ConfigError, match="group 'g' names rank 7 but there are ranks 0 to 3"):
        check_group_ranks("g", [0, 7], 4)
    check_group_ranks("g", [0, 3], 4)


def test_a_model_mapping_without_its_synthesizer():
    # synth_show({}) raised KeyError: 'synthesizer'; a file without one was already refused so
    from chakra_core import synth_show

    with pytest.raises(ConfigError, match='not a synthesizer model'):
        synth_show({})


_DDP = __import__("pathlib").Path(__file__).resolve().parents[1] / "plugins/chakra-pytorch/tests/data/ddp"


@pytest.mark.parametrize("call, name", [
    (lambda c, out: c.convert(str(_DDP), f"{out}/", gzip="no"), "gzip"),  # wrote .et.gz: "no" is true
    (lambda c, out: c.convert(str(_DDP), f"{out}/", validate=None), "validate"),
    (lambda c, out: c.simulate(str(_DDP), validate="no"), "validate"),
    (lambda c, out: c.export(str(_DDP), "astrasim", out, validate=0), "validate"),
    (lambda c, out: c.validate(str(_DDP), cross_rank="no"), "cross_rank"),
    (lambda c, out: c.stats(str(_DDP), longest_path="no"), "longest_path"),  # computed it: "no" is true
])
def test_yes_or_no_arguments_take_true_or_false_only(tmp_path, call, name):
    import chakra_core

    with pytest.raises(ConfigError, match=f"^{name} must be True or False, got "):
        call(chakra_core, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("call, name", [
    (lambda c: c.compare(str(_DDP), str(_DDP), simulate="no"), "simulate"),  # simulated: "no" is true
    (lambda c: c.report(str(_DDP), validate="no"), "validate"),
    (lambda c: c.diff(str(_DDP), str(_DDP), validate="no"), "validate"),
])
def test_yes_or_no_arguments_of_the_analyses(call, name):
    import chakra_core

    with pytest.raises(ConfigError, match=f"^{name} must be True or False, got 'no'"):
        call(chakra_core)


def test_compare_takes_one_system_file_as_a_path(chakra_cli):
    # a string was iterated as a list of files, its first "file" the character "/"
    import chakra_core

    system = str(_DDP.parents[4] / "examples/system/any_size.yaml")
    report = chakra_core.compare(str(_DDP), str(_DDP), systems=system)
    assert report["simulated"]["system"] == system and report["simulated"]["relative_error"] == 0
    # with nothing simulated, a system is refused rather than ignored
    code, _, err = chakra_cli("compare", _DDP, _DDP, "--no-simulate", "--system", system)
    assert code == 2 and "--system: nothing is simulated with --no-simulate" in err, err


@pytest.mark.parametrize("call, said", [
    # bare TypeError/ValueError from a comparison or dict(), or a contradiction ("no rank 0 ...
    # (ranks 0..1)" for rank="0")
    (lambda c, d: c.graph(str(_DDP), d / "g.svg", rank="0"), "rank must be a whole number, got '0'"),
    (lambda c, d: c.graph(str(_DDP), d / "g.svg", around="5"), "around must be a whole number, got '5'"),
    (lambda c, d: c.graph(str(_DDP), d / "g.svg", depth="2"), "depth must be a whole number, got '2'"),
    (lambda c, d: c.graph(str(_DDP), d / "g.svg", max_boxes="3"), "max_boxes must be a whole number"),
    (lambda c, d: c.report(str(_DDP), top="3"), "top must be a whole number, got '3'"),
    (lambda c, d: c.transform(str(_DDP), "scale", "compute_speedup=2"),
     "transform: options are a mapping of names to values"),
    (lambda c, d: c.transform(str(_DDP), ["scale", "straggler"], [{"compute_speedup": 2}, "x"]),
     "transform 'straggler': options are a mapping"),
    (lambda c, d: c.generate("transformer", [1]), "generator 'transformer': options are a mapping"),
    (lambda c, d: c.simulate(str(_DDP), options=[1]), "backend: options are a mapping"),
    (lambda c, d: c.convert(str(_DDP), f"{d}/g.svg/", jobs="2"), "jobs must be a whole number, got '2'"),
    # a TypeError from "int + str" deep in the stragglers' table
    (lambda c, d: c.report(str(_DDP), threshold="x"), "threshold must be a number of 0 or more, got 'x'"),
    (lambda c, d: c.report(str(_DDP), threshold=-0.5), "threshold must be a number of 0 or more, got -0.5"),
    # "'int' object is not iterable", "'NoneType' object is not iterable"
    (lambda c, d: c.convert(5, f"{d}/g.svg/"), "inputs: give a path, a list of paths or an opened TraceSet, got 5"),
    (lambda c, d: c.simulate(None), "inputs: give a path, a list of paths or an opened TraceSet, got None"),
    (lambda c, d: c.validate([str(_DDP), 7]), "inputs: item 1 of the list is 7, not a path"),
    (lambda c, d: c.stats(3), "inputs: give a path"),
])
def test_arguments_of_the_wrong_type_are_named(tmp_path, call, said):
    import chakra_core

    with pytest.raises(ConfigError, match=re.escape(said)):
        call(chakra_core, tmp_path)
    assert not (tmp_path / "g.svg").exists()


def test_paths_from_any_iterable_still_read():
    import chakra_core

    files = sorted(str(p) for p in _DDP.iterdir())
    assert chakra_core.stats(iter(files))["ranks"] == chakra_core.stats(tuple(files))["ranks"] == len(files) // 2


@pytest.mark.parametrize("call", [
    lambda c, d: c.simulate(str(_DDP), None),
    lambda c, d: c.export(str(_DDP), None, d / "o"),
])
def test_a_backend_named_by_something_else_than_a_string(tmp_path, call):
    import chakra_core

    with pytest.raises(chakra_core.PluginError, match="a backend is named by a string, got None; installed: .*simpy"):
        call(chakra_core, tmp_path)


def test_encode_varint_is_protobufs_varint():
    # protobuf's own encoding of a uint64 field is its key (0x08 for field 1) then the varint
    import random

    from chakra_core import Node

    rng = random.Random(7)
    values = [0, 1, 127, 128, 255, 300, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    values += [rng.randrange(1 << rng.randrange(1, 65)) for _ in range(2000)]
    for v in values:
        want = Node(id=v).SerializeToString()[1:] if v else b"\x00"
        assert encode_varint(v) == want, v
        assert decode_varint(want) == (v, len(want))
    for bad in (-1, 1 << 64):
        with pytest.raises(ValueError):
            encode_varint(bad)
