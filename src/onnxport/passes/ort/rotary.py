"""The rotary position embedding around an attention's query/key, recognised so that
``com.microsoft.GroupQueryAttention`` can apply it itself (``do_rotary=1``).

The standard graph of transformers' ``apply_rotary_pos_emb`` (rotate-half form, opset ≥ 23) is::

    freqs = Cast(Unsqueeze(position_ids, 2)) * inv_freq         # [B, S, D/2], inv_freq a constant
    emb   = Concat(freqs, freqs, axis=-1)                        # [B, S, D]
    cos   = Unsqueeze(Cos(emb) [* attention_scaling], 1)         # [B, 1, S, D]
    sin   = Unsqueeze(Sin(emb) [* attention_scaling], 1)
    x_rot = x * cos + Concat(-x[..., D/2:], x[..., :D/2], axis=-1) * sin   # x: [B, heads, S, D]

(transformers ``models/llama/modeling_llama.py``: ``LlamaRotaryEmbedding.forward``,
``rotate_half``, ``apply_rotary_pos_emb``). onnxruntime's kernel computes the same rotation from
``cos_cache``/``sin_cache`` of shape ``(max_position_embeddings, D/2)`` (ContribOperators.md,
GroupQueryAttention and RotaryEmbedding; onnxruntime-genai's builder fills them the same way in
``make_rotary_embedding_caches``), which :func:`caches` builds from the graph's ``inv_freq``
constant, folding a constant ``attention_scaling`` in.

Only the exact pattern is matched: full rotary (``len(inv_freq) == D/2``), rotate-half (not
interleaved), a weight-free constant ``inv_freq`` (dynamic/long-rope variants compute it in the
graph and stay unfused), positions taken from a graph input.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import producer


@dataclasses.dataclass(frozen=True)
class Rotary:
    """A matched rotary embedding of one tensor.

    Attributes:
        x: The BNSH tensor before the rotation (``[B, heads, S, D]``).
        cos: The ``[B, 1, S, D]`` cosine value the graph multiplies ``x`` with.
        sin: The ``[B, 1, S, D]`` sine value.
        inv_freq: The ``[D/2]`` float32 inverse frequencies (radians per position).
        scale: The constant factor on cos and sin (transformers' ``attention_scaling``, 1.0 mostly).
        positions: The graph input the angles come from (``position_ids``).
    """

    x: ir.Value
    cos: ir.Value
    sin: ir.Value
    inv_freq: np.ndarray
    scale: float
    positions: ir.Value


def _const(value: ir.Value | None) -> np.ndarray | None:
    if value is None:
        return None
    tensor = ir.convenience.get_const_tensor(value)
    return None if tensor is None else tensor.numpy()


def _ints(value: ir.Value | None) -> list[int] | None:
    array = _const(value)
    if array is None or array.dtype.kind not in "iu":
        return None
    return [int(v) for v in array.reshape(-1)]


def _last_axis(values: list[int] | None, rank: int) -> bool:
    return values is not None and len(values) == 1 and values[0] in (rank - 1, -1)


def _half(value: ir.Value | None, head_size: int) -> tuple[ir.Value, int] | None:
    """``Slice(x, [start], [end], [last axis])`` of one half: ``(x, start)``."""
    node = producer(value, "Slice")
    if node is None or len(node.inputs) < 4:
        return None
    starts, ends, axes = (_ints(node.inputs[i]) for i in (1, 2, 3))
    steps = _ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if starts is None or ends is None or steps != [1] or not _last_axis(axes, 4):
        return None
    half = head_size // 2
    if (starts, ends) == ([0], [half]):
        return node.inputs[0], 0  # type: ignore[return-value]
    if starts == [half] and ends[0] >= head_size:
        return node.inputs[0], half  # type: ignore[return-value]
    return None


def _rotate_half(value: ir.Value, head_size: int) -> ir.Value | None:
    """``Concat(Neg(x[..., D/2:]), x[..., :D/2], axis=-1)`` → ``x``."""
    concat = producer(value, "Concat")
    if concat is None or len(concat.inputs) != 2:
        return None
    axis = concat.attributes.get("axis")
    if axis is None or axis.as_int() not in (3, -1):
        return None
    neg = producer(concat.inputs[0], "Neg")
    second = _half(neg.inputs[0], head_size) if neg is not None else None
    first = _half(concat.inputs[1], head_size)
    if second is None or first is None or second[1] == 0 or first[1] != 0:
        return None
    return first[0] if first[0] is second[0] else None


def _trig(value: ir.Value | None, op_type: str) -> tuple[ir.Value, float] | None:
    """``Unsqueeze(Cos(emb) [* c], 1)`` → ``(emb, c)`` (op_type ``Cos`` or ``Sin``)."""
    unsqueeze = producer(value, "Unsqueeze")
    if unsqueeze is None or _ints(unsqueeze.inputs[1]) != [1]:
        return None
    inner = unsqueeze.inputs[0]
    scale = 1.0
    mul = producer(inner, "Mul")
    if mul is not None:
        for a, b in (mul.inputs, mul.inputs[::-1]):
            c = _const(b)
            if c is not None and c.size == 1 and producer(a, op_type) is not None:
                inner, scale = a, float(c.reshape(()))
                break
        else:
            return None
    trig = producer(inner, op_type)
    return None if trig is None else (trig.inputs[0], scale)  # type: ignore[return-value]


def _angles(emb: ir.Value, head_size: int) -> tuple[np.ndarray, ir.Value] | None:
    """``Concat(f, f, axis=-1)``, ``f = Cast(Unsqueeze(position_ids, 2)) * inv_freq`` →
    ``(inv_freq, position_ids)``."""
    concat = producer(emb, "Concat")
    if concat is None or len(concat.inputs) != 2 or concat.inputs[0] is not concat.inputs[1]:
        return None
    axis = concat.attributes.get("axis")
    if axis is None or axis.as_int() not in (2, -1):
        return None
    mul = producer(concat.inputs[0], "Mul")
    if mul is None:
        return None
    for a, b in (mul.inputs, mul.inputs[::-1]):
        inv_freq = _const(b)
        if inv_freq is None or inv_freq.dtype != np.float32 or inv_freq.size != head_size // 2:
            continue
        if inv_freq.shape[-1] != head_size // 2:
            continue
        cast = producer(a, "Cast")
        unsqueeze = producer(cast.inputs[0] if cast is not None else a, "Unsqueeze")
        if unsqueeze is None or _ints(unsqueeze.inputs[1]) not in ([2], [-1]):
            continue
        positions = unsqueeze.inputs[0]
        if positions is None or not positions.is_graph_input():
            continue
        return inv_freq.reshape(-1).astype(np.float32), positions
    return None


def match_rotary(value: ir.Value | None, head_size: int) -> Rotary | None:
    """The rotary embedding producing ``value`` (``[B, heads, S, head_size]``), or ``None``.

    Matches ``Add(Mul(x, cos), Mul(rotate_half(x), sin))`` in any operand order, with cos and sin
    computed from the same angles (see the module docstring).
    """
    add = producer(value, "Add")
    if add is None or head_size % 2:
        return None
    muls = [producer(v, "Mul") for v in add.inputs]
    if any(m is None for m in muls):
        return None
    for plain, rotated in (muls, muls[::-1]):
        assert plain is not None and rotated is not None
        for x, cos in (plain.inputs, plain.inputs[::-1]):
            for rot, sin in (rotated.inputs, rotated.inputs[::-1]):
                if x is None or rot is None or _rotate_half(rot, head_size) is not x:
                    continue
                cos_part, sin_part = _trig(cos, "Cos"), _trig(sin, "Sin")
                if cos_part is None or sin_part is None or cos_part != sin_part:
                    continue
                angles = _angles(cos_part[0], head_size)
                if angles is None:
                    continue
                assert cos is not None and sin is not None
                return Rotary(x, cos, sin, angles[0], cos_part[1], angles[1])
    return None


def caches(rotary: Rotary, max_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos_cache``, ``sin_cache``: float32 ``(max_positions, D/2)``,
    ``cos(p * inv_freq) * scale`` for positions ``p = 0 .. max_positions - 1``.

    Computed in float32 as transformers does (``inv_freq @ position_ids`` in float32, then
    ``cos``/``sin``, then ``* attention_scaling``).
    """
    positions = np.arange(max_positions, dtype=np.float32)[:, None]
    angles = positions * rotary.inv_freq[None, :]
    scale = np.float32(rotary.scale)
    return (np.cos(angles) * scale).astype(np.float32), (np.sin(angles) * scale).astype(np.float32)
