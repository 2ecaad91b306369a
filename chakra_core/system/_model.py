"""Dataclasses of the system description: network dimensions, collectives, memory, compute.

Field names follow ASTRA-sim's configuration keys with ``-`` written as ``_`` (``npus_count``,
``endpoint_delay``, ``all_reduce_implementation`` ...), so that mapping to and from its files is
one-to-one.  Units: bandwidth of network links in GB/s with GB = 2^30 bytes (as ASTRA-sim's
analytical network reads it); ``local_mem_bw``, ``remote_mem_bw`` and ``peak_perf`` in decimal
GB/s and TFLOPS (1e9, 1e12, as ASTRA-sim's system layer reads them); times in ns.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from math import prod
from typing import Any

from chakra_core.base._errors import ConfigError

__all__ = [
    "TOPOLOGIES",
    "COLLECTIVE_KINDS",
    "ALGORITHMS",
    "SCHEDULING_POLICIES",
    "COLLECTIVE_OPTIMIZATIONS",
    "MEMORY_TYPES",
    "Dimension",
    "RemoteMemory",
    "SystemDescription",
    "algorithm_base",
    "roofline_ns",
]

#: network topologies of one dimension (ASTRA-sim analytical names).
TOPOLOGIES = ("Ring", "FullyConnected", "Switch")
#: collective kinds with an implementation list, in ASTRA-sim's key spelling.
COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
#: implementation names accepted per dimension (``directN`` / ``oneDirectN``: N = window).
ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree",
              "oneRing", "oneDirect", "oneHalvingDoubling")
SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
MEMORY_TYPES = ("NO_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION", "PER_NPU_MEMORY_EXPANSION",
                "MEMORY_POOL")

_DIRECT_RE = re.compile(r"^(one)?[dD]irect(\d+)?$")


def roofline_ns(num_ops: int, tensor_size: int, peak_tflops: float, local_mem_bw: float) -> int:
    """ASTRA-sim's roofline time of a compute node, in whole ns (truncated):
    ``num_ops / min(local_mem_bw * 1e9 * num_ops / tensor_size, peak_tflops * 1e12)`` seconds,
    in ASTRA-sim's floating-point order (operational intensity first, then times the bandwidth
    in bytes/s; seconds times 1e9) so that the truncation agrees to the ns.  ``tensor_size`` 0:
    compute-bound; ``num_ops`` <= 0: 0 ns."""
    if not (peak_tflops > 0 and local_mem_bw > 0):  # nan too
        raise ValueError(f"roofline: peak {peak_tflops!r} TFLOPS and memory bandwidth {local_mem_bw!r} GB/s must "
                         "be above 0")
    if num_ops <= 0:
        return 0
    peak = peak_tflops * 1e12
    perf = peak if tensor_size <= 0 else min(local_mem_bw * 1e9 * (num_ops / tensor_size), peak)
    return int(num_ops / perf * 1e9)


def _check_default_network(npus: Any, topology: Any, bandwidth: Any, latency: Any) -> None:
    """Refuse a default network no system file could describe (a ConfigError naming the value)."""
    if not isinstance(npus, int) or isinstance(npus, bool) or npus < 1:
        raise ConfigError(f"default network: {npus!r} NPUs: give a whole number of 1 or more")
    if topology not in TOPOLOGIES:
        raise ConfigError(f"default network: topology {topology!r}: expected one of {', '.join(TOPOLOGIES)}")
    if not 0 < bandwidth < float("inf") or not 0 <= latency < float("inf"):
        raise ConfigError(f"default network: bandwidth {bandwidth!r} GB/s must be above 0 and latency {latency!r} ns "
                         "0 or more, both finite")


def algorithm_base(name: str) -> tuple[str, int | None]:
    """Split an implementation name into its algorithm and window.

    ``"direct8"`` gives ``("direct", 8)``; ``"oneRing"`` gives ``("ring", None)`` (the ``one``
    variants time the same as the plain ones in the analytical model); ``"ring"`` gives
    ``("ring", None)``.
    """
    m = _DIRECT_RE.match(name)
    if m:
        return "direct", int(m.group(2)) if m.group(2) else None
    base = name[3].lower() + name[4:] if name.startswith("one") and len(name) > 3 else name
    return base, None


@dataclass(frozen=True)
class Dimension:
    """One network dimension (dimension 0 is innermost).

    ``bandwidth`` is GB/s per link and direction with GB = 2^30 bytes; ``latency`` is ns per link.
    ``npus_count`` 0 (``npus_count: auto`` in our YAML) is a free dimension, sized to the trace set
    by :meth:`SystemDescription.fit`.
    """

    topology: str
    npus_count: int
    bandwidth: float
    latency: float

    @property
    def bytes_per_ns(self) -> float:
        """Link bandwidth in bytes per ns (``bandwidth * 2**30 / 1e9``)."""
        return self.bandwidth * (1 << 30) / 1e9

    @property
    def hops(self) -> int:
        """Links between two ring neighbours: 2 through a Switch, else 1."""
        return 2 if self.topology == "Switch" else 1


@dataclass(frozen=True)
class RemoteMemory:
    """The remote-memory model (ASTRA-sim's ``memory.json``).

    ``remote_mem_latency`` in ns, ``remote_mem_bw`` in decimal GB/s; a load or store of ``s``
    bytes takes ``remote_mem_latency + s / (remote_mem_bw * 1e9) s``.  ``num_nodes`` and
    ``num_npus_per_node`` describe PER_NODE_MEMORY_EXPANSION (one memory per node, requests
    serialized per node); MEMORY_POOL serializes all requests; PER_NPU_MEMORY_EXPANSION gives
    each NPU its own.
    """

    memory_type: str = "NO_MEMORY_EXPANSION"
    remote_mem_latency: float = 0.0
    remote_mem_bw: float = 0.0
    num_nodes: int = 0
    num_npus_per_node: int = 0


@dataclass
class SystemDescription:
    """Everything a simulator or an exporter needs to know about the machine.

    ``dimensions`` may be empty when no network was given: call :meth:`with_default_network`.
    ``*_implementation`` hold one algorithm name per dimension (see :data:`ALGORITHMS`); a list
    shorter than ``dimensions`` restricts that collective to the first dimensions, as in
    ASTRA-sim (a warning is recorded).  ``endpoint_delay`` and ``local_reduction_delay`` are ns,
    ``local_mem_bw`` decimal GB/s, ``peak_perf`` TFLOPS.  ``comm_groups`` maps a decimal group
    name ("1", "2", ...) to its ranks.  ``warnings`` lists questionable but accepted settings;
    ``custom_implementations`` maps a collective kind (``all-reduce`` ...) to the path prefix of its
    custom implementation, one Chakra ET per rank (``PREFIX.<rank>.et``, ASTRA-sim's
    ``*-implementation-custom`` keys, spelt ``*-implementation-chakra`` before June 2025).
    ``sources`` names the file each part came from (``system``, ``network``, ``memory``,
    ``comm_groups``).
    """

    dimensions: tuple[Dimension, ...] = ()
    all_reduce_implementation: tuple[str, ...] = ()
    all_gather_implementation: tuple[str, ...] = ()
    reduce_scatter_implementation: tuple[str, ...] = ()
    all_to_all_implementation: tuple[str, ...] = ()
    preferred_dataset_splits: int = 4
    active_chunks_per_dimension: int = 1
    collective_optimization: str = "localBWAware"
    scheduling_policy: str = "LIFO"
    endpoint_delay: int = 10
    local_reduction_delay: int = 1
    local_mem_bw: float = 50.0
    roofline_enabled: bool = False
    peak_perf: float = 0.0
    replay_only: bool = False
    trace_enabled: bool = False
    remote_memory: RemoteMemory = field(default_factory=RemoteMemory)
    comm_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    custom_implementations: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def npus(self) -> int:
        """Total NPU count: the product of ``npus_count`` over dimensions (0 without a network)."""
        return prod(d.npus_count for d in self.dimensions) if self.dimensions else 0

    @property
    def compute_model(self) -> str:
        """``"roofline"`` when roofline timing is on, else ``"replay"`` (trace durations)."""
        return "roofline" if self.roofline_enabled else "replay"

    def implementation(self, kind: str) -> tuple[str, ...]:
        """Implementation list of collective ``kind`` (``all-reduce``, ``all_reduce`` ...)."""
        name = str(kind).replace("_", "-").lower()
        if name not in COLLECTIVE_KINDS:
            raise ConfigError(f"no collective {kind!r}: expected one of {', '.join(COLLECTIVE_KINDS)}")
        return getattr(self, name.replace("-", "_") + "_implementation")

    def coords(self, rank: int) -> tuple[int, ...]:
        """Coordinates of ``rank`` per dimension (dimension 0 innermost); ConfigError for a rank
        outside the network (or a network with a free dimension not sized yet)."""
        if not 0 <= rank < self.npus:
            from chakra_core.base._errors import ConfigError

            raise ConfigError(f"rank {rank} is outside the network's {self.npus} NPUs", self.sources.get("network"))
        out = []
        for d in self.dimensions:
            out.append(rank % d.npus_count)
            rank //= d.npus_count
        return tuple(out)

    def rank_of(self, coords: tuple[int, ...]) -> int:
        """The rank at ``coords`` (inverse of :meth:`coords`); ConfigError for coordinates
        outside the network's dimensions."""
        if len(coords) != len(self.dimensions) or any(not 0 <= c < d.npus_count
                                                          for c, d in zip(coords, self.dimensions)):
            from chakra_core.base._errors import ConfigError

            raise ConfigError(f"coordinates {tuple(coords)} are outside the network's dimensions "
                              f"{tuple(d.npus_count for d in self.dimensions)}", self.sources.get("network"))
        rank, stride = 0, 1
        for c, d in zip(coords, self.dimensions):
            rank += c * stride
            stride *= d.npus_count
        return rank

    @property
    def free_dimension(self) -> int | None:
        """The index of the dimension sized to the trace set (``npus_count: auto``), or None."""
        return next((i for i, d in enumerate(self.dimensions) if d.npus_count == 0), None)

    def fit(self, npus: int) -> SystemDescription:
        """A copy whose free dimension (``npus_count: auto``) makes the network ``npus`` NPUs;
        ``self`` when it has none.  Raises ConfigError, naming both counts, when the other
        dimensions' NPUs do not divide ``npus``."""
        free = self.free_dimension
        if free is None:
            return self
        fixed = prod(d.npus_count for i, d in enumerate(self.dimensions) if i != free)
        if npus % fixed or npus < fixed:
            from chakra_core.base._errors import ConfigError

            raise ConfigError(f"the network's fixed dimensions have {fixed} NPUs, which does not divide the trace "
                              f"set's {npus} ranks: make the set a multiple of {fixed} ranks, or give a network "
                              "whose fixed dimensions divide it", self.sources.get("network"),
                              f"network[{free}]")
        dims = tuple(replace(d, npus_count=npus // fixed) if i == free else d for i, d in enumerate(self.dimensions))
        return replace(self, dimensions=dims)

    def sample_settings_note(self) -> str | None:
        """The note that says the description's system settings are ASTRA-sim's sample ones (no
        system file, or files with other parts alone), or None when a file gave them."""
        if "system" in self.sources:
            return None
        files = sorted(set(self.sources.values()))
        what = f"no system settings in {', '.join(files)}" if files else "no system file given"
        return (f"{what}: ASTRA-sim's sample settings (ring collectives on every dimension, "
                f"{self.preferred_dataset_splits} dataset splits, {self.scheduling_policy}, local-mem-bw "
                f"{self.local_mem_bw:g} GB/s, compute replayed from the trace)")

    def with_default_network(self, npus: int, topology: str = "Ring", bandwidth: float = 50.0,
                             latency: float = 500.0) -> SystemDescription:
        """A copy completed for running: the free dimension sized to ``npus`` NPUs (:meth:`fit`),
        one dimension of ``npus`` NPUs (``topology``, ``bandwidth`` GB/s, ``latency`` ns) when no
        network is set, and ``ring`` on every dimension for each collective whose implementation
        list is empty (ASTRA-sim's sample configurations use ring everywhere).  Returns ``self``
        when nothing is missing.
        """
        fitted = self.fit(npus)
        if fitted is not self:
            return fitted.with_default_network(npus, topology, bandwidth, latency)
        if not self.dimensions:
            _check_default_network(npus, topology, bandwidth, latency)
        dims = self.dimensions or (Dimension(topology, npus, bandwidth, latency),)
        impl: dict[str, Any] = {}
        for kind in COLLECTIVE_KINDS:
            key = kind.replace("-", "_") + "_implementation"
            if not getattr(self, key):
                impl[key] = ("ring",) * len(dims)
        if dims is self.dimensions and not impl:
            return self
        return replace(self, dimensions=dims, **impl)

    def to_dict(self) -> dict[str, Any]:
        """Plain data in our YAML layout (readable back by :func:`load_system`)."""
        d = asdict(self)
        if self.dimensions:  # none: the default network, which an empty list would not mean
            d["network"] = [{**asdict(x), "npus_count": x.npus_count or "auto"} for x in self.dimensions]
        del d["dimensions"], d["warnings"], d["sources"]
        d["comm_groups"] = {k: list(v) for k, v in self.comm_groups.items()}
        for kind, prefix in d.pop("custom_implementations").items():
            d[kind.replace("-", "_") + "_implementation_custom"] = prefix
        for kind in COLLECTIVE_KINDS:
            key = kind.replace("-", "_") + "_implementation"
            d[key] = list(d[key])
        return d
