"""dynamic_shapes: strings and Dim objects name ONNX dims; a batch of 1 stays dynamic."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import onnxport


class BatchMatMul(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x @ y


def test_dim_objects_keep_their_names_and_auto_stays_symbolic() -> None:
    batch = Dim("batch")
    program = onnxport.export(
        BatchMatMul(), (torch.randn(3, 4, 5), torch.randn(3, 5, 6)),
        dynamic_shapes={"x": {0: batch, 1: Dim.AUTO}, "y": {0: batch}},
    )
    x_shape = program.model.graph.inputs[0].shape
    assert str(x_shape[0]) == "batch" and isinstance(x_shape[1], onnxport_symbolic()) and x_shape[2] == 5
    (out,) = program(torch.randn(2, 7, 5), torch.randn(2, 5, 6))
    assert out.shape == (2, 7, 6)


def onnxport_symbolic() -> type:
    import onnx_ir as ir

    return ir.SymbolicDim


def test_batch_of_one_stays_dynamic() -> None:
    x, y = torch.randn(1, 4, 5), torch.randn(1, 5, 6)
    program = onnxport.export(BatchMatMul(), (x, y), dynamic_shapes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert program.model.graph.inputs[0].shape == ("batch", 4, 5)
    x2, y2 = torch.randn(6, 4, 5), torch.randn(6, 5, 6)
    (out,) = program(x2, y2)
    torch.testing.assert_close(out, x2 @ y2, rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_as_tuple_with_kwargs_order() -> None:
    class Two(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a * 2 + b.sum()

    program = onnxport.export(
        Two(), (), {"b": torch.randn(3), "a": torch.randn(2, 3)},
        dynamic_shapes={"a": {0: "rows"}, "b": None},
    )
    names = {v.name: v.shape for v in program.model.graph.inputs}
    assert names["a"] == ("rows", 3) and names["b"] == (3,)
    a, b = torch.randn(5, 3), torch.randn(3)
    (out,) = program(a=a, b=b) if [v.name for v in program.model.graph.inputs] == ["a", "b"] else program(b=b, a=a)
    torch.testing.assert_close(out, a * 2 + b.sum())


class VarArgs(torch.nn.Module):
    def forward(self, x: torch.Tensor, *states: torch.Tensor) -> torch.Tensor:
        return x + states[0] * states[1]


@pytest.mark.parametrize("as_dict", [False, True])
def test_varargs_spec_is_one_tuple_per_star_parameter(as_dict: bool) -> None:
    """torch.export binds a ``*states`` parameter's spec as one tuple, an entry per element."""
    x, s0, s1 = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    states_spec = ({0: "batch_size"}, {0: "batch_size"})
    spec = {"x": {0: "batch_size"}, "states": states_spec} if as_dict else ({0: "batch_size"}, states_spec)
    program = onnxport.export(VarArgs(), (x, s0, s1), dynamic_shapes=spec)
    assert [v.shape for v in program.model.graph.inputs] == [("batch_size", 3)] * 3
    x, s0, s1 = torch.randn(5, 3), torch.randn(5, 3), torch.randn(5, 3)
    (out,) = program(x, s0, s1)
    assert out.shape == (5, 3) and out.dtype == torch.float32
    torch.testing.assert_close(out, x + s0 * s1)


