"""Model fields a fitted model never holds, refused where the model is read (review 24): a 0 where
the model wants 1 or more (a size step of 0 sampled 0-byte collectives and divided by zero), and
a group reference or peer that is not one (a ValueError inside the sampler).  Each model is
fitted on the recorded DDP set and then edited by hand, one field, to the value under test."""

from __future__ import annotations

import json
import re

import pytest


def _sized_kind(model):
    stats = model["workloads"][0]["kind_stats"]
    return next(k for k in sorted(stats, key=int) if "size_step" in stats[k])


def _first_slot(model, test):
    slots = model["workloads"][0]["classes"][0]["slots"]
    return next(i for i, s in enumerate(slots) if test(s))


#: field, as an error names it ("{...}" filled from the model) -> synthesizers whose models hold it
ONE_OR_MORE = {
    "workloads[0].kind_stats.{kind}.size_step": ("learned", "structural", "markov"),
    "workloads[0].classes[0].motifs[0].count": ("learned", "structural"),
    "workloads[0].classes[0].ranks": ("learned", "structural"),
    "workloads[0].classes[0].slots[{ctrl}].ctrl[0]": ("learned", "structural"),
    "workloads[0].classes[0].segments[0].length": ("learned",),
    "workloads[0].roles": ("learned",),
    "workloads[0].ranks": ("markov",),
    "workloads[0].nodes": ("markov",),
}


def _place(model, field):
    """The field's container, its key, and the field as an error names it."""
    shown = field.format(kind=_sized_kind(model) if "{kind}" in field else "",
                         ctrl=_first_slot(model, lambda s: s.get("ctrl")) if "{ctrl}" in field else "")
    keys = re.findall(r"[^.\[\]]+", shown)
    parent = model
    for k in keys[:-1]:
        parent = parent[int(k)] if isinstance(parent, list) else parent[k]
    return parent, int(keys[-1]) if isinstance(parent, list) else keys[-1], shown


@pytest.mark.parametrize("field, synthesizer", [(f, s) for f, ss in ONE_OR_MORE.items() for s in ss])
def test_zero_where_the_model_wants_one_or_more(models, tmp_path, chakra_cli, field, synthesizer):
    model = json.loads(json.dumps(models[synthesizer]))
    parent, last, shown = _place(model, field)
    assert parent[last] >= 1  # what fit wrote
    parent[last] = 0
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    for argv in (["synth", "sample", path, "-o", f"{tmp_path / 'out'}/"], ["synth", "show", path]):
        code, _out, err = chakra_cli(*argv)
        assert code == 2 and err.splitlines() == [
            f"chakra synth: error: {path}: model field {shown}: wants an integer from 1 to 2**63-1, got 0"], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("synthesizer", ["learned", "structural"])
@pytest.mark.parametrize("index, value, want", [
    (1, "", "a group reference"), (1, "x", "a group reference"), (1, "q:0", "a group reference"),
    (1, "i:1", "a group reference"),  # the rank itself (offset 0) is not in it
    (1, "i:0,1", "a group reference"),  # an offset past the DDP model's tile of 1
    (1, 0, "a group reference"), (0, "sned", '"g", "send" or "recv"'), (0, "send", "a peer"),
])
def test_bad_group_reference_is_a_model_field_error(models, tmp_path, chakra_cli, synthesizer, index, value, want):
    """A slot's role ``["g", "w"]`` edited: "x" was a ValueError (int('')) inside the sampler."""
    model = json.loads(json.dumps(models[synthesizer]))
    s = _first_slot(model, lambda slot: slot.get("role") == ["g", "w"])
    model["workloads"][0]["classes"][0]["slots"][s]["role"][index] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, _out, err = chakra_cli("synth", "sample", path, "-o", f"{tmp_path / 'out'}/")
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"chakra synth: error: {path}: model field workloads[0].classes[0].slots[{s}]"
                               f".role[{index if want != 'a peer' else 1}]: wants {want}"), err
    assert not (tmp_path / "out").exists()
