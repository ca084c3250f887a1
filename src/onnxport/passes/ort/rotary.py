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

Two more spellings of the same rotation are matched:

* **Partial rotary** (Phi-2, Phi-3, Nemotron, GPT-NeoX, StableLM: transformers' ``q_rot, q_pass =
  q[..., :rotary_dim], q[..., rotary_dim:]`` then ``cat(rotated, q_pass)``)::

      Concat(rotation(Slice(x, 0, R)), Slice(x, R, D), axis=-1)    # R = rotary_dim ≤ D

  with ``R == D`` the first Slice is folded away and the second is empty (Phi-3). The kernel
  rotates the first ``R`` of each head's ``D`` values when its caches are ``(max_positions, R/2)``
  (onnxruntime's ``rotary_dim = cos_cache.shape[1] * 2``; checked against numpy on onnxruntime
  1.31, session 44; the builder's Phi-2 and Nemotron graphs rely on it too).
* **Split halves** (gpt-oss: ``x1, x2 = torch.chunk(x, 2, dim=-1)``, ``cat(x1·cos − x2·sin,
  x2·cos + x1·sin)``, cos and sin of the ``D/2`` angles without the duplicating Concat)::

      Concat(Sub(Mul(x1, cos), Mul(x2, sin)), Add(Mul(x2, cos), Mul(x1, sin)), axis=-1)

  — rotate-half's values, written out per half.
* **Interleaved pairs** (Cohere, GLM-4, Helium: ``flatten(stack([-x[..., 1::2], x[..., 0::2]],
  -1), -2)``, cos and sin of the angles ``repeat_interleave``\ d): the pairs ``(x[2i], x[2i+1])``
  rotate by angle ``i``, the kernel's ``rotary_interleaved=1`` over the same caches.

Only these exact patterns are matched: rotate-half (not interleaved), a weight-free constant
``inv_freq`` or LongRoPE's choice between two (below), positions taken from a graph input
(dynamic-NTK frequencies, computed in the graph, stay unfused).

**LongRoPE** (Phi-3-mini-128k, Phi-3.5, Phi-4-mini: transformers' ``longrope_frequency_update``
uses the long factors once ``max(position_ids) + 1 > original_max_position_embeddings``) is
captured as ``inv_freq = Where(Greater(ReduceMax(position_ids) + 1, T), long, short)``:
:class:`Switch` records the condition, ``T`` and the long frequencies, and :func:`switched_caches`
lays out the short rows ``0 .. T - 1`` followed by the long rows; the attention fusion slices the
step's ``total_sequence_length`` rows from the half the condition picks (the kernel accepts a cache
of exactly that many rows; checked on onnxruntime 1.31, session 44). onnxruntime-genai's builder
selects whole caches with an ``If`` instead (``make_rotary_embedding_multi_cache``), which copies
both ``(max_position_embeddings, R/2)`` tensors at every step (2 ms each for 131072 × 48 floats on
this machine, session 44).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import constant_ints, last_axis_slice, producer


@dataclasses.dataclass(frozen=True)
class Switch:
    """LongRoPE's second set of frequencies and when it applies (module docstring).

    Attributes:
        condition: The graph's scalar bool ``max(position_ids) + 1 > threshold``.
        threshold: ``original_max_position_embeddings``: the short frequencies' positions.
        long_inv_freq: The ``[R/2]`` float32 frequencies used when ``condition`` holds.
    """

    condition: ir.Value
    threshold: int
    long_inv_freq: np.ndarray


@dataclasses.dataclass(frozen=True)
class Rotary:
    """A matched rotary embedding of one tensor.

    Attributes:
        x: The BNSH tensor before the rotation (``[B, heads, S, D]``).
        inv_freq: The ``[R/2]`` float32 inverse frequencies (radians per position); ``R`` is the
            rotary dimension, ``D`` unless partial. LongRoPE: the short ones.
        scale: The constant factor on cos and sin (transformers' ``attention_scaling``, 1.0 mostly).
        positions: The graph input the angles come from (``position_ids``).
        switch: LongRoPE's long frequencies and their condition, else ``None``.
        interleaved: The pairs ``(x[2i], x[2i+1])`` rotate (GroupQueryAttention's
            ``rotary_interleaved``), not the halves.
    """

    x: ir.Value
    inv_freq: np.ndarray
    scale: float
    positions: ir.Value
    switch: Switch | None = None
    interleaved: bool = False

    @property
    def dim(self) -> int:
        """The rotary dimension ``R`` (the first ``R`` values of each head rotate)."""
        return 2 * int(self.inv_freq.size)


