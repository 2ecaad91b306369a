"""The parallelism modes of ASTRA-sim 1.0 text workloads and the comm-type names they use."""

from __future__ import annotations

from chakra_core import CommType

__all__ = ["MODES", "COMM_TYPES", "GROUP_SUFFIXES", "HYBRID_MODES", "TRANSFORMER_MODES", "DLRM_MODES",
           "RECOMPUTE_MODE"]

#: the one mode that recomputes forward passes at ``checkpoint_initiates`` (ASTRA-sim 1.0)
RECOMPUTE_MODE = "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
TRANSFORMER_MODES = ("HYBRID_TRANSFORMER", RECOMPUTE_MODE)
DLRM_MODES = ("HYBRID_DLRM", "HYBRID_DLRM_ENHANCED")
#: modes whose forward/input-gradient collectives run in model-parallel groups and whose
#: weight-gradient collectives run in data-parallel groups.
HYBRID_MODES = ("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA") + TRANSFORMER_MODES
MODES = ("MICRO", "DATA", "MODEL") + HYBRID_MODES + DLRM_MODES

#: comm-type token of the file -> Chakra CollectiveCommType; ``NONE`` means no collective.
COMM_TYPES = {
    "ALLREDUCE": CommType.ALL_REDUCE,
    "ALLTOALL": CommType.ALL_TO_ALL,
    "ALLGATHER": CommType.ALL_GATHER,
    "REDUCESCATTER": CommType.REDUCE_SCATTER,
}
#: SimAI/AICB group suffixes of a comm type (``ALLGATHER_DP_EP``) in the transformer modes: the
#: collective runs in the rank's expert-parallel group or its data-parallel-within-expert group.
GROUP_SUFFIXES = ("_DP_EP", "_EP")
