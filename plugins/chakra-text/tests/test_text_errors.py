"""Bad workloads: one-line errors naming the file and the physical line; tolerated oddities.

Inputs are hand-written (no framework here writes the text format).
"""

from __future__ import annotations

import pytest

from chakra_core import ConfigError, TraceFormatError
from chakra_text import parse_workload
from chakra_text.format import convert_workload

GOOD = "a -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 64 1"


def _parse(tmp_path, text):
    p = tmp_path / "w.txt"
    p.write_text(text)
    return parse_workload(p)


def _error(tmp_path, text) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as e:
        _parse(tmp_path, text)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(tmp_path / "w.txt") + ":")
    return e.value


@pytest.mark.parametrize("text, line, words", [
    ("FOO\n1\n" + GOOD, 1, "unknown parallelism mode 'FOO'"),
    ("DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCEX 64 1\n", 3, "unknown comm type 'ALLREDUCEX'"),
    ("DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 64\n", 3, "11 columns, needs 12"),
    ("DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 6x4 1\n", 3, "column 11 (weight-gradient comm size)"),
    ("DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 10.5 1\n", 3, "not a whole number of bytes"),
    ("DATA\n1\na -1 ten NONE 0 10 NONE 0 10 ALLREDUCE 64 1\n", 3, "column 3 (forward compute time)"),
    ("DATA\n1\na -1 -5 NONE 0 10 NONE 0 10 ALLREDUCE 64 1\n", 3, "not a non-negative finite number"),
    ("DATA\n1\na x 10 NONE 0 10 NONE 0 10 ALLREDUCE 64 1\n", 3, "column 2 (reserved)"),
    ("DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE_EP 64 1\n", 3, "needs a transformer mode, not DATA"),
    ("HYBRID_TRANSFORMER\n1\na -1 10 ALLTOALLV 8 10 NONE 0 10 NONE 0 1\n", 3, "unknown comm type 'ALLTOALLV'"),
    ("DATA\n3\n" + GOOD + "\n" + GOOD + "\n", 2, "declares 3 layers but the file has 2"),
    ("DATA\n1\n" + GOOD + "\n\n" + GOOD + "\n", 5, "more layer lines than the 1 declared on line 2"),
    ("DATA\ntwo\n" + GOOD, 2, "number of layers: 'two' is not an integer"),
    ("DATA\n1 2\n" + GOOD, 2, "expected the number of layers alone"),
    ("DATA\n", 2, "missing the number of layers"),
    ("HYBRID_DLRM\n2\n" + GOOD + "\n" + GOOD, 1, "needs the index of the last bottom-MLP layer"),
    ("HYBRID_DLRM 1\n2\n" + GOOD + "\n" + GOOD, 1, "must be below the last layer"),
    ("HYBRID_TRANSFORMER model_parallel_NPU_group: x\n1\n" + GOOD, 1, "model_parallel_NPU_group: 'x'"),
    ("HYBRID_TRANSFORMER stray\n1\n" + GOOD, 1, "unexpected token 'stray'"),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD checkpoints: 1 1 checkpoint_initiates: 1 1\n2\n" + GOOD + "\n" + GOOD,
     1, "layer 1 has no checkpoint layer below it"),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD checkpoints: 2 0\n2\n" + GOOD + "\n" + GOOD, 1, "2 layers announced, 1 given"),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD checkpoints: 1 5\n2\n" + GOOD + "\n" + GOOD, 1, "layer 5 is out of range"),
])
def test_bad_input_names_the_line(tmp_path, text, line, words):
    err = _error(tmp_path, text)
    assert err.location == f"line {line}"
    assert words in err.message


def test_empty_file(tmp_path):
    err = _error(tmp_path, "\n# only a comment\n")
    assert "empty workload file" in err.message


def test_blank_lines_comments_floats_and_trailing_tabs_are_tolerated(tmp_path):
    w = _parse(tmp_path, "# written by hand\n\nDATA\t\t\t\n\n2\t\t\n"
                         "a -1 1.5 NONE 0 10 NONE 0 10 ALLREDUCE 1024.0 1   # a comment\n\n"
                         "b\t-1\t10\tNONE\t0\t10\tNONE\t0\t10\tNONE\t0\t1\textra columns ignored\n")
    assert [layer.name for layer in w.layers] == ["a", "b"]
    assert [layer.line for layer in w.layers] == [6, 8]
    assert w.layers[0].fwd.time == 1.5 and w.layers[0].wg.size == 1024
    assert w.layers[1].wg.comm is None


def test_header_fields(tmp_path):
    w = _parse(tmp_path, "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 "
                         "ga: 1 all_gpus: 32 checkpoints: 2 0 1 checkpoint_initiates: 1 3 pp_comm 0\n4\n"
                         + "\n".join([GOOD] * 4))
    assert w.mp_group == 8 and w.all_gpus == 32
    assert w.checkpoints == {0, 1} and w.initiates == {3}
    assert w.header["ep"] == "1" and w.header["pp_comm"] == "0"