class AddRows(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def _run_two_shapes(program: onnxport.ONNXProgram, shapes: list[tuple[int, int]]) -> None:
    for rows, cols in shapes:
        x, y = torch.randn(rows, cols), torch.randn(rows, cols)
        torch.testing.assert_close(program(x, y)[0], x + y)


def test_dynamic_axes_legacy_form_keyed_by_input_names() -> None:
    program = onnxport.export(
        AddRows(), (torch.randn(4, 3), torch.randn(4, 3)),
        input_names=["a", "b"], output_names=["out"],
        dynamic_axes={"a": {0: "batch"}, "b": [0], "out": {0: "batch"}},
    )
    shapes = {v.name: v.shape for v in program.model.graph.inputs}
    assert shapes["a"] == ("batch", 3) and shapes["b"] == ("batch", 3)
    assert program.model.graph.outputs[0].shape == ("batch", 3)
    _run_two_shapes(program, [(2, 3), (7, 3)])


def test_dynamic_shapes_keyed_by_input_names() -> None:
    program = onnxport.export(
        AddRows(), (torch.randn(4, 3), torch.randn(4, 3)), input_names=["a", "b"],
        dynamic_shapes={"a": {0: "rows"}, "b": {0: "rows"}},
    )
    assert program.model.graph.inputs[0].shape == ("rows", 3)
    _run_two_shapes(program, [(1, 3), (9, 3)])


def test_dynamic_true_makes_every_axis_dynamic() -> None:
    program = onnxport.export(AddRows(), (torch.randn(4, 3), torch.randn(4, 3)), dynamic=True)
    for value in program.model.graph.inputs:
        assert [str(d) for d in value.shape] == ["x_dim_0", "x_dim_1"]  # x and y are unified
    _run_two_shapes(program, [(2, 5), (6, 1)])


def test_dynamic_true_keeps_axes_the_model_fixes() -> None:
    class FixedCols(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(6, 2)  # fixes the last axis to 6

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x)

    model = FixedCols()
    program = onnxport.export(model, (torch.randn(4, 6),), dynamic=True)
    assert [str(d) for d in program.model.graph.inputs[0].shape] == ["x_dim_0", "6"]
    x = torch.randn(5, 6)
    torch.testing.assert_close(program(x)[0], model(x).detach())


def test_specialized_dim_is_explained_with_input_and_axis() -> None:
    class Reshape4(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return x.reshape(4, -1) + y

    with pytest.raises(onnxport.DynamicShapesError) as info:
        onnxport.export(Reshape4(), (torch.randn(4, 3), torch.randn(4, 3)),
                        dynamic_shapes={"x": {0: "batch"}, "y": {0: "batch2"}})
    text = str(info.value)
    assert "input 'y' axis 0 ('batch2')" in text and "specialized it to be a constant (4)" in text
    assert "Dim.STATIC" in text


def test_conflicting_dims_are_captured_as_hints_with_a_warning() -> None:
    # two Dim objects the code requires equal: torch.export raises ("c = b"); onnxport captures
    # again with Dim.DYNAMIC hints over the same ranges and says why
    with pytest.warns(UserWarning, match=r"Dim.DYNAMIC in place of the Dim objects.*'c'"):
        program = onnxport.export(AddRows(), (torch.randn(4, 3), torch.randn(4, 3)),
                                  dynamic_shapes={"x": {0: Dim("b")}, "y": {0: Dim("c")}})
    x = torch.randn(6, 3)
    torch.testing.assert_close(program(x, x)[0], x + x)


class _BatchedAttention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.attention(x, x, x, key_padding_mask=padding, need_weights=True, average_attn_weights=False)


def test_a_dim_the_code_keeps_from_one_is_relaxed_and_runs_at_one() -> None:
    # nn.MultiheadAttention with a key padding mask guards batch != 1: Dim("batch") (range from 0)
    # was a DynamicShapesError; now the range is the code's and the graph still runs a batch of 1
    batch, seq = Dim("batch"), Dim("sequence")
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(0))
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    model = _BatchedAttention().eval()
    with pytest.warns(UserWarning, match="!= 1"):
        program = onnxport.export(model, (x, padding), dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}))
    one = (x[:1, :3], torch.zeros(1, 3, dtype=torch.bool))
    result = onnxport.verify(program, one, reference=model)
    assert result.passed, result.summary()
    assert [str(d) for d in program.model.graph.inputs[0].shape][:2] == ["batch", "sequence"]


