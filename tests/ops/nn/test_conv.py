"""Convolutions against eager: transposed convolution output_padding, integer and bfloat16 convolutions."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- conv, pad, norm --------------------------------------------------------------------------

def test_conv_transpose_output_padding_at_least_stride() -> None:
    x, w, b = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 2), torch.randn(3)
    check_against_eager(lambda a, c, d: F.conv_transpose2d(a, c, d, stride=(2, 1), padding=(1, 0), output_padding=(2, 1),
                                              dilation=(3, 2)), x, w, b)
    x3, w3 = torch.randn(1, 2, 3, 4, 3), torch.randn(2, 2, 2, 2, 2)
    check_against_eager(lambda a, c: F.conv_transpose3d(a, c, stride=2, padding=1, output_padding=3, dilation=4), x3, w3)


# -- dtypes without onnxruntime kernels (computed in float, cast back) --------------------------

@pytest.mark.parametrize("dtype", [torch.int64, torch.bfloat16])
def test_convolutions_of_integers_and_bfloat16(dtype: torch.dtype) -> None:
    x, w = torch.randint(-3, 4, (1, 2, 5, 5)).to(dtype), torch.randint(-3, 4, (2, 3, 3, 3)).to(dtype)
    check_against_eager(lambda a, c: F.conv_transpose2d(a, c, stride=2), x, w, rtol=0, atol=0)
    check_against_eager(lambda a, c: F.conv2d(a, c.transpose(0, 1)), x, w, rtol=0, atol=0)


@pytest.mark.parametrize(("kernel", "dilation"), [(3, 2), (4, 3), (5, 1)])
def test_same_padding_with_dilation(kernel: int, dilation: int) -> None:
    # torch pads d·(k−1) in total, the left half rounded down; onnxruntime refuses auto_pad
    # SAME_UPPER with a dilation, so the pads are explicit
    conv = torch.nn.Conv1d(4, 6, kernel, dilation=dilation, padding="same")
    check_against_eager(conv, torch.randn(2, 4, 37), dynamic_shapes={"input": {0: "batch", 2: "time"}},
                        others=((torch.randn(1, 4, 20),),))
