"""Per-tensor transforms: computed when written, from the slot's current source, checked against
their declared dtype and shape; a transpose written in blocks equals the full transpose."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import onnx_ir as ir
import pytest
import torch

from onnxport.errors import InputError, MissingWeightsError
from onnxport.weights import tensor as tensor_mod
from onnxport.weights.sources import CastSource, MissingSource, TorchSource
from onnxport.weights.tensor import Slot, WeightTensor, cast, derive, reshaped, transposed


def _root(array: torch.Tensor, name: str = "w") -> WeightTensor:
    return WeightTensor.root(Slot(name, TorchSource(array)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64])
def test_transpose_in_blocks_equals_full_transpose(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _root((torch.randn(37, 11, 5) * 10).to(dtype))
    monkeypatch.setattr(tensor_mod, "BLOCK_BYTES", 200)  # many blocks
    t = transposed(base, (2, 0, 1), "w.T")
    buffer = io.BytesIO()
    t.tofile(buffer)
    expected = np.ascontiguousarray(base.numpy().transpose(2, 0, 1))
    assert buffer.getvalue() == expected.tobytes() == t.tobytes()
    assert tuple(t.shape.numpy()) == (5, 37, 11) and t.dtype == base.dtype


def test_derive_reads_the_source_when_written() -> None:
    slot = Slot("w", MissingSource("w", ir.DataType.FLOAT, (2, 3)))
    base = WeightTensor.root(slot)
    doubled = derive(base, lambda a: a * 2, dtype=ir.DataType.FLOAT, shape=(2, 3), name="w.x2")
    half = cast(doubled, ir.DataType.FLOAT16, "w.x2.f16")
    flat = reshaped(half, (6,), "w.flat")
    with pytest.raises(MissingWeightsError, match="apply_weights"):
        flat.numpy()
    slot.source = TorchSource(torch.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(flat.numpy(), (np.arange(6.0) * 2).astype(np.float16))
    slot.source = TorchSource(torch.ones(2, 3))  # a new source flows through the whole chain
    np.testing.assert_array_equal(flat.numpy(), np.full(6, 2, np.float16))


def test_derive_several_outputs_of_another_dtype_and_shape() -> None:
    base = _root(torch.randn(4, 8))
    # int4-style: one base, two derived tensors (packed values and per-row scales)
    packed = derive(base, lambda a: (a > 0).astype(np.uint8).reshape(4, 4, 2).sum(-1).astype(np.uint8),
                    dtype=ir.DataType.UINT8, shape=(4, 4), name="w.q")
    scales = derive(base, lambda a: np.abs(a).max(axis=1).astype(np.float32), dtype=ir.DataType.FLOAT, shape=(4,), name="w.s")
    assert packed.numpy().shape == (4, 4) and packed.numpy().dtype == np.uint8
    np.testing.assert_allclose(scales.numpy(), base.numpy().__abs__().max(axis=1))


def test_a_transform_breaking_its_declaration_is_named() -> None:
    base = _root(torch.randn(3, 4))
    wrong = derive(base, lambda a: a.T, dtype=ir.DataType.FLOAT, shape=(3, 4), name="w.bad")
    with pytest.raises(InputError, match=r"w.bad returned float32\[4, 3\]"):
        wrong.numpy()


def test_bfloat16_stays_bits_exact() -> None:
    values = torch.randn(16).to(torch.bfloat16)
    base = _root(values)
    assert base.numpy().dtype == ml_dtypes.bfloat16
    assert base.tobytes() == values.view(torch.int16).numpy().tobytes()


@pytest.mark.parametrize("shape", [(37, 24), (5, 3, 8), (0, 4), ()])
def test_a_cast_weight_is_written_in_blocks(shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """A bfloat16 checkpoint tensor exported in float32 (``CastSource``) is converted and written
    block by block: the same bytes as the whole cast, and the whole converted tensor never made."""
    monkeypatch.setattr(tensor_mod, "BLOCK_BYTES", 200)  # many blocks
    raw = torch.randn(shape).to(torch.bfloat16)
    source = CastSource(TorchSource(raw), ir.DataType.FLOAT)
    weight = WeightTensor.root(Slot("table", source))
    expected = raw.float().numpy().tobytes()
    assert source.tensor().tobytes() == expected
    monkeypatch.setattr(CastSource, "tensor", lambda self: pytest.fail("the whole cast was made"))
    buffer = io.BytesIO()
    weight.tofile(buffer)
    assert buffer.getvalue() == expected
    if raw.dim() == 2 and raw.shape[0] > 0:
        assert len(list(source.blocks(200))) == -(-raw.shape[0] // (200 // (raw.shape[1] * 4)))
