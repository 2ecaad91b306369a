"""``chakra plugins [--json] [--options [NAME]]``: distributions, versions, what each registered,
failures, and (with ``--options``) the options each implementation accepts."""

from __future__ import annotations

import warnings

from chakra_core.cli._common import print_json


def add_arguments(p) -> None:
    """Arguments of ``plugins``."""
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--options", nargs="?", const="", metavar="NAME",
                   help="also list the options of every implementation (or only of NAME); imports them")


def _options(host, only: str) -> list[dict]:
    """Options of each registered implementation (loading it); a failure is reported, not raised."""
    from chakra_core.base._errors import PluginError
    from chakra_core.base._options import suggest

    names = {e.name for e in host.registry.entries()} | {e.qualified_name for e in host.registry.entries()}
    if only and only not in names:
        raise PluginError(f"no implementation named {only!r}{suggest(only, names)}; installed: "
                          f"{', '.join(sorted(names))}")
    out = []
    for e in host.registry.entries():
        if only and only not in (e.name, e.qualified_name):
            continue
        row = {"kind": e.kind, "name": e.name, "qualified_name": e.qualified_name,
               "distribution": e.distribution, "version": e.version, "description": e.description}
        try:
            impl = e.load()
        except PluginError as err:
            row["error"] = str(err)
        else:
            row["backend_kind"] = getattr(impl, "kind", None) if e.kind == "backend" else None
            row["options"] = {k: {"type": o.type, "default": o.default, "help": o.help, "unit": o.unit,
                                  "choices": list(o.choices), "required": o.required}
                              for k, o in (impl.options or {}).items()}
        out.append(row)
    return out


def _print_options(rows: list[dict]) -> None:
    for r in rows:
        kind = r.get("backend_kind") or r["kind"]
        print(f"\n{r['kind']} {r['qualified_name']} ({kind}): {r['description']}")
        if "error" in r:
            print(f"  cannot be loaded: {r['error']}")
            continue
        for k, o in r["options"].items():
            unit = f" [{o['unit']}]" if o["unit"] else ""
            choices = f" one of {', '.join(map(str, o['choices']))};" if o["choices"] else ""
            default = "required" if o["required"] else f"default {o['default']!r}"
            print(f"  {k} ({o['type']}{unit}, {default}):{choices} {o['help']}")


def _clashes(registry, row: dict) -> dict[str, dict[str, list[str]]]:
    """``{kind: {name: [other qualified names]}}`` for the names of ``row`` that another
    distribution registers too."""
    out: dict[str, dict[str, list[str]]] = {}
    for kind, names in row["registered"].items():
        for n in names:
            others = [e.qualified_name for e in registry.clashes(kind, n) if e.distribution != row["distribution"]]
            if others:
                out.setdefault(kind, {})[n] = others
    return out


def run(args) -> int:
    """List the plugins; works when some plugin is broken (it is listed with its error)."""
    from chakra_core.host._plugins import PluginWarning, get_host

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # failures are listed below instead
        host = get_host(strict=args.strict or None)
    rows = [p.to_dict() for p in host.plugins]
    descriptions = {(e.kind, e.qualified_name): e.description for e in host.registry.entries()}
    for r in rows:
        r["clashes"] = _clashes(host.registry, r)
    if args.json:
        for r in rows:
            r["descriptions"] = {f"{k}:{n}": descriptions.get((k, f"{r['distribution']}:{n}"), "")
                                 for k, names in r["registered"].items() for n in names}
        doc = {"plugins": rows, "failed": [r for r in rows if r["error"]]}
        if args.options is not None:
            doc["implementations"] = _options(host, args.options)
        print_json(doc)
        return 0
    if args.options:  # only the options of one implementation
        _print_options(_options(host, args.options))
        return 0
    w1 = max([len("plugin")] + [len(r["name"]) for r in rows])
    w2 = max([len("distribution")] + [len(r["distribution"]) for r in rows])
    print(f"{'plugin':<{w1}}  {'distribution':<{w2}}  {'version':<8}  registered")
    for r in rows:
        regs = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["registered"].items()) or "-"
        if r["clashes"]:
            regs += "; CLASH: " + "; ".join(f"{k} {n} is also {', '.join(others)}"
                                            for k, names in r["clashes"].items() for n, others in names.items())
        if r["error"]:
            regs = f"FAILED: {r['error']}"
        print(f"{r['name']:<{w1}}  {r['distribution']:<{w2}}  {r['version']:<8}  {regs}")
    if args.options is not None:
        _print_options(_options(host, args.options))
    return 0
