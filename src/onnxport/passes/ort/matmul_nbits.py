"""``MatMul(x, W)`` with a constant ``[K, N]`` weight → ``com.microsoft.MatMulNBits`` (int4/int8).

Weight-only quantization: activations stay float, the weight is stored block-wise quantized
(:mod:`onnxport.passes.ort.blockwise`) and dequantized inside onnxruntime's kernel, which reads a
quarter (int4) of the float32 bytes per decode step. Inputs and attributes follow
docs/ContribOperators.md of onnxruntime (``A, B, scales, zero_points``; ``K, N, bits, block_size,
accuracy_level``); onnxruntime-genai's builder emits the same op for ``-p int4`` (it quantizes its
finished graph with ``MatMulNBitsQuantizer``; here the packed tensors are
:class:`onnxport.weights.WeightTensor` transforms of the source weight, computed only when the model
is written, so a weight streamed from a safetensors checkpoint is read, quantized and written one
tensor at a time and the float model is never held in memory).

Matched projections (:func:`quantizable`): ``MatMul(x, W)``; ``MatMul(x, Transpose(W))``, the tied
LM head of GPT-2, OPT, Gemma or Llama 3.2, whose weight is also the embedding table (quantized from
a lazy transpose, the table kept for the ``Gather``); and ``Gemm(x, W, bias)`` with ``alpha = beta =
1``, ``transA = 0`` and a 1-D bias, which ``aten.addmm`` becomes (GPT-2's ``Conv1D``, OPT's MLP on
2-D rows), the bias going to MatMulNBits' ``bias`` input (index 5). onnxruntime-genai's builder
quantizes the same set (its ``MatMulNBitsQuantizer`` walks ``MatMul`` and ``Gemm`` nodes).

The LM head (a MatMul producing a graph output) is quantized unless ``lm_head=False``. Each
quantized weight's error (relative L2 and max abs of the dequantized weight) is recorded in
``report`` when it is materialized, i.e. at save time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

from onnxport.errors import InputError
from onnxport.passes.fusions import (
    drop_unused_initializer,
    float_initializer,
    substitute,
    transposed_initializer,
)
from onnxport.passes.ort import blockwise
from onnxport.passes.ort.kernels import MICROSOFT, has_kernel
from onnxport.weights import WeightTensor, transposed

FLOATS = (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
EMBEDDINGS = ("tied", "all", "none")


@dataclasses.dataclass(frozen=True)
class QuantizeOptions:
    """Weight-only quantization settings.

    Attributes:
        bits: 4 (``int4``) or 8 (``int8``).
        block_size: Rows of ``K`` per scale: 16, 32 (default), 64, 128 or 256.
        symmetric: Implicit zero point (``2**(bits-1)``) or stored per-block zero points.
        accuracy_level: MatMulNBits' minimum compute accuracy (0 unset, 1 fp32, 2 fp16, 3 bf16,
            4 int8 activations; onnxruntime-genai's builder uses 4 on CPU).
        lm_head: Quantize the MatMul producing the logits too.
        embeddings: Embedding lookups as ``GatherBlockQuantized``
            (:mod:`onnxport.passes.ort.quantized_embedding`): ``"tied"`` those sharing the
            quantized LM head's tensors, ``"all"`` every float32 table too, ``"none"``.

    Raises:
        InputError: A value outside the ranges above.
    """

    bits: int = 4
    block_size: int = 32
    symmetric: bool = True
    accuracy_level: int = 4
    lm_head: bool = True
    embeddings: str = "tied"

    def __post_init__(self) -> None:
        if self.embeddings not in EMBEDDINGS:
            raise InputError(f"embeddings must be one of {EMBEDDINGS}, got {self.embeddings!r}")
        if self.bits not in blockwise.BITS:
            raise InputError(f"bits must be 4 or 8, got {self.bits}")
        if self.block_size not in blockwise.BLOCK_SIZES:
            raise InputError(
                f"block_size must be one of {blockwise.BLOCK_SIZES}, got {self.block_size}"
            )
        if self.accuracy_level not in range(5):
            raise InputError(f"accuracy_level must be 0..4, got {self.accuracy_level}")


SAMPLED_COLUMNS = 8


def error_estimate(
    weight: np.ndarray, q: blockwise.Quantized, o: QuantizeOptions
) -> dict[str, float]:
    """Relative L2 and max abs error of the dequantized weight on every 8th output column
    (:data:`SAMPLED_COLUMNS`: exact values, a sample of the columns, to keep saving fast)."""
    cols = slice(None, None, SAMPLED_COLUMNS)
    zeros = None if q.zero_points is None else q.zero_points[cols]
    sample = blockwise.Quantized(q.packed[cols], q.scales[cols], zeros)
    source = weight[:, cols]
    error = blockwise.dequantize(sample, weight.shape[0], o.bits, o.block_size) - source
    norm = float(np.linalg.norm(source)) or 1.0
    return {"rel_l2": float(np.linalg.norm(error)) / norm, "max_abs": float(np.abs(error).max())}


class SharedQuantization:
    """Quantizes one weight once for its three derived tensors, then forgets the result.

    The source weight is read (``base.numpy()``: a transpose of the checkpoint tensor, a cast...)
    only when a part is asked for and no quantization of it is pending, so writing the three
    parts one after the other reads and quantizes the weight once (``data_file.py`` writes
    one tensor at a time).
    """

    def __init__(
        self,
        base: ir.TensorProtocol,
        name: str,
        options: QuantizeOptions,
        report: dict[str, dict[str, float]],
    ) -> None:
        self.base, self.name, self.options, self.report = base, name, options, report
        self.parts: dict[str, np.ndarray] = {}

    def part(self, which: str) -> np.ndarray:
        if which not in self.parts:
            self.parts, self.report[self.name] = self.quantize(np.asarray(self.base.numpy(), dtype=np.float32))
        return self.parts.pop(which)

    def quantize(self, weight: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
        """The parts (``packed``, ``scales``, [``zero_points``]) of the ``[K, N]`` ``weight`` and
        its error estimate."""
        o = self.options
        q = blockwise.quantize(weight, o.bits, o.block_size, o.symmetric)
        parts = {"packed": q.packed, "scales": q.scales}
        if q.zero_points is not None:
            parts["zero_points"] = q.zero_points
        return parts, error_estimate(weight, q, o)


class QuantizedPart(WeightTensor):
    """One of MatMulNBits' constant inputs (packed weight, scales, zero points), a transform of
    the source weight computed when written (:mod:`onnxport.weights.tensor`). It lists the source
    as its base, so ``apply_weights``, ``missing_weights`` and ``has_data`` see the weight it
    reads; :class:`SharedQuantization` reads it only when needed."""

    def __init__(
        self, shared: SharedQuantization, which: str, dtype: ir.DataType, shape: tuple[int, ...], name: str
    ) -> None:
        super().__init__(dtype=dtype, shape=shape, name=name, bases=(shared.base,))
        self.shared, self.which = shared, which

    def _produce(self) -> ir.TensorProtocol:
        array = self.shared.part(self.which)
        if tuple(array.shape) != tuple(self.shape.numpy()):
            raise InputError(
                f"quantized tensor {self.name}: expected shape {list(self.shape.numpy())}, got {list(array.shape)}"
            )
        return ir.Tensor(array, dtype=self.dtype, name=self.name)


class MatMulNBitsPass(ir.passes.InPlacePass):
    """Rewrite every MatMul with a constant 2-D float weight to MatMulNBits."""

    def __init__(
        self, options: QuantizeOptions, report: dict[str, dict[str, float]] | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.report: dict[str, dict[str, float]] = {} if report is None else report

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if not has_kernel("MatMulNBits"):
            return ir.passes.PassResult(model, False)
        graph = model.graph
        modified = False
        parts: dict[str, dict[str, ir.Value]] = {}  # a weight read by several MatMuls: quantized once
        for node in list(graph):
            target = quantizable(node)
            if target is None:
                continue
            if not self.options.lm_head and node.outputs[0].is_graph_output():
                continue
            self._rewrite(graph, node, target, parts)
            modified = True
        if modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, modified)

    def _rewrite(
        self, graph: ir.Graph, node: ir.Node, target: Projection, done: dict[str, dict[str, ir.Value]]
    ) -> None:
        """``node`` as MatMulNBits; ``done``: the quantized parts of the weights already rewritten,
        by weight name (Gemma 3n's AltUp router, HRM's repeated blocks read one weight twice)."""
        o = self.options
        k, n = (int(d) for d in target.weight.shape.numpy())
        parts = done.get(target.name)
        if parts is None:
            shared = SharedQuantization(target.weight, target.name, o, self.report)
            parts = done[target.name] = register_parts(graph, shared, part_shapes((n,), -(-k // o.block_size), o))
        inputs: list[ir.Value | None] = [target.x, *parts.values()]
        if target.bias is not None:
            inputs += [None] * (5 - len(inputs)) + [target.bias]  # zero_points, g_idx, bias
        attributes = {
            "K": k,
            "N": n,
            "bits": o.bits,
            "block_size": o.block_size,
            "accuracy_level": o.accuracy_level,
        }
        new = ir.node("MatMulNBits", inputs, attributes, domain=MICROSOFT, name=node.name)
        substitute(graph, new, node, node.outputs[0])
        graph.remove(node, safe=True)
        if target.transpose is not None and not target.transpose.outputs[0].uses():
            graph.remove(target.transpose, safe=True)
        drop_unused_initializer(graph, target.stored)


def part_shapes(
    rows: tuple[int, ...], blocks: int, o: QuantizeOptions, *, flat: bool = False
) -> dict[str, tuple[tuple[int, ...], ir.DataType]]:
    """Shapes and dtypes of the quantized tensors of a weight with ``rows`` output rows (MatMulNBits'
    ``(N,)``, QMoE's ``(E, N)``) and ``blocks`` blocks along K: ``packed`` (``[*rows, blocks,
    block_size * bits / 8]``, or ``[*rows, blocks * ...]`` when ``flat``), ``scales`` and, when
    asymmetric, ``zero_points`` (two 4-bit points a byte)."""
    blob = o.block_size * o.bits // 8
    packed = (*rows, blocks * blob) if flat else (*rows, blocks, blob)
    shapes = {"packed": (packed, ir.DataType.UINT8), "scales": ((*rows, blocks), ir.DataType.FLOAT)}
    if not o.symmetric:
        shapes["zero_points"] = ((*rows, -(-blocks * o.bits // 8)), ir.DataType.UINT8)
    return shapes


def register_parts(
    graph: ir.Graph, shared: SharedQuantization, shapes: dict[str, tuple[tuple[int, ...], ir.DataType]]
) -> dict[str, ir.Value]:
    """One lazy initializer ``<shared.name>.<part>`` per entry of ``shapes`` (:func:`part_shapes`),
    computed from ``shared`` when written; in the order of ``shapes``."""
    values = {}
    for part, (shape, dtype) in shapes.items():
        name = f"{shared.name}.{part}"
        lazy = QuantizedPart(shared, part, dtype, shape, name)
        values[part] = ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(dtype), const_value=lazy)
        graph.register_initializer(values[part])
    return values


@dataclasses.dataclass(frozen=True)
class Projection:
    """A node computing ``x @ weight (+ bias)`` with a constant weight.

    Attributes:
        x: The float32 activations ``[..., K]``.
        weight: The ``[K, N]`` float32 weight: the stored tensor, or a lazy transpose of it
            (:func:`onnxport.weights.transposed`) when it is stored ``[N, K]``.
        stored: The initializer holding the weight as stored.
        transpose: The ``Transpose`` node through which the graph reads ``stored`` (a tied LM
            head), removed when nothing else reads it; ``None`` when ``stored`` is read directly.
        bias: A 1-D float32 ``[N]`` constant added to the product (``Gemm``'s ``C``), or ``None``.
    """

    x: ir.Value
    weight: ir.TensorProtocol
    stored: ir.Value
    transpose: ir.Node | None = None
    bias: ir.Value | None = None

    @property
    def name(self) -> str:
        """``stored``'s name, plus ``.T`` when ``weight`` is its transpose: the quantized tensors'
        prefix and the quantization report's key."""
        transposed = self.weight is not self.stored.const_value
        return f"{self.stored.name}.T" if transposed else str(self.stored.name)


def _gemm_operands(node: ir.Node) -> tuple[ir.Value | None, ir.Value | None, bool, ir.Value | None] | None:
    """``(A, B, transB, C)`` of a Gemm that is ``A @ op(B) + C`` with a 1-D ``C`` (else ``None``)."""
    attrs = node.attributes
    alpha, beta = attrs.get_float("alpha", 1.0), attrs.get_float("beta", 1.0)
    if alpha != 1.0 or attrs.get_int("transA", 0) != 0:
        return None
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    if bias is not None and (beta != 1.0 or float_initializer(bias, 1) is None):
        return None
    return node.inputs[0], node.inputs[1], attrs.get_int("transB", 0) == 1, bias


def quantizable(node: ir.Node) -> Projection | None:
    """The projection ``node`` computes, when MatMulNBits can take it (see the module docstring),
    else ``None``. Reads no weight."""
    if node.domain != "":
        return None
    if node.op_type == "MatMul" and len(node.inputs) == 2:
        x, b, trans, bias = node.inputs[0], node.inputs[1], False, None
    elif node.op_type == "Gemm" and (operands := _gemm_operands(node)) is not None:
        x, b, trans, bias = operands
    else:
        return None
    if x is None or x.dtype != ir.DataType.FLOAT or b is None:
        return None
    transpose = transposed_initializer(b)
    if transpose is not None:
        b, trans = transpose.inputs[0], not trans
    stored = float_initializer(b, 2)
    if stored is None or b is None or b.name is None:
        return None
    weight = transposed(stored, (1, 0), f"{b.name}.T") if trans else stored
    bias_tensor = float_initializer(bias, 1)
    if bias_tensor is not None and bias_tensor.shape.numpy()[0] != weight.shape.numpy()[1]:
        return None
    return Projection(x, weight, b, transpose, bias)
