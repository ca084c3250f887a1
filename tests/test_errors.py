"""Bad input gets onnxport's own errors, naming what was wrong and what to do; no file left behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import onnxport
from onnxport.errors import (
    CaptureError,
    InputError,
    OpsetError,
    SaveError,
    TranslationError,
    UnsupportedOpError,
)


class AddOne(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


@torch.library.custom_op("onnxport_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _twice_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class UsesCustomOp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.onnxport_test.twice(x)  # the line the error must point at
        return y + 1


def test_model_not_a_module() -> None:
    with pytest.raises(InputError, match="must be a torch.nn.Module.*got function"):
        onnxport.export(lambda x: x, (torch.randn(2),))


def test_args_do_not_match_forward() -> None:
    with pytest.raises(InputError, match=r"do not match forward\(x.*too many positional"):
        onnxport.export(AddOne(), (torch.randn(2), torch.randn(3)))


def test_missing_argument() -> None:
    with pytest.raises(InputError, match="missing a required argument: 'x'"):
        onnxport.export(AddOne(), ())


def test_args_wrong_type() -> None:
    with pytest.raises(InputError, match="args must be a tuple"):
        onnxport.export(AddOne(), {"x": torch.randn(2)})


def test_untranslated_op_names_op_node_and_source_line(tmp_path: Path) -> None:
    out = tmp_path / "m.onnx"
    with pytest.raises(UnsupportedOpError) as info:
        onnxport.export(UsesCustomOp(), (torch.randn(2),), f=out)
    err = info.value
    text = str(err)
    assert "onnxport_test.twice.default" in text
    assert "call_function[target=torch.ops.onnxport_test.twice.default]" in text  # the FX node
    assert "test_errors.py" in text and "the line the error must point at" in text
    assert "Register a translation" in text
    assert err.node_name == "twice"
    assert not out.exists()


def test_translation_bug_becomes_translation_error() -> None:
    registry = onnxport.default_registry().copy()

    @onnxport.translates(torch.ops.onnxport_test.twice.default)
    def broken(ctx: onnxport.Ctx, x: object) -> object:
        raise KeyError("boom")

    registry.register_module(type("M", (), {"broken": broken}))  # type: ignore[arg-type]
    with pytest.raises(TranslationError) as info:
        onnxport.export(UsesCustomOp(), (torch.randn(2),), registry=registry)
    assert "KeyError" in str(info.value) and "test_errors.py" in str(info.value)
    assert info.value.translation is not None and "broken" in info.value.translation


def test_packet_is_rejected() -> None:
    with pytest.raises(InputError, match=r"OpOverloadPacket.*\.default"):
        onnxport.translates(torch.ops.aten.gelu)


def test_unwritable_output_leaves_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "m.onnx"
    with pytest.raises(SaveError, match="does not exist"):
        onnxport.export(AddOne(), (torch.randn(2),), f=missing)
    assert not missing.parent.exists()
    directory = tmp_path / "adir"
    directory.mkdir()
    with pytest.raises(SaveError, match="is a directory"):
        onnxport.export(AddOne(), (torch.randn(2),), f=directory)
    assert list(directory.iterdir()) == []


def test_opset_out_of_range() -> None:
    with pytest.raises(OpsetError, match="opset_version=30.*Use opset_version=26"):
        onnxport.export(AddOne(), (torch.randn(2),), opset_version=30)


def test_opset_below_18_that_cannot_be_converted() -> None:
    class Norm(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.layer_norm(x, (4,))

    with pytest.raises(OpsetError, match="LayerNormalization does not exist at opset 11"):
        onnxport.export(Norm(), (torch.randn(2, 4),), opset_version=11)


def test_capture_failure_is_capture_error() -> None:
    class Uncapturable(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            sys._getframe()  # strict (Dynamo) cannot trace this builtin
            if type(x) is not torch.Tensor:  # non-strict and draft export trace FakeTensors
                raise TypeError("expected a plain torch.Tensor")
            return x + 1

    with pytest.raises(CaptureError, match="could not capture") as info:
        onnxport.export(Uncapturable(), (torch.randn(3),))
    text = str(info.value)
    assert "strict=False" in text and "strict=True" in text and "draft_export" in text
    assert info.value.cause == "unsupported Python construct"
    assert "sys._getframe()" in text and "test_errors.py" in text


def test_wrong_number_of_input_names() -> None:
    with pytest.raises(InputError, match="input_names has 2 names but the model has 1 tensor inputs"):
        onnxport.export(AddOne(), (torch.randn(2),), input_names=["a", "b"])


def test_decomposition_retrace_failure_becomes_capture_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch's run_decompositions re-traces the captured program; when it fails (e.g. Longformer:
    # "MetadataMismatchError: Real tensor propagation found an aliasing mismatch" after draft
    # export) the user gets onnxport's CaptureError with torch's error as the cause
    from onnxport.capture import decomp

    class MetadataMismatch(RuntimeError):
        pass

    def fail(ep, translated):
        raise MetadataMismatch("Real tensor propagation found an aliasing mismatch")

    monkeypatch.setattr(decomp, "decompose", fail)
    with pytest.raises(CaptureError, match="run_decompositions\\) failed: MetadataMismatch: Real tensor") as info:
        onnxport.export(AddOne(), (torch.randn(2, 3),))
    assert isinstance(info.value.__cause__, MetadataMismatch)
    assert "dynamic_shapes" in str(info.value)