def test_option_errors(tmp_path):
    hybrid = _parse(tmp_path, "HYBRID_DATA_MODEL\n1\n" + GOOD)
    with pytest.raises(ConfigError, match="needs the model-parallel group size"):
        convert_workload(hybrid, npus=4)
    with pytest.raises(ConfigError, match="does not divide npus=4"):
        convert_workload(hybrid, npus=4, mp_group=3)
    data = _parse(tmp_path, "DATA\n1\n" + GOOD)
    with pytest.raises(ConfigError, match="option npus is required"):
        convert_workload(data)
    from chakra_text.format import TextFormat

    with pytest.raises(ConfigError, match="mp_group applies to the hybrid modes, not DATA"):
        TextFormat().open([str(tmp_path / "w.txt")], {"npus": 4, "mp_group": 2})
    moe = _parse(tmp_path, "HYBRID_TRANSFORMER ep: 3\n1\n" + GOOD)
    with pytest.raises(ConfigError, match="ep: 3 does not divide the data-parallel group size 4"):
        convert_workload(moe, npus=8, mp_group=2)


def test_all_gpus_gives_the_default_rank_count(tmp_path):
    w = _parse(tmp_path, "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 6\n1\n" + GOOD)
    ts = convert_workload(w)
    assert ts.ranks == [0, 1, 2, 3, 4, 5]
    assert ts.process_groups == {"1": [0, 1], "2": [2, 3], "3": [4, 5], "4": [0, 2, 4], "5": [1, 3, 5]}


@pytest.mark.parametrize("size", ["99999999999999999999", "9223372036854775808", "9" * 5000])
def test_comm_size_beyond_int64_names_the_line(tmp_path, size):
    # comm_size is an int64 attribute: a larger size used to crash the serializer (ValueError)
    err = _error(tmp_path, f"DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE {size} 1\n")
    assert err.location == "line 3"
    assert "column 11 (weight-gradient comm size)" in err.message and "2**63-1" in err.message


def test_largest_int64_comm_size_is_kept(tmp_path):
    w = _parse(tmp_path, "DATA\n1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 9223372036854775807 1\n")
    [coll] = [n for n in convert_workload(w, npus=2)[0].nodes() if n.name.startswith("COMM")]
    assert coll.attr[2].name == "comm_size" and coll.attr[2].int64_val == 2**63 - 1


@pytest.mark.parametrize("time, cycle_ns", [("1" + "0" * 300, 1.0), ("1", 1e300), ("1" + "0" * 300, 1e300)])
def test_duration_beyond_uint64_names_the_line(tmp_path, time, cycle_ns):
    # duration_micros is a uint64: a huge time (or time x cycle_ns, even an infinite product)
    # used to crash with ValueError/OverflowError instead of a one-line error
    w = _parse(tmp_path, f"DATA\n1\n\na -1 {time} NONE 0 10 NONE 0 10 ALLREDUCE 64 1\n")
    with pytest.raises(TraceFormatError) as e:
        convert_workload(w, npus=2, cycle_ns=cycle_ns)
    assert e.value.location == "line 4"
    assert "layer 'a': FWD time" in e.value.message and "duration_micros" in e.value.message


def test_dlrm_last_bottom_layer_as_a_header_field(tmp_path):
    # some ASTRA-sim versions read the index from a 'DLRM_LAST_BOTTOM_LAYER: k' field instead of
    # the token after the mode; that form used to be "'DLRM_LAST_BOTTOM_LAYER:' is not an integer"
    w = _parse(tmp_path, "HYBRID_DLRM DLRM_LAST_BOTTOM_LAYER: 1\n3\n" + GOOD + "\n" + GOOD + "\n" + GOOD)
    assert w.last_bottom == 1 and w.header["DLRM_LAST_BOTTOM_LAYER"] == "1"
    assert _parse(tmp_path, "HYBRID_DLRM_ENHANCED 0\n2\n" + GOOD + "\n" + GOOD).last_bottom == 0
    err = _error(tmp_path, "HYBRID_DLRM DLRM_LAST_BOTTOM_LAYER: x\n2\n" + GOOD + "\n" + GOOD)
    assert err.location == "line 1" and "DLRM_LAST_BOTTOM_LAYER: 'x' is not an integer" in err.message


