"""capture/conv1d_padding.py: the codec convolutions' padding in integer arithmetic, and their
reflect padding without the branch on the length, equal transformers' own at every length."""

from __future__ import annotations

import pytest
import torch

from onnxport.capture.conv1d_padding import conv1d_padding_patches, pad1d
from onnxport.capture.patches import replaced

transformers = pytest.importorskip("transformers")
encodec = pytest.importorskip("transformers.models.encodec.modeling_encodec")


@pytest.mark.parametrize("length", [1, 2, 3, 5, 6, 7, 12])
def test_pad1d_equals_the_branching_original(length: int) -> None:
    x = torch.randn(2, 3, length)
    for paddings in ((6, 0), (3, 3), (0, 4), (2, 5)):
        expected = encodec.EncodecConv1d._pad1d(x, paddings, mode="reflect")
        torch.testing.assert_close(pad1d(x, paddings, mode="reflect"), expected, rtol=0, atol=0)
    torch.testing.assert_close(pad1d(x, (2, 1), mode="constant", value=0.5),
                               encodec.EncodecConv1d._pad1d(x, (2, 1), mode="constant", value=0.5))


@pytest.mark.parametrize(("kernel", "stride", "dilation"), [(7, 1, 1), (4, 2, 1), (16, 8, 1), (3, 1, 3)])
def test_patched_convolution_equals_eager_and_restores_its_buffers(kernel: int, stride: int, dilation: int) -> None:
    config = transformers.EncodecConfig(use_causal_conv=False, pad_mode="reflect")
    conv = encodec.EncodecConv1d(config, 3, 4, kernel, stride=stride, dilation=dilation).eval()
    buffers = dict(conv.named_buffers())
    modules = [(encodec.__name__, encodec)]
    patches = [p for p in conv1d_padding_patches(modules) if p[0] is encodec.EncodecConv1d]
    assert {name for _, name, _ in patches} == {"forward", "_get_extra_padding_for_conv1d", "_pad1d"}
    for length in (1, 5, 17, 40):
        x = torch.randn(2, 3, length)
        with torch.no_grad():
            expected = conv(x)
            with replaced(patches):
                actual = conv(x)
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6)
    assert list(dict(conv.named_buffers())) == list(buffers)
    assert all(conv.get_buffer(name) is tensor for name, tensor in buffers.items())
    assert isinstance(conv.padding_total, torch.Tensor)
