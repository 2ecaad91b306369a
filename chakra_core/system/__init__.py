"""The system description: the machine a trace is simulated, exported or emulated on.

Shared by the simulator backend, the ASTRA-sim exporter and the emulator.  Core code: it needs
only the standard library and PyYAML.

Public API
----------
:func:`load_system(system=None, network=None, memory=None, comm_groups=None, algorithms=(), strict=None)`
    Build a :class:`SystemDescription` from files (paths or parsed mappings).  Each file is
    recognised by its content: our YAML (any part of the description, see below), ASTRA-sim's
    ``system.json``, ``network.yml``, ``memory.json`` or comm-group JSON.  ASTRA-sim files get
    ASTRA-sim's defaults; its pitfalls raise :class:`chakra_core.ConfigError` naming the
    file and key (missing ``preferred-dataset-splits``, ``endpoint-delay`` 0, group key "0",
    network lists of unequal length, ``doubleBinaryTree`` for a collective other than
    all-reduce ...) or are recorded in ``SystemDescription.warnings`` (implementation lists
    shorter than the network, unset ``scheduling-policy`` / ``collective-optimization``).  A
    key of an ASTRA-sim file that ASTRA-sim does not read is a warning naming the closest known
    key, an error with ``strict`` (default: the environment variable ``CHAKRA_STRICT_KEYS``).
    Custom collectives: ``*-implementation-custom`` (ASTRA-sim since June 2025) or
    ``*-implementation-chakra``, a relative ET prefix looked for from the working directory,
    then from the file's folder.
:class:`SystemDescription`
    ``dimensions`` (tuple of :class:`Dimension`), ``all_reduce_implementation``,
    ``all_gather_implementation``, ``reduce_scatter_implementation``,
    ``all_to_all_implementation`` (one algorithm name per dimension),
    ``preferred_dataset_splits``, ``active_chunks_per_dimension``, ``collective_optimization``
    (baseline | localBWAware), ``scheduling_policy`` (LIFO | FIFO | EXPLICIT),
    ``endpoint_delay`` (ns), ``local_reduction_delay`` (ns), ``local_mem_bw`` (GB/s, 1e9),
    ``roofline_enabled`` / ``compute_model`` (replay | roofline), ``peak_perf`` (TFLOPS),
    ``replay_only``, ``trace_enabled``, ``remote_memory`` (:class:`RemoteMemory`),
    ``comm_groups`` ({"1": (ranks...)}), ``warnings``, ``sources``; methods ``npus``,
    ``implementation(kind)``, ``coords(rank)``, ``rank_of(coords)``,
    ``with_default_network(npus)``, ``free_dimension``, ``fit(npus)`` (the ``npus_count: auto``
    dimension sized to a trace set), ``sample_settings_note()`` (the note a command prints when
    the system settings are ASTRA-sim's sample ones, None when a file gave them), ``to_dict()``.
:class:`Dimension`
    ``topology`` (Ring | FullyConnected | Switch), ``npus_count``, ``bandwidth`` (GB/s per link
    and direction, GB = 2^30 bytes), ``latency`` (ns per link); ``bytes_per_ns``, ``hops``.
:class:`RemoteMemory`
    ``memory_type`` (NO_MEMORY_EXPANSION | PER_NODE_MEMORY_EXPANSION | PER_NPU_MEMORY_EXPANSION
    | MEMORY_POOL), ``remote_mem_latency`` (ns), ``remote_mem_bw`` (GB/s, 1e9), ``num_nodes``,
    ``num_npus_per_node``.
:data:`SYSTEM_OPTIONS`
    The options (``system``, ``network``, ``memory``, ``comm_groups``: file paths) by which a
    backend takes a description, declared once: ``options = {**SYSTEM_OPTIONS, ...}``.
:func:`system_from_options(options, algorithms=())`
    :func:`load_system` of the files those options name.
:func:`algorithm_base(name)`
    ``"direct8"`` -> ``("direct", 8)``, ``"oneRing"`` -> ``("ring", None)``.
:func:`roofline_ns(num_ops, tensor_size, peak_tflops, local_mem_bw)`
    ASTRA-sim's roofline time of a compute node in whole ns (truncated, as ASTRA-sim does).
Devices: :class:`Device` (``peak_tflops`` per data type, ``memory_gbs``; ``roofline_ns``,
    ``roofline_micros``, ``compute_system``), :data:`DEVICES` (the built-in table),
    :func:`get_device(name, devices=None)`, :func:`load_devices(path)` (a YAML file adds devices),
    :func:`dtype_of_bytes`, :data:`DTYPES`.
Constants: :data:`TOPOLOGIES`, :data:`ALGORITHMS`, :data:`COLLECTIVE_KINDS`,
:data:`SCHEDULING_POLICIES`, :data:`COLLECTIVE_OPTIMIZATIONS`, :data:`MEMORY_TYPES`.

Our YAML
--------
The keys of ASTRA-sim's ``system.json`` (``-`` or ``_``), defaulting to ASTRA-sim's sample
configuration (splits 4, active chunks 1, endpoint delay 10 ns, local-mem-bw 50 GB/s, LIFO,
localBWAware), plus ``network`` (a list of ``{topology, npus_count, bandwidth, latency}``),
``compute`` (``replay`` | ``roofline`` | ``{model, peak-perf, local-mem-bw}``),
``remote-memory`` (the keys of ``memory.json``) and ``comm-groups``.  An implementation may be
one name for every dimension.  Unknown keys are errors.  See docs/system.md.
"""

from chakra_core.system._devices import DEVICES, DTYPES, Device, dtype_of_bytes, get_device, load_devices
from chakra_core.system._load import check_system, load_system, read_config, sniff
from chakra_core.system._model import (
    ALGORITHMS,
    COLLECTIVE_KINDS,
    COLLECTIVE_OPTIMIZATIONS,
    MEMORY_TYPES,
    SCHEDULING_POLICIES,
    TOPOLOGIES,
    Dimension,
    RemoteMemory,
    SystemDescription,
    algorithm_base,
    roofline_ns,
)
from chakra_core.system._options import SYSTEM_OPTIONS, system_from_options

__all__ = [
    "load_system",
    "SYSTEM_OPTIONS",
    "system_from_options",
    "check_system",
    "read_config",
    "sniff",
    "SystemDescription",
    "Dimension",
    "RemoteMemory",
    "algorithm_base",
    "roofline_ns",
    "TOPOLOGIES",
    "ALGORITHMS",
    "COLLECTIVE_KINDS",
    "SCHEDULING_POLICIES",
    "COLLECTIVE_OPTIMIZATIONS",
    "MEMORY_TYPES",
    "Device",
    "DEVICES",
    "DTYPES",
    "get_device",
    "load_devices",
    "dtype_of_bytes",
]
