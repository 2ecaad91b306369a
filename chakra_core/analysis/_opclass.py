"""Operators grouped for people: by class (GEMM, attention, elementwise, ..., communication by
kind, memory, idle) and by family (names equal up to their numbers: ``block#_mlp_up`` stands for
the same operator of every layer).

Classes of compute and CPU operators come from their names (PyTorch ``aten::`` ops, Triton and
cuBLAS kernels, XLA HLO opcodes, the layer names of text workloads and the generator); the
first rule that matches wins, and a name no rule matches is ``other compute`` (``other CPU`` for
host operations).  The PyTorch input's ``[idle]`` nodes (recorded gaps) are ``idle``, as is the
waiting a simulation adds.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from chakra_core.analysis._spans import SPAN_KINDS, Spans
from chakra_core.analysis._tables import weights
from chakra_core.io._schema import COMM_TYPE_NAMES, IDLE_NAME

__all__ = ["CLASSES", "operator_class", "operator_classes", "operator_families", "family_of"]

#: (class, pattern searched in the lower-cased name), in order
_RULES = (
    ("attention", r"attn|attention|sdpa|flash|fmha|scaled_dot_product|\bmha\b"),
    ("convolution", r"conv|cudnn"),
    ("GEMM", r"(?<![a-z])(a?dd)?b?mm(?![a-z])|addmm|matmul|linear|gemm|cublas|cutlass|xmma|einsum|\bdot\b|"
             r"mlp|(?<![a-z])fc\d*(?![a-z])|proj|dense|qkv|lm_head"),
    ("normalization", r"norm"),
    ("embedding", r"embed|gather|index_select|lookup"),
    ("optimizer", r"adam|sgd|optim|_foreach|zero_grad|lamb"),
    ("elementwise", r"add|mul|sub|div|relu|gelu|silu|swiglu|sigmoid|tanh|dropout|softmax|exp|copy|fill|"
                    r"clone|cat|where|mask|triton_poi|elementwise|fusion|fused|cast|convert|transpose|"
                    r"reshape|view|permute|contiguous|bias|scale|residual|act"),
)
_COMPILED = tuple((c, re.compile(p)) for c, p in _RULES)

#: every class a report shows, in display order
CLASSES = ("GEMM", "attention", "convolution", "normalization", "embedding", "elementwise", "optimizer",
           "other compute", "other CPU", "memory", *(n.lower().replace("_", "-") for n in COMM_TYPE_NAMES.values()),
           "send/recv", "idle")


def operator_class(name: str, kind: str, comm_type: int = -1) -> str:
    """The class of an operation named ``name`` of span kind ``kind`` (see the module docstring)."""
    if kind == "collective":
        return COMM_TYPE_NAMES.get(comm_type, "other collective").lower().replace("_", "-")
    if kind in ("send", "recv"):
        return "send/recv"
    if kind == "memory":
        return "memory"
    if name == IDLE_NAME:
        return "idle"
    low = name.lower()
    return next((c for c, rx in _COMPILED if rx.search(low)), "other CPU" if kind == "cpu" else "other compute")


def family_of(name: str) -> str:
    """A name with its numbers folded (those not followed by a letter, so ``c10d`` stays):
    ``block12_mlp_up`` -> ``block#_mlp_up``, ``layers.3.fc1`` -> ``layers.#.fc#``."""
    return re.sub(r"(?<!\d)\d+(?![\dA-Za-z])", "#", name)


def _per_name(spans: Spans) -> list[tuple[str, str, int, int, int]]:
    """``(name, kind, comm_type, total_ns, count)`` of each distinct operation, weighted by the
    ranks a span stands for."""
    ops = spans.ops()
    w = weights(spans)[ops]
    keys = (spans.name[ops].astype(np.int64) * len(SPAN_KINDS) + spans.kind[ops]) * 64 \
        + (spans.comm_type[ops].astype(np.int64) + 1)
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(-1)
    total = np.bincount(inv, weights=spans.dur_ns[ops] * w, minlength=len(uniq))
    cnt = np.bincount(inv, weights=w, minlength=len(uniq))
    out = []
    for k, t, c in zip(uniq.tolist(), total.tolist(), cnt.tolist()):
        name_kind, ct = divmod(k, 64)
        name, kind = divmod(name_kind, len(SPAN_KINDS))
        out.append((spans.names[name], SPAN_KINDS[kind], ct - 1, int(t), int(c)))
    return out


def operator_classes(spans: Spans, idle_ns: int = 0) -> list[dict[str, Any]]:
    """Time per class over all ranks (ns, weighted by the ranks a span stands for), its share of
    all rank time (operations plus ``idle_ns``), the operation count and the three biggest
    families of each class, in the order of :data:`CLASSES`."""
    acc: dict[str, dict[str, Any]] = {}
    for name, kind, ct, total, cnt in _per_name(spans):
        cls = operator_class(name, kind, ct)
        row = acc.setdefault(cls, {"class": cls, "total_ns": 0, "count": 0, "families": {}})
        row["total_ns"] += total
        row["count"] += cnt
        fam = family_of(name)
        row["families"][fam] = row["families"].get(fam, 0) + total
    if idle_ns:
        row = acc.setdefault("idle", {"class": "idle", "total_ns": 0, "count": 0, "families": {}})
        row["total_ns"] += int(idle_ns)
        row["families"]["waiting (simulated)"] = int(idle_ns)
    grand = max(sum(r["total_ns"] for r in acc.values()), 1)
    rows = sorted(acc.values(), key=lambda r: CLASSES.index(r["class"]) if r["class"] in CLASSES else len(CLASSES))
    for r in rows:
        r["share"] = round(r["total_ns"] / grand, 4)
        r["top_families"] = [f for f, _ in sorted(r.pop("families").items(), key=lambda kv: -kv[1])[:3]]
    return rows


def operator_families(spans: Spans, n: int = 20) -> list[dict[str, Any]]:
    """The ``n`` operator families (names equal up to numbers, per kind) with the most time over
    all ranks: class, distinct names, count, total and mean (ns), share of operation time."""
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for name, kind, ct, total, cnt in _per_name(spans):
        fam = family_of(name)
        row = acc.setdefault((fam, kind), {"family": fam, "kind": kind, "class": operator_class(name, kind, ct),
                                           "names": set(), "count": 0, "total_ns": 0})
        row["names"].add(name)
        row["count"] += cnt
        row["total_ns"] += total
    grand = max(sum(r["total_ns"] for r in acc.values()), 1)
    rows = sorted(acc.values(), key=lambda r: -r["total_ns"])[:n]
    for r in rows:
        r["names"] = len(r["names"])
        r["mean_ns"] = r["total_ns"] // max(r["count"], 1)
        r["share"] = round(r["total_ns"] / grand, 4)
    return rows
