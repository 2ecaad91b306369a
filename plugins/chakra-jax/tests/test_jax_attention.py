"""FLOPs of cuDNN fused-attention custom-calls from the three places their dimensions can come from.

The configurations are those of published modules: the backend config of XLA's
``gpu_fused_mha_test.cc`` (tensorflow/tensorflow, ``third_party/xla/xla/service/gpu/tests/``,
Apache-2.0): q, k, v ``bf16[4,1024,4,64]`` with ``intermediate_tensor_shape`` ``[4,4,1024,1024]``
and ``bmm1_dot_dimension_numbers`` batch ``{0,2}``, contracting ``{3}``; and a config holding only
``fmha_scale``, ``mask_type`` and ``is_flash_attention`` (as StableHLO builders write it) for
``[2,2048,12,64]``.  The closed forms are counted by hand: a GEMM over the kept (query, key)
pairs costs 2 x pairs x head dimension per batch entry and head."""

from __future__ import annotations

from chakra_jax.attention import fmha_flops, is_fmha

Q = K = (4, 1024, 4, 64)
BMM1 = {"lhs_contracting_dimensions": ["3"], "rhs_contracting_dimensions": ["3"],
        "lhs_batch_dimensions": ["0", "2"], "rhs_batch_dimensions": ["0", "2"]}
SCORE = {"element_type": "BF16", "dimensions": ["4", "4", "1024", "1024"]}
FULL_FORWARD = 2 * 2 * (4 * 4) * 1024 * 1024 * 64


def test_targets():
    assert is_fmha("__cudnn$fmhaSoftmax") and is_fmha("__cudnn$fmhaScaleBiasMaskSoftmaxDropoutBackward")
    assert not is_fmha("__cudnn$convForward") and not is_fmha("__cublas$gemm")


def test_score_shape_and_bmm1_numbers_agree():
    with_score = {"intermediate_tensor_shape": SCORE, "bmm1_dot_dimension_numbers": BMM1, "mask_type": "PADDING"}
    assert fmha_flops("__cudnn$fmhaSoftmax", with_score, Q, K) == FULL_FORWARD
    assert fmha_flops("__cudnn$fmhaSoftmax", {"bmm1_dot_dimension_numbers": BMM1}, Q, K) == FULL_FORWARD
    # the backward recomputes QK^T, then dV, dP, dQ, dK: 5 GEMMs against the forward's 2
    assert fmha_flops("__cudnn$fmhaSoftmaxBackward", with_score, Q, K) == FULL_FORWARD * 5 // 2


def test_default_layout_and_causal_mask():
    config = {"fmha_scale": 0.125, "mask_type": "CAUSAL", "is_flash_attention": True}
    q = k = (2, 2048, 12, 64)  # [B, S, H, D]
    assert fmha_flops("__cudnn$fmhaSoftmax", config, q, k) == 2 * 2 * (2 * 12) * (2048 * 2049 // 2) * 64


def test_grouped_query_heads_from_the_query():
    # 32 query heads over 8 key/value heads: the GEMMs run per query head
    q, k = (1, 512, 32, 128), (1, 512, 8, 128)
    assert fmha_flops("__cudnn$fmhaSoftmax", {}, q, k) == 2 * 2 * 32 * 512 * 512 * 128


def test_sliding_window():
    # causal over 8 positions with a window of 3 keys: queries see 1, 2, 3, 3, 3, 3, 3, 3 keys
    config = {"mask_type": "CAUSAL", "sliding_window_length": 3}
    assert fmha_flops("__cudnn$fmhaSoftmax", config, (1, 8, 1, 16), (1, 8, 1, 16)) == 2 * 2 * 21 * 16
    # a query shorter than the keys (decoding against a cache) is aligned to the last keys
    assert fmha_flops("__cudnn$fmhaSoftmax", {"mask_type": "CAUSAL"}, (1, 2, 1, 16), (1, 8, 1, 16)) \
        == 2 * 2 * (7 + 8) * 16


def test_operands_that_do_not_say():
    assert fmha_flops("__cudnn$fmhaSoftmax", {}, (), ()) == 0
    assert fmha_flops("__cudnn$fmhaSoftmax", {}, (64, 64), (64, 64)) == 0
