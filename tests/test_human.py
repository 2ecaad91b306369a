"""The formatting layer for people: units chosen by magnitude, binary byte units, signed errors."""

from __future__ import annotations

import pytest

from chakra_core.base._human import count, duration, percent, rate, readable, size, value


@pytest.mark.parametrize("ns, text", [(0, "0 ns"), (999, "999 ns"), (1000, "1.00 us"), (45_000, "45.0 us"),
                                      (6_389_200, "6.39 ms"), (3.2e9, "3.20 s"), (-2000, "-2.00 us"),
                                      (float("nan"), "n/a"), (None, "n/a"), (123_456_789_000, "123 s")])
def test_durations_take_the_largest_unit_that_keeps_them_above_one(ns, text):
    assert duration(ns) == text


@pytest.mark.parametrize("nbytes, text", [(512, "512 B"), (1024, "1.00 KiB"), (5406, "5.28 KiB"),
                                          (3_355_443_200, "3.12 GiB"), (2**40, "1.00 TiB")])
def test_sizes_are_binary(nbytes, text):
    assert size(nbytes) == text


def test_shares_rates_counts_and_errors():
    assert percent(0.205) == "20.5%" and percent(1) == "100.0%"
    assert rate(12.345) == "12.3 GB/s" and count(2_240_000) == "2,240,000"
    assert value("error", -0.22695547514258352) == "-22.70%" and value("relative_error", 0.0123) == "+1.23%"


def test_mappings_read_as_lines_not_python_reprs():
    lines = readable({"traces": "out/x", "backend": "simpy", "notes": ["a", "b"], "finish_ns": 6_389_200,
                      "collectives": {"bytes": 2048, "count": 3}})
    assert lines == ["traces: out/x", "backend: simpy", "notes: a, b", "finish: 6.39 ms",
                     "collectives: bytes 2.00 KiB; count 3"]
    assert not any("{" in line or "[" in line for line in lines)
