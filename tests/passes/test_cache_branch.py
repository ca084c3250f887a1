"""``branch_on_flag``: outputs computed on the first step, fed back after it (an encoder-decoder's
cross-attention cache), checked in onnxruntime against eager PyTorch on both branches."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

import onnxport
from onnxport.errors import InputError
from onnxport.passes.cache_branch import branch_on_flag


class CrossAttention(torch.nn.Module):
    """``keys = memory @ W`` (the part that depends on the encoder alone), then attention of
    ``query`` over the keys; returns the scores and the keys (the cacheable output)."""

    def __init__(self) -> None:
        super().__init__()
        self.project = torch.nn.Linear(8, 8)
        self.query = torch.nn.Linear(8, 8, bias=False)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, keys: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if keys is None:
            keys = self.project(memory).transpose(1, 2)
        return torch.softmax(self.query(x) @ keys, dim=-1), keys


def exported() -> tuple[CrossAttention, onnxport.ONNXProgram]:
    torch.manual_seed(0)
    module = CrossAttention().eval()
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    program = onnxport.export(
        module, (x, memory),
        dynamic_shapes=({0: "batch", 1: "sequence"}, {0: "batch", 1: "memory"}),
        input_names=["x", "memory"], output_names=["scores", "present.keys"],
    )  # fmt: skip
    branch_on_flag(program.model, ["present.keys"], ["past.keys"], "use_cache_branch", {2: "memory_out"})
    program.release()
    return module, program


def test_both_branches_match_eager() -> None:
    module, program = exported()
    x, memory = torch.randn(3, 4, 8), torch.randn(3, 7, 8)
    empty = torch.zeros(3, 8, 0)
    with torch.no_grad():
        scores, keys = module(x, memory)
    first = program(x, memory, empty, torch.tensor([False]))
    np.testing.assert_allclose(first[0], scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first[1], keys, rtol=1e-5, atol=1e-6)
    # Later steps: the cached keys are used, the memory is not read (another one gives the same).
    cached = torch.randn(3, 8, 7)
    with torch.no_grad():
        expected, _ = module(x, memory, cached)
    later = program(x, torch.randn(3, 7, 8), cached, torch.tensor([True]))
    np.testing.assert_allclose(later[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(later[1], cached)


def test_projection_moves_into_the_first_step_branch() -> None:
    _, program = exported()
    proto = onnx.shape_inference.infer_shapes(program.model_proto)
    onnx.checker.check_model(proto, full_check=True)
    graph = proto.graph
    assert [i.name for i in graph.input] == ["x", "memory", "past.keys", "use_cache_branch"]
    dims = {
        v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in [*graph.input, *graph.output]
    }
    assert dims["past.keys"] == ["batch", 8, "memory_out"]
    assert dims["present.keys"] == ["batch", 8, "memory_out"]
    assert dims["use_cache_branch"] == [1]
    (branch,) = [n for n in graph.node if n.op_type == "If"]
    subgraphs = {a.name: [n.op_type for n in a.g.node] for a in branch.attribute}
    assert subgraphs["then_branch"] == ["Identity"]
    assert "MatMul" in subgraphs["else_branch"] or "Gemm" in subgraphs["else_branch"]
    # the main graph keeps only the query's projection and the attention product
    assert sum(n.op_type in ("MatMul", "Gemm") for n in graph.node) == 2


def test_unknown_output_is_an_input_error() -> None:
    _, program = exported()
    with pytest.raises(InputError, match="not graph outputs"):
        branch_on_flag(program.model, ["present.values"], ["past.values"], "flag", {})
