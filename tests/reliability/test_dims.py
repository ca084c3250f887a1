"""Dims: specializations torch records are errors naming input, axis and source line; dim names
agree with example sizes; malformed specs are InputErrors."""

from __future__ import annotations

import pytest
import torch
from tests.reliability.models import AddMul, BatchOneBranch, Linear
from torch.export import Dim

import onnxport
from onnxport.errors import DynamicShapesError, InputError


def test_batch_one_branch_with_dynamic_batch_is_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.onnx"
    with pytest.raises(DynamicShapesError) as info:
        onnxport.export(BatchOneBranch(), (torch.randn(1, 4),), dynamic_shapes={"x": {0: "batch"}}, f=out)
    text = str(info.value)
    assert "Input 'x' axis 0 ('batch')" in text
    assert "models.py" in text and "if x.shape[0] == 1:" in text  # the source line
    assert "size >= 2" in text  # the fix
    assert not out.exists()


class Windows(torch.nn.Module):
    """Views a sequence as 4-token windows: ``view``'s size check (in PyTorch's ``infer_size``)
    requires the length to be a multiple of 4."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        return x.view(b, s // 4, 4, d).sum(2) + x[:, ::4]


def test_a_guard_inside_a_pytorch_op_names_the_models_line() -> None:
    """The guard is recorded inside PyTorch (``torch/_prims_common``); the warning names the line of
    the model that called the op (capture/guard_sources.py), as for a guard in the model's own code.
    The length must be a multiple of 4 (true at 8, 16, 24): a warning, and the graph runs at 12."""
    with pytest.warns(UserWarning) as record:
        program = onnxport.export(Windows(), (torch.randn(2, 8, 3),), dynamic_shapes={"x": {1: "sequence"}})
    text = "\n".join(str(w.message) for w in record if "('sequence') is dynamic, but the code requires" in str(w.message))
    assert "test_dims.py" in text and "x.view(b, s // 4, 4, d)" in text, text
    assert "_prims_common" not in text and "onnxport/capture" not in text, text
    x = torch.randn(2, 12, 3)
    torch.testing.assert_close(torch.as_tensor(program(x)[0]), Windows()(x))


def test_same_model_from_batch_three_is_right_at_every_batch() -> None:
    program = onnxport.export(BatchOneBranch(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: "batch"}})
    for batch in (2, 5):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(program(x)[0], x + 1)


def test_legacy_dynamic_axes_batch_one_branch_is_an_error() -> None:
    with pytest.raises(DynamicShapesError, match="Input 'x' axis 0"):
        onnxport.export(BatchOneBranch(), (torch.randn(1, 4),), dynamic_axes={"x": [0]})


def test_one_name_for_two_sizes() -> None:
    with pytest.raises(DynamicShapesError) as info:
        onnxport.export(AddMul(), (torch.randn(2, 4), torch.randn(3, 4)), dynamic_shapes={"a": {0: "b"}, "b": {0: "b"}})
    text = str(info.value)
    assert "'b'" in text and "input 'a' axis 0 (example size 2)" in text and "input 'b' axis 0 (example size 3)" in text


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"dynamic_shapes": {"x": {"zero": "b"}}}, "uses 'zero' as an axis"),
        ({"dynamic_shapes": {"x": {0.0: "b"}}}, "uses 0.0 as an axis"),
        ({"dynamic_shapes": {"x": {True: "b"}}}, "uses True as an axis"),
        ({"dynamic_axes": {"x": ["0"]}}, "dynamic_axes['x'] uses '0' as an axis"),
        ({"dynamic_axes": {"x": {"a": "batch"}}}, "dynamic_axes['x'] uses 'a' as an axis"),
        ({"dynamic_axes": {"x": {0: 7}}}, "dim names are non-empty strings"),
        ({"dynamic_axes": [0]}, "dynamic_axes must be a dict"),
        ({"dynamic_shapes": 5}, "dynamic_shapes must be a dict"),
        ({"dynamic_shapes": "batch"}, "dynamic_shapes must be a dict"),
        ({"dynamic_shapes": {"x": {0: 3.5}}}, "gives axis 0 the value 3.5"),
        ({"dynamic_shapes": {"x": {0: ""}}}, "gives axis 0 the value ''"),
        ({"dynamic_shapes": {"x": {5: "b"}}}, "declares axis 5"),
        ({"dynamic_shapes": {"nope": {0: "b"}}}, "'nope', which is not an input"),
    ],
)
def test_malformed_specs_are_input_errors(kw, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        onnxport.export(Linear(), (torch.randn(2, 4),), **kw)
    assert needle in str(info.value)


def test_dim_objects_keep_their_name() -> None:
    model = Linear()
    program = onnxport.export(model, (torch.randn(2, 4),), dynamic_shapes={"x": {0: Dim("batch_size")}})
    assert str(program.model.graph.inputs[0].shape[0]) == "batch_size"
    x = torch.randn(6, 4)
    with torch.no_grad():
        torch.testing.assert_close(program(x)[0], model(x), rtol=1e-4, atol=1e-5)