def _const(value: ir.Value | None) -> np.ndarray | None:
    if value is None:
        return None
    tensor = ir.convenience.get_const_tensor(value)
    return None if tensor is None else tensor.numpy()


def _halves(first: ir.Value | None, second: ir.Value | None, dim: int) -> ir.Value | None:
    """``x`` when ``first`` / ``second`` are ``x[..., :dim/2]`` / ``x[..., dim/2:]`` of an ``x`` whose
    last axis holds ``dim`` values: two Slices, or the two outputs of one ``Split`` (``torch.chunk``)."""
    half = dim // 2
    a, b = last_axis_slice(first, 4), last_axis_slice(second, 4)
    if a is not None and b is not None:
        ok = a[0] is b[0] and (a[1], a[2]) == (0, half) and b[1] == half and b[2] >= dim
        return a[0] if ok else None
    split = producer(first, "Split")
    if split is None or len(split.outputs) != 2 or (first, second) != tuple(split.outputs):
        return None
    axis = split.attributes.get("axis")
    source = split.inputs[0]
    if axis is None or axis.as_int() not in (3, -1) or source is None:
        return None
    sizes = constant_ints(split.inputs[1]) if len(split.inputs) > 1 else None
    shape = source.shape
    even = shape is not None and shape.rank() == 4 and shape[3] == dim  # Split's equal parts
    return source if sizes == [half, half] or (sizes is None and even) else None


def _rotate_half(value: ir.Value, dim: int) -> ir.Value | None:
    """``Concat(Neg(x[..., R/2:]), x[..., :R/2], axis=-1)`` → ``x`` (``R = dim``)."""
    concat = producer(value, "Concat")
    if concat is None or len(concat.inputs) != 2 or not _last_concat(concat):
        return None
    neg = producer(concat.inputs[0], "Neg")
    return None if neg is None else _halves(concat.inputs[1], neg.inputs[0], dim)


def _last_concat(node: ir.Node) -> bool:
    axis = node.attributes.get("axis")
    return axis is not None and axis.as_int() in (3, -1)


def _trig(value: ir.Value | None, op_type: str) -> tuple[ir.Value, float] | None:
    """``Unsqueeze(Cos(emb) [* c], 1)`` → ``(emb, c)`` (op_type ``Cos`` or ``Sin``)."""
    unsqueeze = producer(value, "Unsqueeze")
    if unsqueeze is None or constant_ints(unsqueeze.inputs[1]) != [1]:
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


def _float_array(value: ir.Value | None, size: int) -> np.ndarray | None:
    array = _const(value)
    if array is None or array.dtype != np.float32 or array.size != size or array.shape[-1] != size:
        return None
    return array.reshape(-1).astype(np.float32)


def _switch(value: ir.Value | None, half: int) -> tuple[np.ndarray, Switch] | None:
    """``Where(Greater(n, T), long, short)`` over two constant frequency sets, a scalar condition
    and an integer ``T`` → ``(short, Switch)``."""
    where = producer(value, "Where")
    if where is None or len(where.inputs) != 3:
        return None
    condition = where.inputs[0]
    long, short = _float_array(where.inputs[1], half), _float_array(where.inputs[2], half)
    greater = producer(condition, "Greater")
    threshold = constant_ints(greater.inputs[1]) if greater is not None else None
    shape = condition.shape if condition is not None else None
    if long is None or short is None or threshold is None or len(threshold) != 1 or threshold[0] <= 0:
        return None
    if condition is None or shape is None or shape.rank() > 1 or any(d != 1 for d in shape):
        return None
    return short, Switch(condition, threshold[0], long)


