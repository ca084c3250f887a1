"""Layout ops against eager: as_strided on views and out of bounds, bfloat16 expand/repeat/masked_select/var."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- views ------------------------------------------------------------------------------------

def test_as_strided_on_a_partial_view_uses_the_input_storage_offset() -> None:
    base = torch.randn(20)
    x = base[5:15]
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2)), x)
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2), 10), x)
    check_against_eager(lambda t: torch.as_strided(t, (3, 2), (2, 1), 1), torch.randn(4, 5).t())


def test_as_strided_outside_the_input_is_unsupported() -> None:
    x = torch.randn(20)[5:15]
    with pytest.raises(onnxport.UnsupportedOpError, match="outside the input"):
        onnxport.export(Fn(lambda t: torch.as_strided(t, (2, 2), (1, 2), 0)), (x,))


def test_bfloat16_expand_repeat_masked_select_var() -> None:
    x = torch.randn(3, 1).bfloat16()
    check_against_eager(lambda t: t.expand(3, 4), x, rtol=0, atol=0)
    check_against_eager(lambda t: t.repeat(2, 3), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.zeros_like(t) + t, x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.masked_select(t, t > 0), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.var_mean(t, 0), torch.randn(5, 3).bfloat16(), rtol=1.6e-2, atol=1e-2)


class _Chunks(torch.nn.Module):
    """Longformer's ``_chunk`` (transformers 5.23): overlapping chunks of a (batch·heads, sequence,
    head) view through as_strided, its sizes and strides symbolic in the batch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, sequence, hidden = x.shape
        v = x.view(batch, sequence, 2, hidden // 2).transpose(1, 2).reshape(batch * 2, sequence, hidden // 2)
        st = v.stride()
        size = [v.size(0), v.size(1) // 4 - 1, 8, v.size(2)]
        return v.as_strided(size=size, stride=[st[0], st[1] * 4, st[1], st[2]]) * 2


class _TransposedWindows(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.transpose(0, 1)  # strides symbolic in both dims
        return y.as_strided((y.shape[0], 2, 3), (y.stride(0), y.stride(1), y.stride(1)))


@pytest.mark.parametrize(("model", "example", "dynamic", "other"), [
    (_Chunks(), (2, 16, 8), {"x": {0: "batch"}}, (3, 16, 8)),
    (_TransposedWindows(), (4, 5), {"x": {0: "rows", 1: "cols"}}, (6, 7)),
], ids=["chunks", "transposed"])
def test_as_strided_with_symbolic_sizes_and_strides(model: torch.nn.Module, example: tuple, dynamic: dict,
                                                      other: tuple) -> None:
    program = onnxport.export(model, (torch.randn(*example),), dynamic_shapes=dynamic)
    for shape in (example, other):
        x = torch.randn(*shape)
        expected = model(x)
        actual = torch.as_tensor(program(x)[0])
        assert actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
