"""Helpers for the end-to-end model tests: eager vs onnxruntime comparison, graph checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx
import torch

import onnxport


def eager_outputs(model: torch.nn.Module, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
    """Run ``model`` eagerly (no grad) and return its tensor outputs, flattened in pytree order."""
    with torch.no_grad():
        out = model(*args, **kwargs)
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def assert_close(
    actual: Sequence[torch.Tensor],
    expected: Sequence[torch.Tensor],
    *,
    atol: float = 1e-4,
    names: Sequence[str] = (),
) -> None:
    """Same number of outputs, same shapes and dtypes, and max abs difference ≤ ``atol``."""
    assert len(actual) == len(expected), (
        f"{len(actual)} ONNX outputs vs {len(expected)} eager outputs"
    )
    for i, (a, e) in enumerate(zip(actual, expected)):
        label = names[i] if i < len(names) else f"output {i}"
        assert a.shape == e.shape, f"{label}: shape {tuple(a.shape)} != eager {tuple(e.shape)}"
        assert a.dtype == e.dtype, f"{label}: dtype {a.dtype} != eager {e.dtype}"
        assert torch.isfinite(e).all(), f"{label}: eager output is not finite; fix the test inputs"
        diff = (a - e).abs().max().item() if a.numel() else 0.0
        assert diff <= atol, f"{label}: max abs diff {diff:.3g} > {atol:g}"


def check_against_eager(
    program: onnxport.ONNXProgram,
    model: torch.nn.Module,
    *args: Any,
    atol: float = 1e-4,
    **kwargs: Any,
) -> list[torch.Tensor]:
    """Run ``program`` and ``model`` on the same inputs, compare, and return the ONNX outputs."""
    actual = program(*args, **kwargs)
    names = [v.name or "" for v in program.model.graph.outputs]
    assert_close(actual, eager_outputs(model, *args, **kwargs), atol=atol, names=names)
    return actual


def input_shapes(program: onnxport.ONNXProgram) -> dict[str, tuple[int | str, ...]]:
    """Graph input name → shape, symbolic dims as their names."""
    return {
        v.name or "": tuple(d if isinstance(d, int) else str(d) for d in v.shape)
        for v in program.model.graph.inputs
    }


def output_names(program: onnxport.ONNXProgram) -> list[str]:
    return [v.name or "" for v in program.model.graph.outputs]


def check_onnx(program: onnxport.ONNXProgram) -> onnx.ModelProto:
    """The model proto, after ``onnx.checker.check_model(full_check=True)`` passed on it."""
    proto = program.model_proto
    onnx.checker.check_model(proto, full_check=True)
    return proto


def dead_code(proto: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """(outputs of nodes nobody consumes, initializers nobody consumes) in the main graph."""
    graph = proto.graph
    consumed = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    dead_nodes = [
        f"{n.op_type}:{n.output[0]}" for n in graph.node if not any(o in consumed for o in n.output)
    ]
    dead_inits = [i.name for i in graph.initializer if i.name not in consumed]
    return dead_nodes, dead_inits


def padding_mask(batch: int, sequence: int, *, pad_row0: int = 2) -> torch.Tensor:
    """An int64 attention mask of ones whose row 0 ends with ``pad_row0`` zeros (right padding)."""
    mask = torch.ones(batch, sequence, dtype=torch.long)
    mask[0, sequence - pad_row0 :] = 0
    return mask
