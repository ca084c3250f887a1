"""Lookup tables of a half-precision checkpoint stay half precision in a float32 graph.

A bfloat16 or float16 checkpoint exported as a float32 graph (``--quantize``: MatMulNBits is made
from float32 MatMuls; ``--dtype float32``: onnxruntime's CPU provider has few bfloat16 kernels) had
every weight converted to float32 as it streamed, doubling the bytes of tensors that are only
looked up: an untied ``embed_tokens`` (Llama 3 8B: 128256 x 4096, 1.05 GB in bfloat16), Gemma 4's
per-layer embedding table (262144 x 8960: 4.7 GB in bfloat16, 9.4 GB in float32, most of the
E2B int4 folder's 12.8 GB).

``Gather`` copies elements whatever their type (onnxruntime's CPU kernel is registered for every
tensor type, ``core/providers/cpu/tensor/gather.cc``), so a table whose only consumers are the
data input of ``Gather`` nodes keeps the checkpoint's dtype and each lookup is followed by
``Cast(to=FLOAT)``: the rows looked up are converted, exactly as the whole table was (a half value
is exactly a float32 one), and the graph's numbers do not change.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.weights.sources import CastSource
from onnxport.weights.tensor import WeightTensor

HALF = (ir.DataType.BFLOAT16, ir.DataType.FLOAT16)


def _lookup_only(value: ir.Value) -> bool:
    uses = list(value.uses())
    return bool(uses) and not value.is_graph_output() and all(
        user.op_type == "Gather" and user.domain in ("", "ai.onnx") and index == 0
        and not user.outputs[0].is_graph_output()
        for user, index in uses
    )


def _shared(model: ir.Model) -> set[int]:
    """``id`` of every weight tensor another initializer is derived from (a tied table's
    transposed LM head, ``weights.derive``) and of every slot two initializers hold."""
    shared: set[int] = set()
    slots: set[int] = set()
    stack = [v.const_value for v in model.graph.initializers.values()]
    for tensor in stack:
        slot = getattr(tensor, "slot", None)
        if slot is not None:
            shared.update({id(slot)} & slots)
            slots.add(id(slot))
    while stack:
        for base in getattr(stack.pop(), "bases", ()):
            if id(base) not in shared:
                shared.add(id(base))
                stack.append(base)
    return shared


def half_lookup_tables(model: ir.Model) -> list[str]:
    """Keep, in place, the half-precision checkpoint dtype of every float32 initializer converted
    from it as it streams (:class:`~onnxport.weights.sources.CastSource`) that only ``Gather``
    reads and no other initializer is derived from (module doc); the names of the tables kept."""
    kept = []
    shared = _shared(model)
    for value in list(model.graph.initializers.values()):
        tensor = value.const_value
        if not isinstance(tensor, WeightTensor) or tensor.slot is None or {id(tensor), id(tensor.slot)} & shared:
            continue
        slot, source = tensor.slot, tensor.slot.source
        if not (isinstance(source, CastSource) and source.dtype == ir.DataType.FLOAT and source.inner.dtype in HALF):
            continue
        if not _lookup_only(value):
            continue
        slot.source, slot.dtype = source.inner, source.inner.dtype
        value.const_value = WeightTensor.root(slot)
        value.type = ir.TensorType(slot.dtype)
        for gather, _ in list(value.uses()):
            looked_up = gather.outputs[0]
            cast = ir.node("Cast", [looked_up], {"to": ir.DataType.FLOAT}, num_outputs=1)
            rows = cast.outputs[0]
            rows.type, rows.shape, rows.name = ir.TensorType(ir.DataType.FLOAT), looked_up.shape, looked_up.name
            looked_up.name = f"{looked_up.name}_{slot.dtype.name.lower()}"
            looked_up.type = ir.TensorType(slot.dtype)
            looked_up.replace_all_uses_with(rows)
            cast.replace_input_with(0, looked_up)  # its own input, replaced above with the rest
            assert gather.graph is not None
            gather.graph.insert_after(gather, cast)
        kept.append(str(value.name))
    return kept


__all__ = ["half_lookup_tables"]