def _row_of_broadcast(value: ir.Value | None) -> ir.Value | None:
    """``x`` when ``value`` is one row of ``Expand(Unsqueeze(x, 0))`` along the new axis (a
    ``Gather`` at axis 0, through ``Slice``s on that axis): the text positions of Qwen3-VL's and
    Qwen3.5's rotary, ``position_ids[None].expand(4, ...)[1:][0]``
    (:mod:`onnxport.capture.text_mrope`); else ``value``."""
    gather = producer(value, "Gather")
    index = None if gather is None else _const(gather.inputs[1])
    if gather is None or gather.attributes.get_int("axis", 0) != 0 or index is None or index.shape != ():
        return value
    rows = gather.inputs[0]
    while (cut := producer(rows, "Slice")) is not None and len(cut.inputs) > 3 and constant_ints(cut.inputs[3]) == [0]:
        rows = cut.inputs[0]
    expand = producer(rows, "Expand")
    unsqueeze = producer(expand.inputs[0], "Unsqueeze") if expand is not None else None
    if unsqueeze is None or constant_ints(unsqueeze.inputs[1]) != [0]:
        return value
    return unsqueeze.inputs[0]


def _freqs(value: ir.Value | None, half: int) -> tuple[np.ndarray, ir.Value, Switch | None] | None:
    """``Cast(Unsqueeze(position_ids, 2)) * inv_freq`` (``half`` float32 values, or LongRoPE's
    :func:`_switch`) → ``(inv_freq, position_ids, switch)``."""
    mul = producer(value, "Mul")
    if mul is None:
        return None
    for a, b in (mul.inputs, mul.inputs[::-1]):
        inv_freq = _float_array(b, half)
        switched = _switch(b, half) if inv_freq is None else None
        if inv_freq is None and switched is None:
            continue
        cast = producer(a, "Cast")
        unsqueeze = producer(cast.inputs[0] if cast is not None else a, "Unsqueeze")
        if unsqueeze is None or constant_ints(unsqueeze.inputs[1]) not in ([2], [-1]):
            continue
        positions = _row_of_broadcast(unsqueeze.inputs[0])
        if positions is None or not positions.is_graph_input():
            continue
        return (inv_freq, positions, None) if inv_freq is not None else (switched[0], positions, switched[1])  # type: ignore[index]
    return None


def _angles(emb: ir.Value, dim: int) -> tuple[np.ndarray, ir.Value, Switch | None] | None:
    """``Concat(f, f, axis=-1)`` of :func:`_freqs` ``f`` → ``(inv_freq, position_ids, switch)``."""
    concat = producer(emb, "Concat")
    if concat is None or len(concat.inputs) != 2 or concat.inputs[0] is not concat.inputs[1]:
        return None
    axis = concat.attributes.get("axis")
    if axis is None or axis.as_int() not in (2, -1):
        return None
    return _freqs(concat.inputs[0], dim // 2)


def _cos_sin(cos: ir.Value | None, sin: ir.Value | None) -> tuple[ir.Value, float] | None:
    """The angles and scale shared by ``Unsqueeze(Cos(a) [* c], 1)`` and ``Unsqueeze(Sin(a) [* c], 1)``."""
    cos_part, sin_part = _trig(cos, "Cos"), _trig(sin, "Sin")
    return cos_part if cos_part is not None and cos_part == sin_part else None


def _products(node: ir.Node | None) -> list[tuple[ir.Value | None, ir.Value | None]]:
    """``(a, b)`` and ``(b, a)`` for a ``Mul(a, b)``, else nothing."""
    if node is None or node.op_type != "Mul" or len(node.inputs) != 2:
        return []
    return [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])]


def _rotate_half_form(value: ir.Value | None, dim: int, interleaved: bool = False) -> Rotary | None:
    """``Add(Mul(x, cos), Mul(rotate_half(x), sin))`` in any operand order, cos and sin of the
    same duplicated angles ``Concat(f, f)``; ``interleaved``: the pairs' form (:func:`_rotate_pairs`,
    :func:`_pair_angles`)."""
    add = producer(value, "Add")
    if add is None or dim % 2:
        return None
    muls = [producer(v, "Mul") for v in add.inputs]
    for plain, rotated in (muls, muls[::-1]):
        for x, cos in _products(plain):
            for rot, sin in _products(rotated):
                if x is None or rot is None or (_rotate_pairs if interleaved else _rotate_half)(rot, dim) is not x:
                    continue
                found = _pair_angles(cos, sin, dim) if interleaved else _half_angles(cos, sin, dim)
                if found is not None:
                    (inv_freq, positions, switch), scale = found
                    return Rotary(x, inv_freq, scale, positions, switch, interleaved)
    return None


