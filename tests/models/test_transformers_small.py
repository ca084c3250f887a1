"""Transformers architectures from small configs (random weights), dynamic batch (and sequence)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import onnx
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.testing import tiny_models

from ._helpers import (
    check_against_eager,
    check_onnx,
    dead_code,
    eager_outputs,
    input_shapes,
    output_names,
    padding_mask,
)

pytest.importorskip("transformers")

VOCAB = tiny_models.VOCAB
TEXT_DYNAMIC = {
    "input_ids": {0: "batch", 1: "sequence"},
    "attention_mask": {0: "batch", 1: "sequence"},
}
TEXT_SHAPES = [(2, 8), (3, 5)]  # (batch, sequence): the export shape, then another one


def text_inputs(batch: int, sequence: int) -> dict[str, torch.Tensor]:
    """Random token ids; row 0's last 2 tokens are padding."""
    generator = torch.Generator().manual_seed(batch * 100 + sequence)
    ids = torch.randint(0, VOCAB, (batch, sequence), generator=generator)
    return {"input_ids": ids, "attention_mask": padding_mask(batch, sequence)}


def image_inputs(batch: int, _: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(batch)
    return {"pixel_values": torch.randn(batch, 3, 32, 32, generator=generator)}


def bert() -> torch.nn.Module:
    return tiny_models.build("bert")


def gpt2() -> torch.nn.Module:
    return tiny_models.build("gpt2", use_cache=False)


def llama() -> torch.nn.Module:
    return tiny_models.build("llama", use_cache=False)


def vit() -> torch.nn.Module:
    return tiny_models.build("vit")


@dataclasses.dataclass(frozen=True)
class Case:
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, int], dict[str, torch.Tensor]]
    shapes: list[tuple[int, int]]
    dynamic_shapes: dict[str, Any]
    input_shapes: dict[str, tuple[int | str, ...]]
    output_names: list[str]
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # non-tensor kwargs


TEXT_IN = {"input_ids": ("batch", "sequence"), "attention_mask": ("batch", "sequence")}
NO_CACHE = {"use_cache": False}
CASES = {
    "bert": Case(
        bert,
        text_inputs,
        TEXT_SHAPES,
        TEXT_DYNAMIC,
        TEXT_IN,
        ["last_hidden_state", "pooler_output"],
    ),
    # torch.export wants a dynamic_shapes entry for every forward kwarg, so use_cache gets None.
    "gpt2": Case(
        gpt2,
        text_inputs,
        TEXT_SHAPES,
        {**TEXT_DYNAMIC, "use_cache": None},
        TEXT_IN,
        ["logits"],
        NO_CACHE,
    ),
    "llama": Case(
        llama,
        text_inputs,
        TEXT_SHAPES,
        {**TEXT_DYNAMIC, "use_cache": None},
        TEXT_IN,
        ["logits"],
        NO_CACHE,
    ),
    "vit": Case(
        vit,
        image_inputs,
        [(2, 0), (3, 0)],
        {"pixel_values": {0: "batch"}},
        {"pixel_values": ("batch", 3, 32, 32)},
        ["logits"],
    ),
}


@pytest.fixture(scope="module", params=list(CASES))
def exported(request: pytest.FixtureRequest) -> tuple[Case, torch.nn.Module, onnxport.ONNXProgram]:
    case = CASES[request.param]
    torch.manual_seed(0)
    model = case.build()
    program = onnxport.export(
        model,
        kwargs={**case.inputs(*case.shapes[0]), **case.extra},
        dynamic_shapes=case.dynamic_shapes,
    )
    return case, model, program


def test_graph_signature(exported: tuple[Case, torch.nn.Module, onnxport.ONNXProgram]) -> None:
    case, _, program = exported
    assert input_shapes(program) == case.input_shapes
    assert output_names(program) == case.output_names
    assert all(v.shape[0] == "batch" for v in program.model.graph.outputs)
    check_onnx(program)


@pytest.mark.parametrize("shape_index", [0, 1], ids=["export-shape", "other-shape"])
def test_matches_eager(
    exported: tuple[Case, torch.nn.Module, onnxport.ONNXProgram], shape_index: int
) -> None:
    case, model, program = exported
    inputs = case.inputs(*case.shapes[shape_index])
    outputs = check_against_eager(program, model, atol=1e-4, **inputs, **case.extra)
    assert outputs[0].shape[0] == case.shapes[shape_index][0]


@pytest.mark.parametrize("opset", [18, 20, 23, 26])
def test_bert_opsets(opset: int) -> None:
    model = bert()
    program = onnxport.export(
        model, kwargs=text_inputs(2, 8), dynamic_shapes=TEXT_DYNAMIC, opset_version=opset
    )
    proto = check_onnx(program)
    assert {o.domain: o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")} == {
        "": opset
    }
    for shape in TEXT_SHAPES:
        check_against_eager(program, model, atol=1e-4, **text_inputs(*shape))
    # Gelu is an ONNX op from opset 20; below that it is spelled with Erf.
    op_types = {n.op_type for n in proto.graph.node}
    assert ("Gelu" in op_types) == (opset >= 20)


# ---- regressions: input binding by name, no dead code after optimization ----------------------


def test_kwargs_in_non_signature_order_keep_their_names() -> None:
    model = bert()
    inputs = text_inputs(2, 8)
    program = onnxport.export(
        model, kwargs={"attention_mask": inputs["attention_mask"], "input_ids": inputs["input_ids"]}
    )
    for value in program.model.graph.inputs:
        # Inputs keep the names of the placeholders they stand for (no renaming happened).
        assert value.metadata_props.get("pkg.torch.onnx.original_node_name", value.name) == value.name
    session = ort.InferenceSession(
        program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    actual = session.run(None, {k: v.numpy() for k, v in inputs.items()})
    expected = eager_outputs(model, **inputs)
    assert abs(actual[0] - expected[0].numpy()).max() <= 1e-4


def test_program_call_binds_kwargs_by_name() -> None:
    model = bert()
    inputs = text_inputs(2, 8)
    program = onnxport.export(model, kwargs=inputs)
    check_against_eager(
        program, model, attention_mask=inputs["attention_mask"], input_ids=inputs["input_ids"]
    )


def test_optimized_graph_has_no_dead_code() -> None:
    # Static shapes, so the position ids fold to constants and their producers die.
    program = onnxport.export(bert(), kwargs=text_inputs(2, 8))
    dead_nodes, dead_initializers = dead_code(program.model_proto)
    assert dead_nodes == []
    assert dead_initializers == []


def test_dead_code_helper_sees_live_graph() -> None:
    """Near miss for the test above: the un-optimized graph only holds what is consumed."""
    program = onnxport.export(bert(), kwargs=text_inputs(2, 8), optimize=False)
    _, dead_initializers = dead_code(program.model_proto)
    assert dead_initializers == []
    onnx.checker.check_model(program.model_proto)
