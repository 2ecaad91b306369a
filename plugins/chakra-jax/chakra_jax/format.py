"""The ``jax`` input format: a compiled XLA program (and optionally its profile) to per-device ETs."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from chakra_core import (
    ConfigError,
    GlobalMetadata,
    InputFormat,
    Option,
    TraceFormatError,
    TraceSet,
    check_limit,
    expand_paths,
    make_attr,
)

from .device_model import DEFAULT_DEVICE, choose_device, model_durations
from .emit import DeviceRank, Templates, Timing
from .hlo_text import HloModule, parse_hlo_text
from .lowering import Lowered, lower
from .profile import Profile, read_profile
from .suffixes import PROFILE_SUFFIXES

__all__ = ["JaxFormat", "JaxWarning", "convert_module", "load_module", "HLO_SUFFIXES"]

#: file names taken as HLO programs (text, or HloModuleProto for ``.pb``).
HLO_SUFFIXES = (".hlo.txt", ".hlo", ".txt", ".hlo.pb", ".pb", ".txt.gz")


def load_module(path: str) -> HloModule:
    """Parse the HLO program at ``path``: HloModuleProto for ``*.pb``, else HLO text."""
    if path.endswith(".pb"):
        from .hlo_proto import parse_hlo_proto

        return parse_hlo_proto(path)
    return parse_hlo_text(path)


def _split_inputs(paths: Sequence[str]) -> tuple[str, str | None]:
    profiles = [p for p in paths if str(p).endswith(PROFILE_SUFFIXES)]
    programs = [p for p in paths if p not in profiles]
    if len(programs) != 1:
        listed = f" ({', '.join(os.path.basename(str(p)) for p in programs[:4])})" if programs else ""
        raise TraceFormatError(f"the jax format takes one HLO program (.hlo.txt, .txt or .hlo.pb) and at "
                               f"most one profile, got {len(programs)} programs{listed}",
                               os.path.dirname(str(programs[0])) if len(programs) > 1 else
                               str(paths[0]) if paths else None)
    xplanes = [p for p in profiles if str(p).endswith(".xplane.pb")]
    if len(xplanes) > 1 or (not xplanes and len(profiles) > 1):
        raise TraceFormatError("give at most one profile (an .xplane.pb, or one Chrome-trace JSON)",
                               str(profiles[0]))
    chosen = xplanes[0] if xplanes else (profiles[0] if profiles else None)
    return str(programs[0]), None if chosen is None else str(chosen)


class JaxWarning(UserWarning):
    """A conversion that went ahead with something the trace cannot show (a custom-call's
    hidden communication) or a default the module did not decide."""


def _timings(module: HloModule, lowered: Lowered, profile: Profile | None, step: int | None, device: str | None,
             idle_gaps: bool) -> tuple[dict[int, Timing], list[str]]:
    """What times each device's nodes (the profile, else the device model) and notes about it."""
    if profile is not None:
        return _measured(module, lowered, profile, step, idle_gaps)
    chosen, why = choose_device(module, device)
    model_us, notes = model_durations(lowered.ops, chosen)
    if why.startswith(f"device model {DEFAULT_DEVICE} (default"):
        warnings.warn(f"{module.path}: {why}", JaxWarning, stacklevel=5)
    timing = Timing(model_us=model_us)
    return {d: timing for d in range(lowered.devices)}, [why, *notes]


def _measured(module: HloModule, lowered: Lowered, profile: Profile, step: int | None,
              idle_gaps: bool) -> tuple[dict[int, Timing], list[str]]:
    """Each device's measured durations (and starts, with ``idle_gaps``) and a note about them."""
    durations = profile.durations(step)
    _check_profile(module, lowered, profile, durations)
    starts = profile.starts(step) if idle_gaps else {}
    step_us = profile.step_time_us(step)
    notes = ["durations measured (profile); the gaps between a device's ops are [idle] nodes"
             if idle_gaps else "durations measured (profile); idle gaps not kept (idle_gaps=false)"]
    return {d: Timing(durations.get(d, {}), starts.get(d, {}) if idle_gaps else None, step_us)
            for d in range(lowered.devices)}, notes