def test_only_plain_dim_objects_become_hints() -> None:
    from onnxport.capture.dynamic_shapes import as_hints

    relaxed = as_hints({"x": {0: Dim("b", min=2, max=9), 1: None}, "y": (Dim.AUTO, 3)})
    hint = relaxed["x"][0]
    assert (hint.type, hint.min, hint.max) == (Dim.DYNAMIC.type, 2, 9)
    assert relaxed["x"][1] is None and relaxed["y"] == (Dim.AUTO, 3)
    assert as_hints({"x": {0: 2 * Dim("h")}}) is None  # a derived dim's relation would be lost
    assert as_hints({"x": {0: Dim.AUTO}}) is None  # nothing to relax


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dynamic_shapes": {"z": {0: "batch"}}}, "dynamic_shapes names 'z', which is not an input"),
        ({"dynamic_shapes": {"x": {2: "batch"}}}, "axis 2 ('batch') of input 'x', which has only 2 dimensions"),
        ({"dynamic_shapes": {"x": {5: Dim.AUTO}}}, "axis 5 of input 'x', which has only 2 dimensions"),
        ({"dynamic_shapes": {"x": [Dim.AUTO]}}, "for input 'x' lists 1 dims; the tensor has 2"),
        ({"dynamic_axes": {"q": [0]}}, "dynamic_axes names 'q', which is neither an input"),
        ({"dynamic_axes": {"x": "batch"}}, "dynamic_axes['x'] must be a dict"),
        ({"dynamic": True, "dynamic_shapes": {"x": {0: "b"}}}, "Give only one of dynamic_shapes, dynamic"),
    ],
    ids=["unknown_name", "axis_beyond_rank", "auto_axis_beyond_rank", "list_wrong_rank", "legacy_unknown",
         "legacy_bad_axes", "two_forms"],
)
def test_bad_specs_name_the_input_and_axis(kwargs: dict, message: str) -> None:
    with pytest.raises(onnxport.InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        onnxport.export(AddRows(), (torch.randn(4, 3), torch.randn(4, 3)), **kwargs)


class _CellLoop(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.GRUCell(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], 8)
        steps = []
        for t in range(x.shape[1]):  # a Python loop over time unrolls at the example's length
            h = self.cell(x[:, t], h)
            steps.append(h)
        return torch.stack(steps, 1)


def test_a_specialized_dim_names_the_users_line() -> None:
    with pytest.raises(onnxport.DynamicShapesError) as info:
        onnxport.export(_CellLoop(), (torch.randn(2, 5, 4),), dynamic_shapes={"x": {0: "batch", 1: "time"}})
    text = str(info.value)
    assert "input 'x' axis 1 ('time')" in text and "constant (5)" in text
    assert "for t in range(x.shape[1])" in text and "test_dynamic_shapes.py" in text
    assert "functional_export.py" not in text  # torch's own frames are left out


class _DownUpConcat(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.avg_pool1d(torch.nn.functional.avg_pool1d(x, 2), 2)
        return torch.cat([x, torch.nn.functional.interpolate(y, scale_factor=4.0)], 1)  # length % 4 == 0


def test_a_divisibility_guard_is_a_warning_not_a_pinned_size() -> None:
    # diffusers' UNet1DModel concatenates a skip with its down- and up-sampled copy: the code guards
    # Eq(4*(s//4), s), true at 32 and 64, false at 31 and 33. That was "only supports size 32".
    with pytest.warns(UserWarning, match=r"axis 2 \('length'\) is dynamic, but the code requires `Eq\(4\*") as record:
        program = onnxport.export(_DownUpConcat(), (torch.randn(2, 3, 32),),
                                  dynamic_shapes={"x": {0: "batch", 2: "length"}})
    assert sum("the code requires" in str(w.message) for w in record) == 1  # not again after decomposition
    x = torch.randn(3, 3, 64)
    actual = program(x)[0]
    assert actual.shape == (3, 6, 64)
    torch.testing.assert_close(actual, _DownUpConcat()(x))


class _WithConfig(torch.nn.Module):
    def forward(self, x: torch.Tensor, cfg: dict, pair: tuple) -> torch.Tensor:
        return x * cfg["scale"] + pair[0] - pair[1]


def test_none_for_a_dict_or_tuple_input_means_all_of_it_static() -> None:
    # torch.export wants the spec to mirror a dict input ("inputs['cfg'] is a <class 'dict'>, but
    # dynamic_shapes['cfg'] is not"); None there means every tensor in it static
    cfg, pair = {"scale": torch.full((1, 4), 2.0)}, (torch.ones(1, 4), torch.zeros(1, 4))
    program = onnxport.export(_WithConfig(), (torch.randn(3, 4), cfg, pair),
                              dynamic_shapes={"x": {0: "batch"}, "cfg": None, "pair": None})
    x = torch.randn(6, 4)
    torch.testing.assert_close(torch.as_tensor(program(x, cfg, pair)[0]), x * 2.0 + 1.0)
