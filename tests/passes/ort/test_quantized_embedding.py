"""Embedding lookups as ``com.microsoft.GatherBlockQuantized``: a tied table shares the quantized LM
head's bytes (the float table is no longer written) and gathers exactly its dequantized rows;
``embeddings="all"`` quantizes an untied table alike; ``"none"`` keeps the Gather."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from onnxport.passes.ort import QuantizeOptions, blockwise
from onnxport.passes.ort.matmul_nbits import MatMulNBitsPass
from onnxport.passes.ort.quantized_embedding import QuantizedEmbeddingPass

from .test_matmul_nbits import _initializer, _model, _run, _weight, reference

VOCAB, WIDTH = 40, 64


def _lookup_model(tied: bool) -> ir.Model:
    """``embedded = Gather(table, ids)``; ``logits = embedded @ Transpose(table)`` (tied) or
    ``@ head`` (a separate ``[WIDTH, VOCAB]`` weight)."""
    table = _initializer("embed.weight", _weight(WIDTH, VOCAB, seed=8).T.copy())
    ids = ir.Value(name="ids", shape=ir.Shape(["batch", 3]), type=ir.TensorType(ir.DataType.INT64))
    gather = ir.node("Gather", [table, ids])
    gather.outputs[0].name, gather.outputs[0].dtype = "embedded", ir.DataType.FLOAT
    gather.outputs[0].shape = ir.Shape(["batch", 3, WIDTH])
    nodes, initializers = [gather], [table]
    if tied:
        transpose = ir.node("Transpose", [table], {"perm": [1, 0]})
        head = ir.node("MatMul", [gather.outputs[0], transpose.outputs[0]])
        nodes += [transpose, head]
    else:
        weight = _initializer("head.weight", _weight(WIDTH, VOCAB, seed=9))
        head = ir.node("MatMul", [gather.outputs[0], weight])
        nodes.append(head)
        initializers.append(weight)
    head.outputs[0].name, head.outputs[0].dtype = "logits", ir.DataType.FLOAT
    return _model([ids], nodes, [gather.outputs[0], head.outputs[0]], initializers)


def _quantize(model: ir.Model, options: QuantizeOptions) -> dict:
    report: dict = {}
    MatMulNBitsPass(options, report)(model)
    QuantizedEmbeddingPass(options, report)(model)
    return report


@pytest.mark.parametrize(("bits", "symmetric"), [(4, True), (4, False), (8, True)])
def test_tied_table_gathers_the_heads_dequantized_rows(bits: int, symmetric: bool) -> None:
    model = _lookup_model(tied=True)
    table = model.graph.initializers["embed.weight"].const_value.numpy().copy()
    _quantize(model, QuantizeOptions(bits=bits, symmetric=symmetric, accuracy_level=0))
    ops = [(n.domain, n.op_type) for n in model.graph]
    assert ("com.microsoft", "GatherBlockQuantized") in ops and ("", "Gather") not in ops
    assert "embed.weight" not in model.graph.initializers  # the float table is not written
    [gbq] = [n for n in model.graph if n.op_type == "GatherBlockQuantized"]
    [head] = [n for n in model.graph if n.op_type == "MatMulNBits"]
    assert gbq.inputs[0].producer().inputs[0] is head.inputs[1]  # one packed tensor for both
    assert gbq.inputs[2] is head.inputs[2]
    tokens = np.array([[0, 5, 39], [7, 7, 1]], dtype=np.int64)
    embedded, _ = _run(model, {"ids": tokens})
    packed, scales, zeros = reference(table.T, bits, 32, symmetric)
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, zeros), WIDTH, bits, 32).T
    assert embedded.shape == (2, 3, WIDTH) and embedded.dtype == np.float32
    np.testing.assert_allclose(embedded, dequantized[tokens], rtol=1e-6, atol=1e-7)
    assert np.abs(embedded - table[tokens]).max() > 0  # really quantized


def test_untied_table_only_with_embeddings_all() -> None:
    tokens = np.array([[3, 1, 2]], dtype=np.int64)
    kept = _lookup_model(tied=False)
    _quantize(kept, QuantizeOptions())  # "tied": an untied table stays float
    assert [n.op_type for n in kept.graph] == ["Gather", "MatMulNBits"]
    model = _lookup_model(tied=False)
    table = model.graph.initializers["embed.weight"].const_value.numpy().copy()
    report = _quantize(model, QuantizeOptions(embeddings="all", accuracy_level=0))
    assert [n.op_type for n in model.graph] == ["Reshape", "GatherBlockQuantized", "MatMulNBits"]
    embedded, _ = _run(model, {"ids": tokens})
    packed, scales, _ = reference(table.T, 4, 32, True)
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, None), WIDTH, 4, 32).T
    np.testing.assert_allclose(embedded, dequantized[tokens], rtol=1e-6, atol=1e-7)
    assert set(report) == {"embed.weight.T", "head.weight"} and report["embed.weight.T"]["rel_l2"] > 0


def test_embeddings_none_and_bad_value() -> None:
    model = _lookup_model(tied=True)
    _quantize(model, QuantizeOptions(embeddings="none"))
    assert [n.op_type for n in model.graph] == ["Gather", "MatMulNBits"]
    assert "embed.weight" in model.graph.initializers
    from onnxport.errors import InputError

    with pytest.raises(InputError, match="embeddings must be one of"):
        QuantizeOptions(embeddings="some")
