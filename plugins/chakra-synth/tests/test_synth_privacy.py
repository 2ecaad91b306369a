"""The model files and the sampled traces hold none of the source's operator names (unless
``keep_names``), schemas or paths."""

from __future__ import annotations

import pytest

import chakra_core as chakra
from chakra_core import get_str, open_traceset


def _source_strings(directory) -> set[str]:
    """Every node name and op schema of a recorded set."""
    out = set()
    for rt in open_traceset(str(directory)):
        for n in rt.nodes():
            out.add(n.name)
            schema = get_str(n, "op_schema", "")
            if schema:
                out.add(schema)
    return {s for s in out if s}


@pytest.mark.parametrize("synthesizer", ["structural", "markov"])
def test_no_source_name_in_model_or_sample(recorded, tmp_path, synthesizer):
    names = set()
    sources = ["transformer", "ddp", "collectives", "gpt3_text"]
    for s in sources:
        names |= _source_strings(recorded[s])
    assert {"aten::mm", "c10d::allreduce_", "COMP_NODE_block0_attn_qkv_FWD"} & names  # the grep has targets
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded[s]) for s in sources], model, synthesizer=synthesizer)
    blobs = [model.read_bytes()]
    for w in range(len(sources)):
        res = chakra.synth_sample(model, tmp_path / f"s{w}" / "", options={"workload": w})
        blobs += [open(f, "rb").read() for f in res.files]
    for blob in blobs:
        leaked = sorted(name for name in names if name.encode() in blob)
        assert not leaked, leaked[:5]
        assert str(recorded["ddp"]).encode() not in blob


def test_keep_names_keeps_them(recorded, tmp_path):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["transformer"])], model, options={"keep_names": True})
    text = model.read_text()
    assert "aten::mm" in text
    res = chakra.synth_sample(model, tmp_path / "s" / "")
    assert b"aten::mm" in open(res.files[0], "rb").read()