@pytest.mark.parametrize("column, token, words", [
    (10, "+2", "column 11 (weight-gradient comm size): '+2' is not a whole number"),
    (10, "1_000", "'1_000' is not a whole number"),
    (10, "\u0666\u0664", "is not a whole number of bytes (plain decimal digits 0-9)"),
    (10, "1e3", "'1e3' is not a whole number"),
    (2, "1e3", "column 3 (forward compute time): '1e3' is not a non-negative finite number"),
    (2, "1_0", "'1_0' is not a non-negative finite number"),
    (2, "\u0661\u0660", "is not a non-negative finite number"),
    (2, "+10", "'+10' is not a non-negative finite number"),
    (1, "+1", "column 2 (reserved): '+1' is not an integer"),
    (1, "\u0661", "column 2 (reserved)"),
])
def test_numbers_are_plain_ascii_decimal(tmp_path, column, token, words):
    # Python's int() and float() take all of these; ASTRA-sim's reader does not
    tokens = GOOD.split()
    tokens[column] = token
    err = _error(tmp_path, "DATA\n1\n" + " ".join(tokens) + "\n")
    assert err.location == "line 3" and words in err.message


@pytest.mark.parametrize("text", ["DATA\n\u0662\n" + GOOD, "DATA\n+1\n" + GOOD])
def test_layer_count_is_plain_ascii_decimal(tmp_path, text):
    err = _error(tmp_path, text)
    assert err.location == "line 2" and "number of layers" in err.message


def test_invalid_utf8_names_the_line_and_is_never_replaced(tmp_path):
    p = tmp_path / "w.txt"
    p.write_bytes(b"DATA\n1\na\xff -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 64 1\n")
    with pytest.raises(TraceFormatError) as e:
        parse_workload(p)
    assert e.value.location == "line 3" and "not UTF-8 text" in e.value.message
    p.write_bytes(b"\xef\xbb\xbfDATA\n1\n" + GOOD.encode() + b"\n")  # a leading BOM is fine
    assert parse_workload(p).layers[0].name == "a"


@pytest.mark.parametrize("cycle_ns", ["0", "0.0", "-1"])
def test_cycle_ns_must_be_a_positive_period(tmp_path, chakra_cli, cycle_ns):
    # a zero period made every compute time 0 us
    p = tmp_path / "w.txt"
    p.write_text("DATA\n1\n" + GOOD + "\n")
    code, out, err = chakra_cli("convert", p, "-O", "npus=2", "-O", f"cycle_ns={cycle_ns}", "-o", f"{tmp_path / 'et'}/")
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1, err
    assert f"{p}: option cycle_ns must be a positive number of nanoseconds per cycle" in err
    assert not (tmp_path / "et").exists()
    for bad in (0.0, float("inf"), float("nan")):  # the Python API refuses them too
        with pytest.raises(ConfigError, match="option cycle_ns must be a positive number"):
            convert_workload(parse_workload(p), npus=2, cycle_ns=bad)


@pytest.mark.parametrize("unit", ["us", "ns", "ms"])
def test_cycle_ns_is_refused_without_cycles(tmp_path, unit):
    # it was accepted and ignored; a period the user gave is refused like mp_group on a non-hybrid mode
    from chakra_text.format import TextFormat

    p = tmp_path / "w.txt"
    p.write_text("DATA\n1\n" + GOOD + "\n")
    with pytest.raises(ConfigError) as e:
        TextFormat().open([str(p)], TextFormat().check_options({"npus": 2, "time_unit": unit, "cycle_ns": 1.0}))
    assert str(e.value) == f"{p}: option cycle_ns applies to time_unit=cycles, not time_unit={unit}"
    ts = TextFormat().open([str(p)], TextFormat().check_options({"npus": 2, "time_unit": "cycles", "cycle_ns": 2.0}))
    assert [n.duration_micros for n in ts[0].nodes()][0] == 0  # 10 cycles x 2 ns = 0.02 us -> 0


def test_header_value_errors_name_the_header_line_and_the_source(tmp_path):
    # comment and blank lines first: the header is physical line 3
    w = _parse(tmp_path, "# generated\n\nHYBRID_TRANSFORMER model_parallel_NPU_group: 3 ep: 3 all_gpus: 8\n1\n" + GOOD)
    with pytest.raises(ConfigError) as e:
        convert_workload(w)
    assert e.value.location == "line 3"
    assert e.value.message == ("model-parallel group size 3 (model_parallel_NPU_group: of the file) does not "
                               "divide npus=8 (all_gpus: of the file)")
    with pytest.raises(ConfigError) as e:
        convert_workload(w, npus=8, mp_group=2)
    assert str(e.value) == (f"{w.path}:line 3: expert-parallel group size ep: 3 does not divide the data-parallel "
                            "group size 4 = npus 8 (option npus) / (model-parallel 2 (option mp_group) x pp: 1)")
    with pytest.raises(ConfigError) as e:
        convert_workload(_parse(tmp_path, "HYBRID_DATA_MODEL\n1\n" + GOOD), npus=4)
    assert e.value.location == "line 1" and "needs the model-parallel group size" in e.value.message
