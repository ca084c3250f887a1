"""Fold small constant subexpressions (and ``Shape`` of static shapes) into constants.

Only nodes whose inputs are all small constants (≤ ``MAX_ELEMENTS`` elements) are folded, so weights
are never copied. Common shape-arithmetic ops are evaluated with numpy following their ONNX spec
sections; the transcendental float ops (:data:`_TORCH`: ``Exp``, ``Sin``, ``Pow``...) with
PyTorch's own kernels, so that a folded table is the one eager computes bit for bit (numpy's
float32 ``exp`` differs from torch's by up to 2 ulp on 55 of the 128 frequencies of a diffusers
timestep embedding, and AuraFlow multiplies them by timesteps × 1000 before ``sin``: its output was
3e-4 off eager); any other deterministic op of the default domain is evaluated with ONNX's
reference implementation (``onnx.reference``).

Weight values are never read here: a node computing from one (small) module weight becomes an
initializer derived from it (:func:`onnxport.weights.derive`), evaluated when the weights are
written, so a fake-mode export folds exactly what a normal one does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import onnx_ir as ir
import torch
from onnx.reference import ReferenceEvaluator

from onnxport import weights

MAX_ELEMENTS = 4096


def _attr(node: ir.Node, name: str, default: Any) -> Any:
    attr = node.attributes.get(name)
    return default if attr is None else attr.value


def _slice(node: ir.Node, x: np.ndarray, starts: Any, ends: Any, axes: Any = None, steps: Any = None) -> np.ndarray:
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _reshape(node: ir.Node, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    dims = [x.shape[i] if (d == 0 and not _attr(node, "allowzero", 0)) else int(d) for i, d in enumerate(shape)]
    return x.reshape(dims)


def _unsqueeze(node: ir.Node, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    out_rank = x.ndim + len(axes)
    for a in sorted(int(a) % out_rank for a in axes):
        x = np.expand_dims(x, a)
    return x


def _squeeze(node: ir.Node, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(int(a) for a in axes))


_EVAL: dict[str, Callable[..., np.ndarray]] = {
    "Add": lambda n, a, b: a + b,
    "Sub": lambda n, a, b: a - b,
    "Mul": lambda n, a, b: a * b,
    "Neg": lambda n, a: -a,
    "Equal": lambda n, a, b: np.equal(a, b),
    "Less": lambda n, a, b: np.less(a, b),
    "Greater": lambda n, a, b: np.greater(a, b),
    "Not": lambda n, a: np.logical_not(a),
    "And": lambda n, a, b: np.logical_and(a, b),
    "Or": lambda n, a, b: np.logical_or(a, b),
    "Where": lambda n, c, a, b: cast(np.ndarray, np.where(c, a, b)),  # not the 1-argument overload
    "Max": lambda n, *xs: functools.reduce(np.maximum, xs),
    "Min": lambda n, *xs: functools.reduce(np.minimum, xs),  # broadcasting (np.minimum.reduce stacks)
    "Cast": lambda n, a: a.astype(ir.DataType(_attr(n, "to", 1)).numpy()),
    "Concat": lambda n, *xs: np.concatenate(xs, axis=_attr(n, "axis", 0)),
    "Reshape": _reshape,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Gather": lambda n, x, i: np.take(x, i, axis=_attr(n, "axis", 0)),
    "Identity": lambda n, a: a,
    "Range": lambda n, s, e, d: np.arange(s, e, d, dtype=np.result_type(s)),
    "Expand": lambda n, x, s: x * np.ones([int(d) for d in s], dtype=x.dtype),
    "ConstantOfShape": lambda n, s: np.full([int(d) for d in s], np.asarray(_attr(n, "value", ir.tensor(np.zeros(1, np.float32))).numpy()).reshape(-1)[0]),
}


def _torch(fn: Callable[..., torch.Tensor]) -> Callable[..., np.ndarray]:
    """Evaluate an elementwise op on float32/float64 arrays with PyTorch's CPU kernel (other
    operand dtypes: the reference implementation)."""

    def run(node: ir.Node, *xs: np.ndarray) -> np.ndarray:
        if not all(x.dtype in (np.float32, np.float64) for x in xs):
            return _reference(node, list(xs))
        return fn(*(torch.from_numpy(np.ascontiguousarray(x)) for x in xs)).numpy()

    return run


# ONNX op → the torch function eager would have run (elementwise, same semantics for float inputs).
_TORCH: dict[str, Callable[..., torch.Tensor]] = {
    "Exp": torch.exp, "Log": torch.log, "Sin": torch.sin, "Cos": torch.cos, "Tan": torch.tan,
    "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Erf": torch.erf, "Pow": torch.pow,
    "Atan": torch.atan, "Asin": torch.asin, "Acos": torch.acos, "Sinh": torch.sinh, "Cosh": torch.cosh,
}  # fmt: skip
_EVAL.update({op: _torch(fn) for op, fn in _TORCH.items()})


# Never folded: random ops, and ops whose output depends on more than their inputs.
NOT_FOLDED = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
     "Bernoulli", "Dropout", "If", "Loop", "Scan", "Constant"}
)


def _reference(node: ir.Node, values: list[np.ndarray | None]) -> np.ndarray:
    """Evaluate one node with ``onnx.reference`` (its ONNX reference implementation) on
    ``values``, matched to the inputs by position: a folded weight's node is evaluated when the
    weight is written, after it left the graph, its inputs and output unnamed by then."""
    proto = ir.serde.serialize_node(node)
    names = [f"input_{i}" if v is not None else "" for i, v in enumerate(values)]
    del proto.input[:]
    proto.input.extend(names)
    del proto.output[:]
    proto.output.append("output_0")  # the folded ops have one output
    feeds = {name: v for name, v in zip(names, values) if name}
    try:
        outputs = cast(list[np.ndarray], ReferenceEvaluator(proto).run(None, feeds))
        return outputs[0]
    except Exception as e:  # the reference implementation raises assorted types for unsupported cases
        raise ValueError(str(e)) from e


def _evaluate_node(node: ir.Node, values: list[np.ndarray | None]) -> np.ndarray:
    """``node`` on ``values``: its :data:`_EVAL` entry, else the reference implementation."""
    fn = _EVAL.get(node.op_type)
    return np.asarray(fn(node, *values) if fn is not None else _reference(node, values))


def _const(value: ir.Value | None) -> np.ndarray | None:
    """The numpy value of a small constant (Constant output or small initializer)."""
    if value is None:
        return None
    tensor = value.const_value
    if tensor is None or tensor.size > MAX_ELEMENTS or weights.is_weight(tensor):
        return None
    return tensor.numpy()


def _would_copy(value: ir.Value | None) -> bool:
    """Folding would keep both a weight and a derived copy: an initializer (beyond a few elements)
    with other users stays, so the node is not folded."""
    if value is None or not value.is_initializer() or value.const_value is None:
        return False
    return value.const_value.size > 64 and len(value.uses()) > 1


def _static_shape(value: ir.Value | None) -> list[int] | None:
    if value is None or value.shape is None:
        return None
    dims = list(value.shape)
    ints = [d for d in dims if isinstance(d, int)]
    return ints if len(ints) == len(dims) else None


class FoldConstantsPass(ir.passes.InPlacePass):
    """Replace constant-input nodes (and ``Shape`` of statically shaped values) with ``Constant``s."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        graph = model.graph
        for node in list(graph):
            if self._derive(graph, node):
                modified = True
                continue
            array = self._evaluate(node)
            if array is None:
                continue
            out = node.outputs[0]
            if out.is_graph_output():
                continue
            tensor = ir.tensor(np.array(array, order="C", copy=True), dtype=out.dtype or None)  # keeps 0-D shapes
            const = ir.Node("", "Constant", [], attributes=[ir.AttrTensor("value", tensor)], num_outputs=1)
            const.metadata_props.update(node.metadata_props)
            new = const.outputs[0]
            new.const_value = tensor
            new.dtype = tensor.dtype
            new.shape = ir.Shape(tensor.shape)  # type: ignore[arg-type]
            graph.insert_before(node, const)
            out.replace_all_uses_with(new)
            new.name = out.name
            graph.remove(node, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)

    def _derive(self, graph: ir.Graph, node: ir.Node) -> bool:
        """Fold a node whose inputs are one small module weight and constants into an
        initializer derived from the weight; ``False`` when the node does not qualify."""
        if node.domain != "" or len(node.outputs) != 1 or node.op_type in NOT_FOLDED or not node.inputs:
            return False
        positions = [i for i, v in enumerate(node.inputs) if v is not None and weights.is_weight(v.const_value)]
        out = node.outputs[0]
        shape = _static_shape(out)
        if len(positions) != 1 or out.is_graph_output() or out.dtype is None or shape is None:
            return False
        k = positions[0]
        weight = node.inputs[k]
        assert weight is not None and weight.const_value is not None  # is_weight checked it
        if weight.const_value.size > MAX_ELEMENTS or _would_copy(weight) or int(np.prod(shape)) > MAX_ELEMENTS:
            return False
        values = [_const(v) if v is not None and i != k else None for i, v in enumerate(node.inputs)]
        if any(v is None and inp is not None and i != k for i, (v, inp) in enumerate(zip(values, node.inputs))):
            return False
        target = out.dtype.numpy()

        def compute(array: np.ndarray, node: ir.Node = node, values: list = values, k: int = k) -> np.ndarray:
            result = _evaluate_node(node, [array if i == k else v for i, v in enumerate(values)])
            return np.asarray(result.astype(target, copy=False).reshape(shape), order="C")

        name = out.name or f"{weight.name}.{node.op_type.lower()}"
        value = ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(out.dtype),
                         const_value=weights.derive(weight.const_value, compute, dtype=out.dtype, shape=shape, name=name))
        value.metadata_props.update(node.metadata_props)
        out.name = None
        graph.register_initializer(value)
        out.replace_all_uses_with(value)
        graph.remove(node, safe=True)
        return True

    def _evaluate(self, node: ir.Node) -> np.ndarray | None:
        if node.domain != "" or len(node.outputs) != 1:
            return None
        if node.op_type == "Shape":
            shape = _static_shape(node.inputs[0])
            if shape is None:
                return None
            start, end = _attr(node, "start", 0), _attr(node, "end", None)
            return np.asarray(shape[start:end], dtype=np.int64)
        if node.op_type == "Size":
            shape = _static_shape(node.inputs[0])
            return None if shape is None else np.asarray(int(np.prod(shape)), dtype=np.int64)
        if not node.inputs or node.op_type in NOT_FOLDED:
            return None
        values = [_const(v) if v is not None else None for v in node.inputs]
        if any(v is None and inp is not None for v, inp in zip(values, node.inputs)):
            return None
        if any(_would_copy(v) for v in node.inputs):
            return None
        try:
            result = _evaluate_node(node, values)
        except (ValueError, TypeError, IndexError):  # leave an op numpy cannot evaluate to onnxruntime
            return None
        if result.size > MAX_ELEMENTS:
            return None
        out_dtype = node.outputs[0].dtype
        if out_dtype is not None and result.dtype != out_dtype.numpy():
            result = result.astype(out_dtype.numpy())
        return result
