"""Outputs: at least one, each a tensor or a number (InputError otherwise, before translation)."""

from __future__ import annotations

import pytest
import torch
from tests.reliability.models import Returns

import onnxport
from onnxport.errors import InputError


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda x: None, "forward returns no tensor"),
        (lambda x: (), "forward returns no tensor"),
        (lambda x: {}, "forward returns no tensor"),
        (lambda x: (x + 1, "hello"), "forward returns a str ('hello') as output 1"),
        (lambda x: (None, None), "forward returns no tensor"),
    ],
)
def test_bad_outputs_are_input_errors(make, needle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.onnx"
    with pytest.raises(InputError) as info:
        onnxport.export(Returns(make), (torch.randn(2, 3),), f=out)
    assert needle in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_numbers_become_0d_tensors_and_none_is_dropped() -> None:
    x = torch.randn(2, 3)
    program = onnxport.export(Returns(lambda x: (x * 2, None, 3, x.shape[0], 2.5)), (x,), dynamic_shapes={"x": {0: "b"}})
    outputs = program(torch.ones(5, 3))
    assert len(outputs) == 4
    torch.testing.assert_close(outputs[0], torch.full((5, 3), 2.0))
    assert outputs[1].shape == () and outputs[1].dtype == torch.int64 and int(outputs[1]) == 3
    assert int(outputs[2]) == 5  # x.shape[0] follows the input
    assert outputs[3].dtype == torch.float32 and float(outputs[3]) == 2.5