def _half_angles(cos: ir.Value | None, sin: ir.Value | None, dim: int) -> tuple[tuple[np.ndarray, ir.Value, Switch | None], float] | None:
    trig = _cos_sin(cos, sin)
    angles = _angles(trig[0], dim) if trig is not None else None
    return None if trig is None or angles is None else (angles, trig[1])


def _rotate_pairs(value: ir.Value, dim: int) -> ir.Value | None:
    """``flatten(stack([-x[..., 1::2], x[..., 0::2]], -1), -2)`` (transformers' interleaved
    ``rotate_half``: Cohere, GLM, Helium) → ``x``: ``Reshape(Concat(Unsqueeze(Neg(odd), -1),
    Unsqueeze(even, -1), axis=-1))`` back to ``dim`` values."""
    reshape = producer(value, "Reshape")
    concat = producer(reshape.inputs[0], "Concat") if reshape is not None else None
    if concat is None or len(concat.inputs) != 2 or _last_dim(value) != dim:
        return None
    axis = concat.attributes.get("axis")
    if axis is None or axis.as_int() not in (4, -1):
        return None
    parts = [producer(v, "Unsqueeze") for v in concat.inputs]
    if any(u is None or constant_ints(u.inputs[1]) not in ([4], [-1]) for u in parts):
        return None
    neg = producer(parts[0].inputs[0], "Neg")  # type: ignore[union-attr]
    odd = last_axis_slice(neg.inputs[0], 4, step=2) if neg is not None else None
    even = last_axis_slice(parts[1].inputs[0], 4, step=2)  # type: ignore[union-attr]
    if odd is None or even is None or odd[0] is not even[0] or (odd[1], even[1]) != (1, 0) or min(odd[2], even[2]) < dim:
        return None
    return odd[0]


def _last_dim(value: ir.Value | None) -> int | None:
    shape = value.shape if value is not None else None
    return shape[-1] if shape is not None and shape.rank() and isinstance(shape[-1], int) else None  # type: ignore[return-value]


def _repeated(value: ir.Value | None, dim: int) -> ir.Value | None:
    """``v`` when ``value = repeat_interleave(v, 2, dim=-1)`` (``Reshape(Expand(Unsqueeze(v, -1),
    [..., 2]))``) of ``dim / 2`` values into ``dim``: the new last axis can only broadcast from 1, and
    the reshape keeps ``v``'s other dims (checked on the shapes torch recorded), so it is 2."""
    reshape = producer(value, "Reshape")
    expand = producer(reshape.inputs[0], "Expand") if reshape is not None else None
    unsqueeze = producer(expand.inputs[0], "Unsqueeze") if expand is not None else None
    source = unsqueeze.inputs[0] if unsqueeze is not None else None
    if value is None or source is None or value.shape is None or source.shape is None:
        return None
    rank = source.shape.rank()
    if constant_ints(unsqueeze.inputs[1]) not in ([-1], [rank]) or _last_dim(value) != dim or _last_dim(source) != dim // 2:  # type: ignore[union-attr, operator]
        return None
    return source if value.shape.rank() == rank and list(value.shape)[:-1] == list(source.shape)[:-1] else None


