"""HLO opcodes by how the converter treats them."""

from __future__ import annotations

from chakra_core import CommType

__all__ = ["COLLECTIVES", "FOLDED", "KNOWN"]

#: collectives (their ``-start`` forms too) and the Chakra collective each becomes;
#: collective-permute is point-to-point and handled apart.
COLLECTIVES = {
    "all-reduce": CommType.ALL_REDUCE,
    "all-gather": CommType.ALL_GATHER,
    "reduce-scatter": CommType.REDUCE_SCATTER,
    "all-to-all": CommType.ALL_TO_ALL,
    "ragged-all-to-all": CommType.ALL_TO_ALL,
    "collective-broadcast": CommType.BROADCAST,
    "collective-permute": CommType.ALL_TO_ALL,
}

#: instructions that do no work of their own: folded into the dependencies of their users.
FOLDED = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "partition-id", "replica-id",
    "after-all", "optimization-barrier", "domain", "add-dependency",
})

#: every opcode the converter knows (the others become generic compute nodes with a note).
KNOWN = frozenset(FOLDED | set(COLLECTIVES) | {
    "abs", "add", "and", "atan2", "batch-norm-grad", "batch-norm-inference", "batch-norm-training",
    "bitcast-convert", "broadcast", "call", "cbrt", "ceil", "cholesky", "clamp", "clz", "compare",
    "complex", "concatenate", "conditional", "convert", "convolution", "copy", "copy-start",
    "copy-done", "cos", "custom-call", "divide", "dot", "dynamic-reshape", "dynamic-slice",
    "dynamic-update-slice", "erf", "exponential", "exponential-minus-one", "fft", "floor", "fusion",
    "gather", "get-dimension-size", "imag", "infeed", "iota", "is-finite", "log", "log-plus-one",
    "logistic", "map", "maximum", "minimum", "multiply", "negate", "not", "or", "outfeed", "pad",
    "popcnt", "power", "real", "reduce", "reduce-precision", "reduce-window",
    "remainder", "reshape", "reverse", "rng", "rng-bit-generator", "rng-get-and-update-state",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "scatter", "select", "select-and-scatter",
    "set-dimension-size", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sin", "slice", "sort", "sqrt", "stochastic-convert", "subtract",
    "tan", "tanh", "top-k", "topk", "transpose", "triangular-solve", "while", "xor", "async-start",
    "async-update", "async-done", "all-reduce-start", "all-reduce-done", "all-gather-start",
    "all-gather-done", "collective-permute-start", "collective-permute-done",
})
