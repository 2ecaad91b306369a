"""The JSON reader's two ways (chakra_core.base._docparse.parse_json): json's C parser alone for
a document that is plainly fine, the strict parser otherwise. On documents written with keys
given twice, spaces around colons, quotes and colons inside strings, deep nesting and surrogate
escapes, both ways must give what the strict parser alone gives (the value, or a refusal)."""

from __future__ import annotations

import json
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_core.base._docparse import _STRICT_DECODER, parse_json
from chakra_core.base._errors import ConfigError

_ROOT = Path(__file__).resolve().parents[1]
_TEXT = st.text(alphabet=string.ascii_letters + '":\\ {}[],\u00e9', max_size=6)
_KEYS = st.sampled_from(["a", "b", 'q":', "c d"])


def _doc(draw, depth: int) -> str:
    """JSON text of an object, array or scalar, with keys from a few (so some come twice) and
    blanks before and after colons."""
    kind = draw(st.sampled_from(["obj", "arr", "str", "int"] if depth < 6 else ["str", "int"]))
    if kind == "int":
        return str(draw(st.integers(-(1 << 70), 1 << 70)))
    if kind == "str":
        return json.dumps(draw(_TEXT), ensure_ascii=draw(st.booleans()))
    parts = [_doc(draw, depth + 1) for _ in range(draw(st.integers(0, 3)))]
    if kind == "arr":
        return "[" + ", ".join(parts) + "]"
    pairs = [json.dumps(draw(_KEYS)) + draw(st.sampled_from(["", " ", "\n"])) + ":" + draw(st.sampled_from(["", " "]))
             + p for p in parts]
    return "{" + ",".join(pairs) + "}"


@st.composite
def documents(draw) -> str:
    return _doc(draw, 0)


def _strict(text: str):
    try:
        value = _STRICT_DECODER.decode(text)
    except ValueError as e:
        return ("refused", type(e).__name__)
    return ("read", value)


@settings(max_examples=400, deadline=None)
@given(documents())
def test_both_ways_agree_with_the_strict_parser(text):
    want = _strict(text)
    try:
        got = ("read", parse_json(text, "doc"))
    except ConfigError:
        got = ("refused", "")
    assert got[0] == want[0], text
    if got[0] == "read":
        assert got == want


def test_a_key_twice_hidden_by_a_quote_and_colon_in_a_string_is_refused():
    """A blank before one colon and an escaped quote before a colon in a string: counting key
    ends without the blanks would see two keys and miss the second 'a'."""
    text = '{"a" :1, "a":2, "b":"x\\":"}'
    try:
        parse_json(text, "doc")
    except ConfigError as e:
        assert "key 'a' given twice" in str(e)
    else:
        raise AssertionError("read a document that gives 'a' twice")


def test_json_sets_find_their_groups_in_the_metadata_or_the_process_group_node(tmp_path, chakra_cli):
    """The JSON form of the DDP recording: its groups from the metadata jsonize writes, or,
    that attribute taken out (another tool's file), from PyTorch's process-group node; ASTRA-sim's
    all-reduce example has none, known without parsing its nodes."""
    from chakra_core import load_traces

    assert chakra_cli("-q", "jsonize", _ROOT / "plugins/chakra-pytorch/tests/data/ddp", "-o", f"{tmp_path}/j/")[0] == 0
    assert load_traces(str(tmp_path / "j"), "json").process_groups == {"0": [0, 1]}  # the recording's pg_config
    for f in (tmp_path / "j").glob("*.json"):
        doc = json.loads(f.read_text())
        doc["metadata"]["attr"] = [a for a in doc["metadata"].get("attr", []) if a["name"] != "process_groups"]
        f.write_text(json.dumps(doc))
    assert load_traces(str(tmp_path / "j"), "json").process_groups == {"0": [0, 1]}
    example = _ROOT / "plugins/chakra-simpy/tests/data/astra_sim_example/examples/workload/microbenchmarks"
    assert chakra_cli("-q", "jsonize", example / "all_reduce/8npus_1MB/all_reduce", "-o", f"{tmp_path}/tj/")[0] == 0
    assert load_traces(str(tmp_path / "tj"), "json").process_groups == {}


def test_json_groups_are_looked_for_in_the_lowest_ranks_file(tmp_path, chakra_cli):
    """The files given rank 1 first: the set's groups come from rank 0's process-group node, as
    when they are given in rank order (rank 1's file without the node)."""
    from chakra_core import load_traces

    assert chakra_cli("-q", "jsonize", _ROOT / "plugins/chakra-pytorch/tests/data/ddp", "-o", f"{tmp_path}/j/")[0] == 0
    for f in (tmp_path / "j").glob("*.json"):
        doc = json.loads(f.read_text())
        doc["metadata"]["attr"] = [a for a in doc["metadata"].get("attr", []) if a["name"] != "process_groups"]
        if f.name == "trace.1.json":
            doc["nodes"] = [n for n in doc["nodes"] if n.get("name") != "## process_group:init ##"]
        f.write_text(json.dumps(doc))
    files = [str(tmp_path / "j" / f"trace.{r}.json") for r in (1, 0)]
    assert load_traces(files, "json").process_groups == {"0": [0, 1]}