def _ranges(ids: Sequence[int]) -> str:
    """Sorted device ids as runs: ``0..3, 6``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def _check_profile(module: HloModule, lowered: Lowered, profile: Profile,
                   durations: Mapping[int, Mapping[str, float]]) -> None:
    """Refuse a profile of another program (events on devices the program does not have, or no
    event for half of its operations or more); warn about devices and operations it leaves untimed."""
    count = lowered.devices
    if any(d >= count for d in durations):
        raise TraceFormatError(f"the profile has events of module {module.name!r} on devices "
                               f"{_ranges(list(durations))}, but the program has {count} (0..{count - 1}): "
                               "a profile of another program?", profile.source)
    missing = [d for d in range(count) if d not in durations]
    if missing:
        warnings.warn(f"{module.path}: devices {_ranges(missing)} of the program's {count} have no events in "
                      f"the profile {profile.source}: their nodes keep duration 0", JaxWarning, stacklevel=6)
    _check_operations(module, lowered, profile, {op for ops in durations.values() for op in ops})


def _check_operations(module: HloModule, lowered: Lowered, profile: Profile, seen: set[str]) -> None:
    """Refuse the profile when half of the operations or more have no event in it (names ``seen``
    on any device); warn about fewer."""
    untimed = sum(1 for op in lowered.ops
                  if op.hlo_op not in seen and not any(n in seen for n, _ in op.profile_parts))
    if untimed and 2 * untimed >= len(lowered.ops):
        raise TraceFormatError(f"{untimed} of the program's {len(lowered.ops)} operations have no event in the "
                               f"profile: a profile of another program of module {module.name!r}?", profile.source)
    if untimed:
        warnings.warn(f"{module.path}: {untimed} of {len(lowered.ops)} operations have no event in the profile "
                      f"{profile.source}: their nodes keep duration 0", JaxWarning, stacklevel=7)


def _check_options(module: HloModule, profile: Profile | None, step: int | None, device: str | None,
                   idle_gaps: bool | None) -> None:
    """Refuse an option given where it does nothing: ``step`` and ``idle_gaps`` without a
    profile, ``device`` with one."""
    if profile is None:
        given = [f"{k}={str(v).lower()}" for k, v in (("step", step), ("idle_gaps", idle_gaps)) if v is not None]
        if given:
            raise ConfigError(f"option {', '.join(given)} needs a profile (.xplane.pb or its "
                              "Chrome-trace JSON); without one the device model times the nodes", module.path)
    elif device is not None:
        raise ConfigError(f"option device={device} times compute without a profile; with "
                          f"{profile.source} the durations are measured", module.path)


def _warn(module: HloModule, lowered: Lowered) -> None:
    if lowered.unknown_targets:
        listed = ", ".join(f"{t!r} x{n}" for t, n in sorted(lowered.unknown_targets.items()))
        warnings.warn(f"{module.path}: custom-calls of unknown targets kept as compute nodes without FLOPs "
                      f"({listed}): communication inside them is not in the trace", JaxWarning, stacklevel=4)
    for note in lowered.notes:
        warnings.warn(f"{module.path}: {note}", JaxWarning, stacklevel=4)


def convert_module(module: HloModule, profile: Profile | None = None, devices: int | None = None,
                   step: int | None = None, unroll_limit: int = 1024, schedule: bool = True,
                   device: str | None = None, idle_gaps: bool | None = None) -> TraceSet:
    """The per-device TraceSet of a parsed module: durations from ``profile`` when given (with
    ``[idle]`` gaps unless ``idle_gaps`` is false), else from the roofline of ``device`` (a name
    of ``chakra_core.system.DEVICES``; default: the module's target, else h100). ``step`` and
    ``idle_gaps`` need a profile and ``device`` needs none (a ConfigError else)."""
    _check_options(module, profile, step, device, idle_gaps)
    if devices is not None:
        check_limit("npus", devices, "devices", module.path, error=ConfigError)
    lowered = lower(module, devices, unroll_limit, schedule)
    check_limit("npus", lowered.devices, "devices", module.path, error=ConfigError)
    timings, notes = _timings(module, lowered, profile, step, device, idle_gaps is not False)
    _warn(module, lowered)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([
        make_attr("source", module.path), make_attr("hlo_module", module.name),
        make_attr("devices", lowered.devices), make_attr("converter", "chakra-jax"),
    ])
    meta.attr.extend(make_attr("note", n) for n in [*lowered.notes, *notes])
    if lowered.unknown_targets:
        meta.attr.append(make_attr("unknown_custom_calls", ",".join(sorted(lowered.unknown_targets))))
    if profile is not None:
        meta.attr.extend([make_attr("profile", profile.source), make_attr("profile_kind", profile.kind),
                          make_attr("profile_steps", len(profile.selected(step))),
                          make_attr("profile_step_us", profile.step_time_us(step))])
    templates = Templates(lowered)
    ranks = []
    for d in range(lowered.devices):
        own = GlobalMetadata()
        own.CopyFrom(meta)
        own.attr.append(make_attr("device", d))
        ranks.append(DeviceRank(d, own, templates, timings[d]))
    return TraceSet(ranks, process_groups=lowered.groups, source=module.path)


class JaxFormat(InputFormat):
    """Compiled XLA programs (HLO text or HloModuleProto) and JAX profiles to per-device ETs."""

    description = "compiled XLA program (HLO text / .hlo.pb) + optional JAX profile to per-device ETs"
    per_rank = True
    options = {
        "devices": Option("int", None, "number of devices (default: replica_count x num_partitions "
                          "of the module)", minimum=1),
        "step": Option("int", None, "profiled execution whose durations to use (0 = first, -1 = last; "
                       "default: the mean over all; needs a profile)"),
        "unroll_limit": Option("int", 1024, "unroll while loops with a known trip count up to this many "
                               "iterations; longer or unknown loops become one summed node", minimum=0),
        "schedule": Option("bool", True, "run each device's instructions as one stream in the module's "
                           "order (async collectives overlap it); off: data dependencies only"),
        "device": Option("str", None, "without a profile, time compute on this device's roofline "
                         "(chakra_core.system.DEVICES; default: the module's target, else h100; refused "
                         "with a profile)"),
        "idle_gaps": Option("bool", None, "with a profile, the gaps between a device's ops become [idle] "
                            "nodes so that its longest path is the measured step (default: true; needs a "
                            "profile)"),
    }

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Parse the program (and profile) in ``paths`` and return the lazily generated device set."""
        program, profile_path = _split_inputs(expand_paths(paths, required="an HLO program"))
        module = load_module(program)
        profile = read_profile(profile_path, module.name) if profile_path else None
        opts = dict(options)
        unroll = opts.get("unroll_limit")
        schedule = opts.get("schedule")
        return convert_module(module, profile, opts.get("devices"), opts.get("step"),
                              1024 if unroll is None else unroll, True if schedule is None else schedule,
                              opts.get("device"), opts.get("idle_gaps"))
