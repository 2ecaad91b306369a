"""``chakra plugins [--json]``: distributions, versions, what each registered, and failures."""

from __future__ import annotations

import warnings

from ._common import print_json


def add_arguments(p) -> None:
    """Arguments of ``plugins``."""
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    """List the plugins; works when some plugin is broken (it is listed with its error)."""
    from chakra_core.plugins import PluginWarning, get_host

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # failures are listed below instead
        host = get_host(strict=args.strict or None)
    rows = [p.to_dict() for p in host.plugins]
    descriptions = {(e.kind, e.name): e.description for e in host.registry.entries()}
    if args.json:
        for r in rows:
            r["descriptions"] = {f"{k}:{n}": descriptions.get((k, n), "")
                                 for k, names in r["registered"].items() for n in names}
        print_json({"plugins": rows, "failed": [r for r in rows if r["error"]]})
        return 0
    w1 = max([len("plugin")] + [len(r["name"]) for r in rows])
    w2 = max([len("distribution")] + [len(r["distribution"]) for r in rows])
    print(f"{'plugin':<{w1}}  {'distribution':<{w2}}  {'version':<8}  registered")
    for r in rows:
        regs = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["registered"].items()) or "-"
        if r["error"]:
            regs = f"FAILED: {r['error']}"
        print(f"{r['name']:<{w1}}  {r['distribution']:<{w2}}  {r['version']:<8}  {regs}")
    return 0
