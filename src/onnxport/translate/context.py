"""What a translation receives: :class:`Ctx` (opset, FX node, constants) and :class:`OpBuilder`."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import onnx_ir as ir
import torch

from onnxport.errors import UnsupportedOpError

if TYPE_CHECKING:
    import torch.fx


_TORCH_TO_IR = {
    torch.float32: ir.DataType.FLOAT,
    torch.float16: ir.DataType.FLOAT16,
    torch.bfloat16: ir.DataType.BFLOAT16,
    torch.float64: ir.DataType.DOUBLE,
    torch.int64: ir.DataType.INT64,
    torch.int32: ir.DataType.INT32,
    torch.int16: ir.DataType.INT16,
    torch.int8: ir.DataType.INT8,
    torch.uint8: ir.DataType.UINT8,
    torch.uint16: ir.DataType.UINT16,
    torch.uint32: ir.DataType.UINT32,
    torch.uint64: ir.DataType.UINT64,
    torch.bool: ir.DataType.BOOL,
    torch.complex64: ir.DataType.COMPLEX64,
    torch.complex128: ir.DataType.COMPLEX128,
    torch.float8_e4m3fn: ir.DataType.FLOAT8E4M3FN,
    torch.float8_e5m2: ir.DataType.FLOAT8E5M2,
}


def ir_dtype(dtype: torch.dtype) -> ir.DataType:
    """The ONNX element type of a torch dtype."""
    return _TORCH_TO_IR[dtype]


# Ops whose output has the shape of their first input: the builder records it, so translations can
# ask the rank of intermediate values (the dispatcher sets FX-node outputs from meta["val"]).
SHAPE_PRESERVING = frozenset(
    {"Cast", "Identity", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt",
     "Reciprocal", "Sign", "Not", "Softmax", "LogSoftmax", "Gelu", "Floor", "Ceil", "Round",
     "CumSum", "IsNaN", "IsInf", "LayerNormalization", "BatchNormalization", "Dropout",
     "ScatterElements", "ScatterND", "Trilu", "Clip", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
     "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Elu", "LeakyRelu", "HardSigmoid",
     "HardSwish", "Mish", "BitwiseNot", "InstanceNormalization", "GroupNormalization",
     "RMSNormalization"}
)


# Ops whose (first) output has the element type of their first input (Where: of its second): the
# builder records it, so translations can ask the dtype of intermediate values.
DTYPE_PRESERVING = SHAPE_PRESERVING | frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Reshape", "Transpose",
     "Squeeze", "Unsqueeze", "Expand", "Slice", "Gather", "GatherElements", "GatherND", "Concat",
     "Tile", "Pad", "Flatten", "Split", "TopK", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
     "ReduceProd", "ReduceL1", "ReduceL2", "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool",
     "AveragePool", "GlobalAveragePool", "Resize", "Compress", "BitwiseAnd", "BitwiseOr",
     "BitwiseXor", "And", "Or", "Xor", "DepthToSpace", "SpaceToDepth", "GridSample", "Col2Im",
     "Trilu", "Range"}
)


_BOOL_OUTPUT = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "IsNaN", "IsInf", "Not"})
_INT64_OUTPUT = frozenset({"Shape", "Size", "NonZero", "ArgMax", "ArgMin"})


class OpBuilder:
    """Creates ONNX nodes in one graph: ``op.Add(a, b)``, ``op.Split(x, _outputs=2, axis=0)``.

    Keyword arguments are node attributes, except ``_outputs`` (number of outputs), ``_domain``
    and ``_version`` (the custom domain's opset version, default 1, imported by the model). ``None`` inputs are kept as empty (omitted optional) inputs; trailing ``None``
    inputs are dropped. Every node created is recorded in :attr:`nodes` until :meth:`take_nodes`.
    """

    def __init__(self, graph: ir.Graph) -> None:
        self._graph = graph
        self._nodes: list[ir.Node] = []
        self.domains: dict[str, int] = {}  # custom domains used → opset version

    def __getattr__(self, op_type: str) -> Any:
        if op_type.startswith("_"):
            raise AttributeError(op_type)

        def make(*inputs: ir.Value | None, **attrs: Any) -> Any:
            return self.node(op_type, inputs, attrs)

        return make

    def node(
        self, op_type: str, inputs: Sequence[ir.Value | None], attrs: dict[str, Any]
    ) -> Any:
        outputs = attrs.pop("_outputs", 1)
        domain = attrs.pop("_domain", "")
        version = attrs.pop("_version", 1)
        if domain not in ("", "ai.onnx"):
            self.domains.setdefault(domain, int(version))
        inputs = list(inputs)
        while inputs and inputs[-1] is None:
            inputs.pop()
        attributes = [
            ir.convenience.convert_attribute(name, value)
            for name, value in attrs.items()
            if value is not None
        ]
        node = ir.Node(domain, op_type, inputs, attributes=attributes, num_outputs=outputs)
        self._graph.append(node)
        self._nodes.append(node)
        if op_type in SHAPE_PRESERVING and domain == "" and inputs and inputs[0] is not None:
            out = node.outputs[0]
            if inputs[0].shape is not None:
                out.shape = inputs[0].shape
            dtype = (ir.DataType(attrs["to"]) if op_type == "Cast"
                     else ir.DataType.BOOL if op_type in _BOOL_OUTPUT else inputs[0].dtype)
            if dtype is not None:
                out.dtype = dtype
        elif op_type in DTYPE_PRESERVING and domain == "" and inputs and inputs[0] is not None:
            if inputs[0].dtype is not None:
                node.outputs[0].dtype = inputs[0].dtype
        elif op_type == "Where" and domain == "" and len(inputs) == 3 and inputs[1] is not None:
            if inputs[1].dtype is not None:
                node.outputs[0].dtype = inputs[1].dtype
        elif op_type in _BOOL_OUTPUT and domain == "":
            node.outputs[0].dtype = ir.DataType.BOOL
        elif op_type in _INT64_OUTPUT and domain == "":
            node.outputs[0].dtype = ir.DataType.INT64
        if outputs == 1:
            return node.outputs[0]
        return tuple(node.outputs)

    def take_nodes(self) -> list[ir.Node]:
        """Return the nodes created since the last call and forget them."""
        nodes, self._nodes = self._nodes, []
        return nodes


class Ctx:
    """The context of one translation call.

    Attributes:
        op: The :class:`OpBuilder` of the graph being built.
        opset: The target ONNX opset (default domain).
        node: The FX node being translated (``None`` outside a translation).
    """

    def __init__(self, graph: ir.Graph, opset: int) -> None:
        self.graph = graph
        self.op = OpBuilder(graph)
        self.opset = opset
        self.node: torch.fx.Node | None = None
        # Set by the graph translator: subgraph(module, operands, inputs=(), name=...) -> ir.Graph
        # translates an FX GraphModule into an ONNX subgraph (If/Loop/Scan bodies).
        self.subgraph: Any = None
        # Set by the graph translator: inline(module, operands) -> outputs translates an FX
        # GraphModule into the current graph.
        self.inline: Any = None
        self._const_cache: dict[tuple[Any, ...], ir.Value] = {}

    # -- constants ---------------------------------------------------------------------------
    def const(self, value: Any, dtype: ir.DataType | torch.dtype | None = None) -> ir.Value:
        """A constant value (a ``Constant`` node), cached per graph by value and dtype.

        Args:
            value: A Python scalar, (nested) list, numpy array or torch tensor.
            dtype: Element type; by default inferred (int → INT64, float → FLOAT, bool → BOOL).
        """
        if isinstance(dtype, torch.dtype):
            dtype = ir_dtype(dtype)
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            if dtype is not None and dtype != ir_dtype(value.dtype):
                value = value.to(ir.tensor_adapters.to_torch_dtype(dtype))
            array: Any = value
            key = None
        else:
            if dtype is None:
                array = np.asarray(value)
                if array.dtype == np.float64:
                    array = array.astype(np.float32)
                elif array.dtype == np.int32 or array.dtype == np.uint64:
                    array = array.astype(np.int64)
            else:
                array = np.asarray(value, dtype=dtype.numpy())
            key = (array.dtype.str, array.shape, array.tobytes()) if array.size <= 64 else None
        if key is not None and key in self._const_cache:
            return self._const_cache[key]
        tensor = (
            ir.tensor_adapters.TorchTensor(array)
            if isinstance(array, torch.Tensor)
            else ir.tensor(array, dtype=dtype)
        )
        out = self.op.Constant(value=tensor)
        out.const_value = tensor
        out.dtype = tensor.dtype
        out.shape = ir.Shape(tensor.shape.numpy())
        if key is not None:
            self._const_cache[key] = out
        return out

    def shape_tensor(self, sizes: Sequence[int | ir.Value]) -> ir.Value:
        """A 1-D INT64 tensor from a mix of Python ints and 0-D / 1-element INT64 values."""
        if all(isinstance(s, int) for s in sizes):
            return self.const(list(sizes), ir.DataType.INT64)
        parts: list[ir.Value] = []
        pending: list[int] = []
        for size in sizes:
            if isinstance(size, int):
                pending.append(size)
                continue
            if pending:
                parts.append(self.const(pending, ir.DataType.INT64))
                pending = []
            parts.append(self.op.Reshape(size, self.const([1])))
        if pending:
            parts.append(self.const(pending, ir.DataType.INT64))
        return parts[0] if len(parts) == 1 else self.op.Concat(*parts, axis=0)

    # -- errors ------------------------------------------------------------------------------
    def unsupported(self, why: str) -> NoReturn:
        """Raise :class:`UnsupportedOpError` for the current node, explaining ``why``."""
        raise UnsupportedOpError(f"{self.node.target if self.node else 'op'}: {why}", self.node)

    # -- helpers ----------------------------------------------------------------------------
    def val(self, name: str = "val") -> Any:
        """The FakeTensor (or SymInt) the current FX node produces (``node.meta["val"]``)."""
        assert self.node is not None
        return self.node.meta.get(name)

    def arg_val(self, index: int = 0) -> Any:
        """The FakeTensor (``meta["val"]``) of the current node's ``index``-th positional argument.

        A list argument (``Tensor[]``, ``Tensor?[]``) gives a list with one entry per element.
        ``None`` (or a ``None`` entry) for an argument that is not an FX node — a Python scalar,
        ``None``, a missing trailing argument — and outside a translation (:attr:`node` unset).
        """
        if self.node is None or index >= len(self.node.args):
            return None
        arg = self.node.args[index]
        if isinstance(arg, (list, tuple)):
            return [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in arg]
        return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None

    def used_outputs(self) -> set[int] | None:
        """The indices of the current (multi-output) node's results its users read.

        Each ``operator.getitem`` user that is itself read contributes its index (torch.export
        keeps the unread ``getitem`` of an ignored result); ``None`` when some user takes the
        result as a whole (every output may be read). Empty outside a translation.
        """
        if self.node is None:
            return set()
        used: set[int] = set()
        for user in self.node.users:
            index = user.args[1] if user.target is operator.getitem and len(user.args) > 1 else None
            if not isinstance(index, int):
                return None
            if user.users:
                used.add(index)
        return used

    def out_dtype(self) -> ir.DataType:
        """ONNX element type of the current node's (first) output."""
        val = self.val()
        if isinstance(val, (tuple, list)):
            val = val[0]
        return ir_dtype(val.dtype)
