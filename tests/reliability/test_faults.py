"""Faults: dependency exceptions become onnxport errors naming the cause; report= failures never
replace the export's outcome; CaptureError headlines name the real cause."""

from __future__ import annotations

import io
import warnings

import pytest
import torch
from tests.reliability.models import BatchOneBranch, Linear, Returns

import onnxport
from onnxport.errors import CaptureError, InputError, SaveError


def test_registry_must_be_a_registry() -> None:
    with pytest.raises(InputError, match="registry must be an onnxport.Registry.*got str"):
        onnxport.export(Linear(), (torch.randn(2, 4),), registry="abc")


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"f": 3}, "f must be a path"),
        ({"f": b"m.onnx"}, "f must be a path"),
        ({"f": ""}, "f is an empty string"),
        ({"f": io.StringIO()}, "f is a text file object"),
        ({"optimize": "yes"}, "optimize must be True or False"),
        ({"external_data": "auto"}, "external_data must be True, False or None"),
        ({"report": 3}, "report must be True, False or a path"),
        ({"opset_version": "18"}, "opset_version must be an int"),
    ],
)
def test_bad_arguments_are_input_errors(kw, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError if "opset" not in needle else onnxport.OpsetError) as info:
        onnxport.export(Linear(), (torch.randn(2, 4),), **kw)
    assert needle in str(info.value)


def test_bytesio_destination_holds_a_runnable_model() -> None:
    model, x = Linear(), torch.randn(2, 4)
    buffer = io.BytesIO()
    program = onnxport.export(model, (x,), f=buffer)
    import onnxruntime as ort  # heavy optional dependency, only this test needs it directly

    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(got), model(x), rtol=1e-4, atol=1e-5)
    again = io.BytesIO()
    program.save(again)
    assert again.getvalue() == buffer.getvalue()  # deterministic bytes
    with pytest.raises(SaveError, match="external_data=True needs a path"):
        program.save(io.BytesIO(), external_data=True)
    with pytest.raises(InputError, match="closed file object"):
        closed = io.BytesIO()
        closed.close()
        program.save(closed)


def test_report_into_missing_folder_warns_and_keeps_the_result(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match="could not write the report"):
        program = onnxport.export(Linear(), (torch.randn(2, 4),), f=out, report=tmp_path / "missing" / "r.md")
    assert out.is_file() and program.model.graph.outputs
    assert not (tmp_path / "missing").exists()


def test_report_failure_keeps_the_export_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(UserWarning, match="could not write the report"), pytest.raises(InputError, match="forward returns no tensor"):
        onnxport.export(Returns(lambda x: None), (torch.randn(2, 4),), report=tmp_path / "missing" / "r.md")


def test_report_is_written_on_failure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "r.md"
    with pytest.raises(InputError):
        onnxport.export(Returns(lambda x: None), (torch.randn(2, 4),), report=report)
    assert report.is_file() and "forward returns no tensor" in report.read_text()


@pytest.mark.parametrize(
    ("x", "needle"),
    [
        (torch.randn(2, 5), "Input 'x' axis 1: the model expects size 4"),
        (torch.randn(2, 4, 1), "expects rank 2"),
        (torch.randn(2, 4, dtype=torch.float64), "expects tensor(float) of shape ['batch', 4], got tensor(double)"),
        (torch.ones(2, 4, dtype=torch.int64), "got tensor(int64)"),
    ],
)
def test_program_call_with_wrong_input(x, needle) -> None:  # type: ignore[no-untyped-def]
    program = _dynamic_linear()
    with pytest.raises(InputError) as info:
        program(x)
    assert needle in str(info.value)


def test_program_call_with_wrong_count() -> None:
    program = _dynamic_linear()
    with pytest.raises(InputError, match="takes 1 tensor inputs"):
        program(torch.randn(2, 4), torch.randn(2, 4))
    with pytest.raises(InputError, match="takes 1 tensor inputs"):
        program()


_PROGRAM: list = []


def _dynamic_linear():  # type: ignore[no-untyped-def]
    if not _PROGRAM:
        _PROGRAM.append(onnxport.export(Linear(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: "batch"}}))
    return _PROGRAM[0]


def test_capture_error_names_a_shape_mismatch() -> None:
    with pytest.raises(CaptureError) as info:
        onnxport.export(Linear(), (torch.randn(2, 5),))
    e = info.value
    assert e.cause == "shape mismatch"
    assert str(e).startswith("torch.export could not capture the model: shape mismatch")
    assert "unsupported Python construct" not in str(e).splitlines()[0]
    assert "models.py" in (e.source_line or "") and "self.lin(x)" in (e.source_line or "")


def test_capture_error_names_an_exception_raised_in_forward() -> None:
    def boom(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("the mask must be boolean")

    with pytest.raises(CaptureError) as info:
        onnxport.export(Returns(boom), (torch.randn(2, 4),))
    e = info.value
    assert e.cause == "exception raised in forward"
    assert "ValueError: the mask must be boolean" in str(e)
    assert "test_faults.py" in (e.source_line or "") and "raise ValueError" in (e.source_line or "")


def test_capture_error_names_a_device_mismatch() -> None:
    with pytest.raises(CaptureError) as info:
        onnxport.export(Linear(), (torch.randn(2, 4, device="meta"),))
    assert info.value.cause == "device mismatch"
    assert "meta" in str(info.value) and "same device" in str(info.value)


def test_no_warning_for_a_clean_export(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        onnxport.export(BatchOneBranch(), (torch.randn(3, 4),), f=tmp_path / "m.onnx", report=tmp_path / "r.md")
    assert (tmp_path / "r.md").is_file()


def test_two_exports_give_identical_bytes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model, x = Linear(), torch.randn(2, 4)
    onnxport.export(model, (x,), f=tmp_path / "a.onnx", dynamic_shapes={"x": {0: "batch"}})
    onnxport.export(model, (x,), f=tmp_path / "b.onnx", dynamic_shapes={"x": {0: "batch"}})
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    # no temp folder left; the empty data files of a model whose tensors all stay inline
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.onnx", "a.onnx.data", "b.onnx", "b.onnx.data"]
    assert (tmp_path / "a.onnx.data").stat().st_size == 0
