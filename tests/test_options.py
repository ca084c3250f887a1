"""options.ExportOptions: every export parameter validated once, frozen; the opset policy."""

from __future__ import annotations

import dataclasses

import pytest

from onnxport.errors import InputError, OpsetError
from onnxport.options import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, ExportOptions, check_opset


def test_defaults_and_target_opset() -> None:
    options = ExportOptions.create()
    assert options.opset == DEFAULT_OPSET == 23
    assert options.target_opset == DEFAULT_OPSET
    old = ExportOptions.create(opset_version=13)
    assert (old.opset, old.target_opset) == (13, MIN_OPSET)  # translated at 18, then converted


def test_frozen() -> None:
    options = ExportOptions.create(input_names=["a", "b"])
    assert options.input_names == ("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.verify = True  # type: ignore[misc]


@pytest.mark.parametrize("opset", [MAX_OPSET + 1, 0, "23", True])
def test_bad_opset(opset: object) -> None:
    with pytest.raises(OpsetError, match="opset_version"):
        check_opset(opset)  # type: ignore[arg-type]
    with pytest.raises(OpsetError):
        ExportOptions.create(opset_version=opset)  # type: ignore[arg-type]


def test_bad_half_precision_compute_and_names() -> None:
    with pytest.raises(InputError, match="half_precision_compute must be 'float32' or None"):
        ExportOptions.create(half_precision_compute="float16")
    with pytest.raises(InputError, match="input_names must be a list of strings"):
        ExportOptions.create(input_names="x")
