"""Pipeline schedules: the order of forward and backward passes of micro-batches on one stage.

Each schedule is a list of ``(phase, micro_batch, chunk)`` with phase ``"F"`` or ``"B"``
(stages and micro-batches from 0; ``chunk`` is the model chunk of the interleaved schedule,
0 otherwise).

- ``gpipe`` (Huang et al., 2019): every forward, micro-batches in order, then every backward in
  reverse order (the last micro-batch's backward starts where its forward ended).
- ``1f1b`` (PipeDream-Flush, Narayanan et al., 2021; Megatron-LM's non-interleaved schedule):
  stage ``s`` of ``p`` runs ``w = min(p - s - 1, m)`` warm-up forwards, then alternates one
  forward and one backward, ``m - w`` times, then the ``w`` remaining backwards; forwards and
  backwards each in micro-batch order.
- ``interleaved`` (Narayanan et al., 2021, section 2.2): each stage holds ``v`` model chunks
  (chunk ``c`` of stage ``s`` is virtual stage ``c * p + s``); micro-batches go in groups of
  ``p``: the k-th forward of a stage is chunk ``(k // p) % v`` of micro-batch
  ``(k // (p * v)) * p + k % p``, its k-th backward the same with chunk ``v - 1 - (k // p) % v``;
  warm-up ``min((p - s - 1) * 2 + (v - 1) * p, m * v)`` forwards (all ``m * v`` when ``m == p``,
  as Megatron-LM does), then one forward and one backward alternately, then the remaining
  backwards.
"""

from __future__ import annotations

__all__ = ["schedule", "Pass"]

Pass = tuple[str, int, int]


def schedule(name: str, stage: int, stages: int, micro_batches: int, chunks: int = 1) -> list[Pass]:
    """The passes of ``stage`` under schedule ``name`` (see the module docstring)."""
    if name == "gpipe":
        return [("F", i, 0) for i in range(micro_batches)] + [("B", i, 0) for i in reversed(range(micro_batches))]
    if name == "1f1b":
        forwards = [("F", i, 0) for i in range(micro_batches)]
        backwards = [("B", i, 0) for i in range(micro_batches)]
        warmup = min(stages - stage - 1, micro_batches)
    else:
        total = micro_batches * chunks
        forwards = [_virtual("F", k, stages, chunks) for k in range(total)]
        backwards = [_virtual("B", k, stages, chunks) for k in range(total)]
        warmup = total if micro_batches == stages else min((stages - stage - 1) * 2 + (chunks - 1) * stages, total)
    return _one_forward_one_backward(forwards, backwards, warmup)


def _virtual(phase: str, k: int, stages: int, chunks: int) -> Pass:
    """The k-th forward or backward of the interleaved schedule."""
    chunk = (k // stages) % chunks
    if phase == "B":
        chunk = chunks - 1 - chunk
    return phase, (k // (stages * chunks)) * stages + k % stages, chunk


def _one_forward_one_backward(forwards: list[Pass], backwards: list[Pass], warmup: int) -> list[Pass]:
    out = forwards[:warmup]
    steady = len(forwards) - warmup
    for i in range(steady):
        out += [forwards[warmup + i], backwards[i]]
    return out + backwards[steady:]