def _pair_angles(cos: ir.Value | None, sin: ir.Value | None, dim: int) -> tuple[tuple[np.ndarray, ir.Value, Switch | None], float] | None:
    """The angles of the interleaved form's cos and sin: ``Unsqueeze(Cos(repeat_interleave(f)),
    1)`` (Cohere), or ``repeat_interleave(Unsqueeze(Cos(Concat(f, f)), 1)[..., :dim/2])`` (GLM,
    Helium: the duplicated angles' first half, repeated)."""
    trig = _cos_sin(cos, sin)
    freqs = _repeated(trig[0], dim) if trig is not None else None
    found = _freqs(freqs, dim // 2) if freqs is not None else None
    if trig is not None and found is not None:
        return found, trig[1]
    halves = [last_axis_slice(_repeated(v, dim), 4) for v in (cos, sin)]
    if any(h is None or (h[1], h[2]) != (0, dim // 2) for h in halves):
        return None
    return _half_angles(halves[0][0], halves[1][0], dim)  # type: ignore[index]


def _split_halves_form(value: ir.Value | None, dim: int) -> Rotary | None:
    """``Concat(Sub(Mul(x1, cos), Mul(x2, sin)), Add(Mul(x2, cos), Mul(x1, sin)), axis=-1)``,
    ``x1``/``x2`` the halves of ``x`` and cos/sin of the ``dim/2`` angles ``f`` (gpt-oss)."""
    concat = producer(value, "Concat")
    if concat is None or len(concat.inputs) != 2 or not _last_concat(concat) or dim % 2:
        return None
    sub, add = producer(concat.inputs[0], "Sub"), producer(concat.inputs[1], "Add")
    if sub is None or add is None:
        return None
    second = {frozenset(map(id, pair)) for m in add.inputs for pair in _products(producer(m, "Mul"))}
    for x1, cos in _products(producer(sub.inputs[0], "Mul")):
        for x2, sin in _products(producer(sub.inputs[1], "Mul")):
            x = _halves(x1, x2, dim)
            trig = _cos_sin(cos, sin) if x is not None else None
            freqs = _freqs(trig[0], dim // 2) if trig is not None else None
            if x is None or trig is None or freqs is None:
                continue
            if {frozenset(map(id, (x2, cos))), frozenset(map(id, (x1, sin)))} <= second:
                return Rotary(x, freqs[0], trig[1], freqs[1], freqs[2])
    return None


def _interleaved_form(value: ir.Value | None, dim: int) -> Rotary | None:
    """The interleaved pairs' form (:func:`_rotate_half_form` with ``interleaved``)."""
    return _rotate_half_form(value, dim, interleaved=True)


def _partial(value: ir.Value | None, head_size: int) -> Rotary | None:
    """``Concat(rotation(Slice(x, 0, R)), Slice(x, R, D), axis=-1)`` (the first Slice folded away
    when ``R == D``) → the rotary of ``x`` with ``R/2`` frequencies."""
    concat = producer(value, "Concat")
    rest = last_axis_slice(concat.inputs[1], 4) if concat is not None and len(concat.inputs) == 2 and _last_concat(concat) else None
    if concat is None or rest is None:
        return None
    x, dim, end = rest
    if dim <= 0 or dim % 2 or dim > head_size or end < head_size:
        return None
    for form in (_rotate_half_form, _split_halves_form, _interleaved_form):
        found = form(concat.inputs[0], dim)
        if found is None:
            continue
        if found.x is x and dim == head_size:
            return found
        cut = last_axis_slice(found.x, 4)
        if cut is not None and cut == (x, 0, dim):
            return dataclasses.replace(found, x=x)
    return None


def match_rotary(value: ir.Value | None, head_size: int) -> Rotary | None:
    """The rotary embedding producing ``value`` (``[B, heads, S, head_size]``), or ``None``: the
    rotate-half form, the split halves, the interleaved pairs, or a partial rotary of any of them
    (module docstring)."""
    return (_rotate_half_form(value, head_size) or _split_halves_form(value, head_size)
            or _interleaved_form(value, head_size) or _partial(value, head_size))  # fmt: skip


def caches(rotary: Rotary, max_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos_cache``, ``sin_cache``: float32 ``(max_positions, R/2)``,
    ``cos(p * inv_freq) * scale`` for positions ``p = 0 .. max_positions - 1``.

    Computed in float32 as transformers does (``inv_freq @ position_ids`` in float32, then
    ``cos``/``sin``, then ``* attention_scaling``).
    """
    positions = np.arange(max_positions, dtype=np.float32)[:, None]
    angles = positions * rotary.inv_freq[None, :]
    scale = np.float32(rotary.scale)
    return (np.cos(angles) * scale).astype(np.float32), (np.sin(angles) * scale).astype(np.float32)


def switched_caches(rotary: Rotary, max_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """LongRoPE's ``cos_cache``, ``sin_cache``: float32 ``(T + max_positions, R/2)``, the short
    frequencies' rows for positions ``0 .. T - 1`` then the long ones' for ``0 .. max_positions - 1``
    (``T`` = ``rotary.switch.threshold``; the long half starts at row ``T``)."""
    assert rotary.switch is not None
    short = caches(rotary, rotary.switch.threshold)
    long = caches(dataclasses.replace(rotary, inv_freq=rotary.switch.long_inv_freq), max_positions)
    return np.concatenate([short[0], long[0]]), np.concatenate([short[1], long[1]])
