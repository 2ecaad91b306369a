"""A kept op's inputs and outputs: what the written nodes hold, on real recordings, and the text
form's round trip on values a recording rarely has."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from chakra_core import NodeType
from chakra_pytorch import convert_rank, find_rank_files, outnode
from chakra_pytorch.iotext import dump_io, io_texts, io_values

DATA = Path(__file__).resolve().parent / "data"
_PARTS = (("inputs", "values"), ("inputs", "shapes"), ("inputs", "types"),
          ("outputs", "values"), ("outputs", "shapes"), ("outputs", "types"))


def _host_lists(name: str) -> dict[int, tuple]:
    """Each host ET node's six lists as Python's json reads them, by node id."""
    with gzip.open(DATA / name / "pytorch_et.0.json.gz", "rt") as f:
        nodes = json.load(f)["nodes"]
    return {n["id"]: tuple(n[side][part] for side, part in _PARTS) for n in nodes if "inputs" in n}


@pytest.mark.parametrize("name", ["mlp", "transformer", "ddp"])
def test_written_inputs_and_outputs_are_the_host_ets_lists_printed(name):
    # recorded by the scripts in recording/: every op written from the host ET holds its six
    # lists as str(list) of the values the file holds (the reference converter's form), with
    # one table of printed shapes and types for the whole rank, as the writer uses it
    lists = _host_lists(name)
    (rf, *_), _ = find_rank_files([str(DATA / name)])
    graph = convert_rank(rf)
    table = outnode.attr_records()
    written = [n for n in graph.nodes if n.id in lists and n.type != NodeType.METADATA_NODE and n.io is not None]
    assert len(written) > 20
    for n in written:
        node = type(n.to_node()).FromString(n.serialized(table))
        got = tuple(getattr(getattr(node, side), part) for side, part in _PARTS)
        assert got == tuple(map(str, lists[n.id])), n.name
    # the shapes and types (four lists a node) repeat: under half of them printed
    assert 0 < len(table[outnode._PRINTED]) < 2 * len(written)


AWKWARD = [
    [[1, 2, 0, 4096, 4, "cuda:0"], 0.1, True, None, -3, 1e-05, 0.0001, 1e16, -0.0, 2.5e-300, (1 << 63) - 1],
    [[], [[]], [[2, 3], [4]], [1 << 40]],
    ["Tensor(float)", "GenericList[Tensor(float),Int]", "it's", 'say "hi"', "a\\b", "line\nnext", "tab\tx",
     "\x7f", "é", "日本", "\u2028", "true", "null, false"],
    [{"k": [1, "v"]}, [{"deep": {"er": None}}]],
    [],
    ["", [""], [[[[[]]]]]],
]


def test_the_text_form_prints_each_list_as_python_does():
    # values no recording here holds together (hand-made: quotes, escapes, newlines and
    # separators inside strings, non-ASCII, floats at the edges of Python's notation)
    io = dump_io(AWKWARD)
    assert io.count(b"\n") == 5
    printed: dict[bytes, str] = {}
    assert io_texts(io, printed) == tuple(map(repr, AWKWARD))
    assert io_texts(io, printed) == tuple(map(repr, AWKWARD))  # from the table the second time
    assert printed and all(text == repr(json.loads(line)) for line, text in printed.items())
    assert io_values(io) == (AWKWARD[0], AWKWARD[3])


def test_the_table_of_printed_lists_stops_growing_at_its_bound(monkeypatch):
    from chakra_pytorch import iotext

    monkeypatch.setattr(iotext, "_MAX_PRINTED", 3)
    printed: dict[bytes, str] = {}
    for k in range(5):
        parts = ([k], [[k]], [f"t{k}"], [], [[k, k]], [f"u{k}"])
        assert io_texts(dump_io(parts), printed) == tuple(map(repr, parts))
    assert len(printed) == 3
