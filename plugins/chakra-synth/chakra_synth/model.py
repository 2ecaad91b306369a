"""The model file: its format marker, loading and the checks shared by the synthesizers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core import ConfigError, GlobalMetadata, make_attr

__all__ = ["MODEL_FORMAT", "MODEL_VERSION", "new_model", "check_model", "pick_workload", "sample_metadata"]

MODEL_FORMAT = "chakra-synth-model"
MODEL_VERSION = 1


def new_model(synthesizer: str, keep_names: bool, kinds: list[dict[str, Any]],
              workloads: list[dict[str, Any]]) -> dict[str, Any]:
    """A model file's content: the format marker, the synthesizer's name, whether names were kept,
    the kind table (``kinds_json``) and one entry per fitted workload."""
    return {"format": MODEL_FORMAT, "version": MODEL_VERSION, "synthesizer": synthesizer,
            "keep_names": keep_names, "kinds": kinds, "workloads": workloads}


def check_model(model: Mapping[str, Any], needs: str) -> None:
    """Refuse a model of another format, version or synthesizer (``needs``: a key every workload
    of this synthesizer's models has)."""
    if model.get("format") != MODEL_FORMAT:
        raise ConfigError(f"not a chakra-synth model (format {model.get('format')!r})")
    if model.get("version") != MODEL_VERSION:
        raise ConfigError(f"chakra-synth model version {model.get('version')!r}; this version reads {MODEL_VERSION}")
    ws = model.get("workloads")
    if isinstance(ws, list) and not ws:
        raise ConfigError("the model holds no workload: fit it on one trace set or more")
    if not isinstance(ws, list) or any(not isinstance(w, dict) or needs not in w for w in ws):
        raise ConfigError(f"the model was not fitted by this synthesizer (synthesizer {model.get('synthesizer')!r})")


def pick_workload(model: Mapping[str, Any], index: int | None) -> tuple[int, dict[str, Any]]:
    """Workload ``index`` of the model (the first when None), with its index."""
    ws = model["workloads"]
    index = 0 if index is None else int(index)
    if index >= len(ws):
        raise ConfigError(f"workload={index}: the model has {len(ws)} workload(s) (0..{len(ws) - 1})")
    return index, ws[index]


def sample_metadata(model: Mapping[str, Any], seed: int, workload: int, *extra: Any) -> GlobalMetadata:
    """The GlobalMetadata of a sample: its source, the synthesizer, the seed, the fitted workload
    it was drawn from, and the attributes ``extra`` (``make_attr`` results)."""
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "chakra-synth"), make_attr("synthesizer", str(model["synthesizer"])),
                      make_attr("seed", seed), make_attr("workload", workload), *extra])
    return meta
