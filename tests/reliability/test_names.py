"""Names: input_names/output_names are checked before capture (InputError saying what to change)."""

from __future__ import annotations

import pytest
import torch
from tests.reliability.models import AddMul

import onnxport
from onnxport.errors import InputError


def _export(**kw):  # type: ignore[no-untyped-def]
    return onnxport.export(AddMul(), (torch.randn(2, 3), torch.randn(2, 3)), **kw)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"input_names": ["a", "a"]}, "input_names repeats 'a'"),
        ({"output_names": ["y", "y"]}, "output_names repeats 'y'"),
        ({"input_names": [1, 2]}, "input_names[0] is 1"),
        ({"input_names": ["a", ""]}, "input_names[1] is ''"),
        ({"output_names": [None]}, "output_names[0] is None"),
        ({"input_names": "ab"}, "input_names must be a list of strings"),
        ({"input_names": ["a", "b"], "output_names": ["b", "c"]}, "['b'] named both an input and an output"),
    ],
)
def test_bad_names_are_input_errors(kw, needle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.onnx"
    with pytest.raises(InputError) as info:
        _export(f=out, **kw)
    assert needle in str(info.value)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_good_names_are_kept_and_run() -> None:
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    program = onnxport.export(AddMul(), (a, b), input_names=["left", "right"], output_names=["sum", "product"])
    assert [v.name for v in program.model.graph.inputs] == ["left", "right"]
    assert [v.name for v in program.model.graph.outputs] == ["sum", "product"]
    got = program(a, b)
    torch.testing.assert_close(got[0], a + b)
    torch.testing.assert_close(got[1], a * b)
