"""HalfComputePass: half-precision nodes without an onnxruntime CPU kernel run in float32.

Values are checked against eager; the graph checks say which nodes moved to float and which stayed.
"""

from __future__ import annotations

import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport.passes.half_compute import (
    METADATA_KEY,
    HalfComputePass,
    has_kernel,
    kernel_table,
    kernel_table_from_onnxruntime,
)

TOL = {torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (2e-3, 2e-3)}


class NoKernels(torch.nn.Module):
    """MatMul, Softmax, Less, Where, Trilu, ReduceSum, Expand, Exp: no bfloat16 CPU kernels."""

    def forward(
        self, x: torch.Tensor, y: torch.Tensor, ids: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        a = torch.softmax(x @ y, dim=-1)
        b = torch.where(a < 0.2, torch.exp(a), torch.tril(a))
        picked = b[ids]  # Gather has a bfloat16 kernel: stays as it is, indices untouched
        return b.sum(0) + x.new_ones(4).expand(3, 4).sum(0), picked, (a > 0.5)


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return torch.randn(3, 4, dtype=dtype), torch.randn(4, 4, dtype=dtype), torch.tensor([2, 0, 2])


def _check(
    program: onnxport.ONNXProgram, model: torch.nn.Module, inputs: tuple, dtype: torch.dtype
) -> None:
    expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = program(*inputs)
    assert len(actual) == len(expected)
    rtol, atol = TOL[dtype]
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


def _graphs(model: ir.Model) -> list[ir.Graph]:
    graphs = [model.graph]
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                graphs.append(attr.value)
    return graphs


def _half_nodes_without_kernel(model: ir.Model) -> list[str]:
    """Default-domain nodes whose single-constraint half binding has no kernel (a coarse check)."""
    bad = []
    for graph in _graphs(model):
        for node in graph:
            dtypes = {v.dtype for v in [*node.inputs, *node.outputs] if v is not None}
            if node.op_type in ("Cast", "Constant", "If") or not dtypes & {
                ir.DataType.BFLOAT16,
                ir.DataType.FLOAT16,
            }:
                continue
            if node.op_type in (
                "MatMul",
                "Softmax",
                "Where",
                "Trilu",
                "ReduceSum",
                "Exp",
                "Less",
                "Add",
            ):
                bad.append(node.op_type)
    return bad


@pytest.mark.parametrize("optimize", [True, False])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_ops_without_kernels_match_eager(dtype: torch.dtype, optimize: bool) -> None:
    model, inputs = NoKernels(), _inputs(dtype)
    program = onnxport.export(model, inputs, optimize=optimize)
    _check(program, model, inputs, dtype)
    assert _half_nodes_without_kernel(program.model) == []
    nodes = list(program.model.graph)
    where = next(n for n in nodes if n.op_type == "Where")
    assert where.inputs[0].dtype == ir.DataType.BOOL  # the condition is not cast
    assert where.inputs[1].dtype == ir.DataType.FLOAT
    gather = next(n for n in nodes if n.op_type == "Gather")  # has a half kernel
    assert gather.inputs[0].dtype == ir.DataType(
        ir.DataType.BFLOAT16 if dtype == torch.bfloat16 else ir.DataType.FLOAT16
    )
    assert gather.inputs[1].dtype == ir.DataType.INT64
    assert METADATA_KEY not in gather.metadata_props
    matmul = next(n for n in nodes if n.op_type == "MatMul")
    assert matmul.metadata_props[METADATA_KEY] == "float32"
    assert "pkg.torch.onnx.fx_node" in matmul.metadata_props
    # outputs keep their names and dtypes
    out_names = [v.name for v in program.model.graph.outputs]
    assert len(set(out_names)) == len(out_names)


def test_one_cast_per_value_and_names_kept() -> None:
    class TwoUses(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.exp(x) + torch.sin(x)

    x = torch.randn(5, dtype=torch.bfloat16)
    program = onnxport.export(TwoUses(), (x,), optimize=False)
    casts_of_x = [n for n in program.model.graph if n.op_type == "Cast" and n.inputs[0].name == "x"]
    assert len(casts_of_x) == 1
    exp = next(n for n in program.model.graph if n.op_type == "Exp")
    back = next(iter(exp.outputs[0].uses())).node
    assert (
        back.op_type == "Cast" and back.outputs[0].name == "exp"
    )  # the FX name is the bfloat16 value
    assert back.outputs[0].dtype == ir.DataType.BFLOAT16
    _check(program, TwoUses(), (x,), torch.bfloat16)


def test_one_rounding_per_aten_op() -> None:
    """baddbmm is MatMul, Mul, Mul, Add: computed in float together and rounded once, as eager."""

    class Baddbmm(torch.nn.Module):
        def forward(self, i: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.baddbmm(i, a, b, beta=0.5, alpha=2.0)

    torch.manual_seed(0)
    inputs = tuple(torch.randn(*s, dtype=torch.bfloat16) for s in ((2, 3, 5), (2, 3, 4), (2, 4, 5)))
    program = onnxport.export(Baddbmm(), inputs, optimize=False)
    to_half = [
        n
        for n in program.model.graph
        if n.op_type == "Cast" and n.outputs[0].dtype == ir.DataType.BFLOAT16
    ]
    assert [n.outputs[0].name for n in to_half] == ["baddbmm"]
    torch.testing.assert_close(program(*inputs)[0], Baddbmm()(*inputs), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_scatter_reduction(dtype: torch.dtype) -> None:
    """ScatterElements has half kernels that refuse reductions at run time: rewritten too."""

    class ScatterAdd(torch.nn.Module):
        def forward(self, x: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
            return x.scatter_add(0, index, src)

    x = torch.randn(4, 3, dtype=dtype)
    index = torch.tensor([[0, 1, 2], [3, 0, 0]])
    src = torch.randn(2, 3, dtype=dtype)
    program = onnxport.export(ScatterAdd(), (x, index, src))
    _check(program, ScatterAdd(), (x, index, src), dtype)


def test_modules_as_functions() -> None:
    """Outlined functions are built after the pass: their bodies compute in float too."""

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.fc(x), dim=-1)

    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = Block(), Block()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    model = Two().to(torch.bfloat16).eval()
    x = torch.randn(2, 4, dtype=torch.bfloat16)
    for optimize in (True, False):
        program = onnxport.export(model, (x,), optimize=optimize, modules_as_functions=[Block])
        assert program.model.functions
        with torch.no_grad():
            _check(program, model, (x,), torch.bfloat16)


def test_cond_subgraphs_are_rewritten() -> None:
    class Cond(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            def true_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return torch.softmax(x @ y, dim=-1)

            def false_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return torch.exp(x - y)

            return torch.cond(x.sum() > 0, true_fn, false_fn, (x, y))

    model = Cond()
    x, y = torch.randn(4, 4, dtype=torch.bfloat16), torch.randn(4, 4, dtype=torch.bfloat16)
    program = onnxport.export(model, (x, y), optimize=False)
    if_node = next(n for n in program.model.graph if n.op_type == "If")
    branches = [a.value for a in if_node.attributes.values() if a.type == ir.AttributeType.GRAPH]
    assert all(any(n.op_type == "Cast" for n in g) for g in branches)
    assert all(o.dtype == ir.DataType.BFLOAT16 for g in branches for o in g.outputs)
    assert _half_nodes_without_kernel(program.model) == []
    for sign in (1, -1):
        inputs = (sign * x.abs(), y)
        _check(program, model, inputs, torch.bfloat16)


def test_off_switch_leaves_the_graph_unchanged() -> None:
    model, inputs = NoKernels(), _inputs(torch.bfloat16)
    off = onnxport.export(model, inputs, optimize=False, half_precision_compute=None)
    on = onnxport.export(model, inputs, optimize=False)
    off_nodes = [(n.op_type, [v.dtype for v in n.inputs if v is not None]) for n in off.model.graph]
    assert not any(METADATA_KEY in n.metadata_props for n in off.model.graph)
    assert ("MatMul", [ir.DataType.BFLOAT16, ir.DataType.BFLOAT16]) in off_nodes
    # the default export is the same graph plus the pass's Casts
    added = [n for n in on.model.graph if n.metadata_props.get(METADATA_KEY) == "cast"]
    assert added and all(n.op_type == "Cast" for n in added)
    kept = [n.op_type for n in on.model.graph if n.metadata_props.get(METADATA_KEY) != "cast"]
    assert kept == [op for op, _ in off_nodes]
    # and the pass, run on the untouched graph, gives what the default export gives
    assert HalfComputePass()(off.model).modified
    assert [n.op_type for n in off.model.graph] == [n.op_type for n in on.model.graph]
    with pytest.raises(onnxport.OnnxportError, match="half_precision_compute"):
        onnxport.export(model, inputs, half_precision_compute="float16")


def test_float32_graph_not_modified() -> None:
    model = NoKernels()
    inputs = (torch.randn(3, 4), torch.randn(4, 4), torch.tensor([0, 1]))
    program = onnxport.export(model, inputs, optimize=False, half_precision_compute=None)
    assert not HalfComputePass()(program.model).modified


def test_kernel_lookup() -> None:
    assert not has_kernel("Add", 14, {"T": "bfloat16"})
    assert has_kernel("Add", 14, {"T": "float"})
    assert has_kernel("Gather", 13, {"T": "bfloat16", "Tind": "int64"})
    assert not has_kernel("Gather", 13, {"T": "bfloat16", "Tind": "float"})
    assert has_kernel("LayerNormalization", 17, {"T": "bfloat16", "U": "float"})


def test_kernel_table_is_current() -> None:
    """The checked-in table equals the installed onnxruntime's registry (same version only)."""
    import onnxruntime

    version, table = kernel_table()
    if onnxruntime.__version__ != version:
        pytest.skip(
            f"table from onnxruntime {version}, installed {onnxruntime.__version__}: "
            "regenerate with `python -m onnxport.passes.half_compute`"
        )
    live = {op: [tuple(e) for e in entries] for op, entries in kernel_table_from_onnxruntime().items()}
    assert live == table


@pytest.mark.slow
def test_tiny_llama_bfloat16() -> None:
    pytest.importorskip("transformers")
    from onnxport.testing import tiny_models

    model = tiny_models.build("llama", use_cache=False).to(torch.bfloat16)
    torch.manual_seed(1)
    ids = torch.randint(3, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, :2] = 0
    program = onnxport.export(model, (), {"input_ids": ids, "attention_mask": mask})
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).logits
    got = program(input_ids=ids, attention_mask=mask)[0]
    assert got.dtype == torch.bfloat16
    scale = max(1.0, float(expected.float().abs().max()))
    torch.testing.assert_close(got.float(), expected.float(), rtol=1.6e-2, atol=1e-2 * scale)
