"""What ``simulate`` and ``export`` share: system-file flags and running one backend."""

from __future__ import annotations

from pathlib import Path

from chakra_core._errors import ConfigError
from chakra_core._options import parse_kv

from ._common import add_input_options, add_plugin_options, open_input

__all__ = ["add_system_arguments", "run_backend", "print_result"]

SYSTEM_FLAGS = ("system", "network", "memory", "comm_groups")


def add_system_arguments(p, memory: bool = True) -> None:
    """``--system``, ``--network`` (and ``--memory``, ``--comm-groups``), ``--format``, ``-I``, ``-O``."""
    p.add_argument("path", metavar="PATH", help="trace set: file, directory or prefix")
    add_input_options(p)
    p.add_argument("--system", metavar="FILE", help="our system YAML, or ASTRA-sim's system.json")
    p.add_argument("--network", metavar="FILE", help="our YAML, or ASTRA-sim's network.yml")
    if memory:
        p.add_argument("--memory", metavar="FILE", help="ASTRA-sim memory.json (remote memory)")
        p.add_argument("--comm-groups", dest="comm_groups", metavar="FILE",
                       help="ASTRA-sim communicator-group JSON")
    add_plugin_options(p)


def run_backend(args, name: str, kind: str, output: str | None, extra: dict | None = None):
    """Open the input, check the backend's kind and options, run it, return its Result."""
    from chakra_core._plugins import get_host

    host = get_host(strict=args.strict or None)
    impl = host.registry.get("backend", name)
    if impl.kind != kind:
        others = [e.name for e in host.registry.entries("backend") if _kind_of(e) == kind]
        raise ConfigError(
            f"backend {name!r} is of kind {impl.kind!r}, not {kind!r}; {kind}s: {', '.join(others) or 'none'}"
        )
    opts = parse_kv(args.opts)
    given = {flag: getattr(args, flag) for flag in SYSTEM_FLAGS if getattr(args, flag, None)}
    given.update(extra or {})
    for key, value in given.items():
        if key in opts and opts[key] != value:
            raise ConfigError(f"{key!r} given twice: --{key.replace('_', '-')} {value} and -O {key}={opts[key]}")
        opts[key] = value
    _hint_input_options(host, impl, opts)
    checked = impl.check_options(opts)
    traces = open_input([args.path], args)
    out = Path(output) if output else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    return impl.run(traces, checked, out)


def _kind_of(entry) -> str | None:
    try:
        return entry.load().kind
    except Exception:  # noqa: BLE001 - a broken backend only drops out of the list
        return None


def _hint_input_options(host, impl, opts: dict) -> None:
    """Refuse a backend option that is really an input-format option, pointing to ``-I``."""
    for key in opts:
        if key in (impl.options or {}):
            continue
        owners = [e.name for e in host.registry.entries("format") if key in _declared(e)]
        if owners:
            raise ConfigError(f"{key!r} is an option of the input format {owners[0]!r}, not of backend "
                              f"{impl.name!r}: give it as -I {key}={opts[key]}")


def _declared(entry) -> dict:
    try:
        return entry.load().options or {}
    except Exception:  # noqa: BLE001 - a broken format only loses the hint
        return {}


def print_result(result) -> None:
    """Print a backend's scalar summary values, one per line, then its notes."""
    for k, v in result.summary.items():
        if isinstance(v, (int, float, str)):
            print(f"{k}: {v}")
    ranks = result.ranks
    shown = ranks if len(ranks) <= 16 else ranks[:4] + ranks[-4:]
    for i, r in enumerate(shown):
        if len(ranks) > 16 and i == 4:
            print(f"... {len(ranks) - 8} more ranks (all of them with --json)")
        print(f"rank {r.get('rank')}: finished at {r.get('finish_ns')} ns, "
              f"exposed communication {r.get('exposed_comm_ns')} ns")
    for n in result.notes:
        print(f"note: {n}")
