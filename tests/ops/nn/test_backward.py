"""The Core ATen backward ops (onnxport.ops.nn.backward) against eager ATen and against autograd."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

import onnxport
from _eager import Fn, check_against_eager
from onnxport.errors import UnsupportedOpError

aten = torch.ops.aten
RTOL, ATOL = 2e-4, 2e-5


# Fixed arities for dynamic_shapes, which torch.export matches to named parameters.
class Fn2(Fn):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Any:  # type: ignore[override]
        return self.fn(a, b)


class Fn3(Fn):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Any:  # type: ignore[override]
        return self.fn(a, b, c)


class Fn5(Fn):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor,  # type: ignore[override]
                e: torch.Tensor) -> Any:
        return self.fn(a, b, c, d, e)


def _present(out: Any) -> tuple[torch.Tensor, ...]:
    out = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(t for t in out if t is not None)


def _check(fn: Any, args: tuple, *, dynamic_shapes: Any = None, others: tuple = (), rtol: float = RTOL,
           atol: float = ATOL, expected: Any = None) -> onnxport.ONNXProgram:
    """Export ``fn`` (its None outputs dropped), compare dtype, shape and values with eager (or with
    ``expected``) on ``args`` and each input tuple of ``others``."""
    cls = Fn if dynamic_shapes is None else {2: Fn2, 3: Fn3, 5: Fn5}[len(args)]
    model = cls(lambda *a: _present(fn(*a)))
    return check_against_eager(model, *args, dynamic_shapes=dynamic_shapes, others=others, rtol=rtol, atol=atol,
                               equal_nan=False, expected=None if expected is None else _present(expected)).program


def _op_types(program: onnxport.ONNXProgram) -> list[str]:
    return [node.op_type for node in program.model.graph]


# -- adaptive average pooling --------------------------------------------------------------------------


@pytest.mark.parametrize(("in_size", "out_size"), [
    ((7, 10), (3, 4)),  # non-uniform, overlapping bins
    ((8, 8), (4, 4)),  # uniform bins
    ((5, 6), (1, 1)),  # global
    ((4, 3), (5, 7)),  # more bins than elements: bins repeat elements
])
def test_adaptive_avg_pool2d_backward(in_size: tuple[int, int], out_size: tuple[int, int]) -> None:
    x = torch.randn(2, 3, *in_size)
    program = _check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), (torch.randn(2, 3, *out_size), x))
    assert "MatMul" in _op_types(program)


def test_adaptive_avg_pool2d_backward_unbatched_and_dynamic_batch() -> None:
    _check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), (torch.randn(3, 2, 5), torch.randn(3, 7, 9)))
    batch = torch.export.Dim("batch", min=2)
    _check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), (torch.randn(2, 3, 2, 5), torch.randn(2, 3, 7, 9)),
           dynamic_shapes=({0: batch}, {0: batch}), others=((torch.randn(5, 3, 2, 5), torch.randn(5, 3, 7, 9)),))


def test_adaptive_avg_pool2d_backward_refuses_dynamic_spatial_sizes() -> None:
    height = torch.export.Dim("height", min=4)
    model = Fn2(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x))
    with pytest.raises(UnsupportedOpError, match="static sizes"):
        onnxport.export(model, (torch.randn(1, 2, 2, 3), torch.randn(1, 2, 7, 9)),
                        dynamic_shapes=(None, {2: height}))


# -- average pooling ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "kernel", "stride", "padding", "ceil_mode", "count_include_pad", "divisor"), [
    ((8, 8), [2, 2], [2, 2], [0, 0], False, True, None),
    ((7, 8), [3, 3], [2, 2], [1, 1], True, False, None),  # ceil_mode window past the padding, pad excluded
    ((7, 8), [3, 3], [2, 2], [1, 1], True, True, None),  # ... pad counted up to in + pad only
    ((9, 6), [3, 2], [2, 1], [1, 0], False, False, None),  # anisotropic
    ((7, 7), [3, 3], [2, 2], [1, 1], False, True, 4),  # divisor_override
    ((7, 8), [3, 3], [2, 2], [1, 1], True, False, 5),  # divisor_override with ceil_mode
    ((6, 9), [2, 3], [], [0, 1], False, True, None),  # stride defaults to the kernel
    ((5, 5), [5, 5], [1, 1], [2, 2], False, False, None),  # windows mostly padding
])
def test_avg_pool2d_backward(size: tuple[int, int], kernel: list[int], stride: list[int], padding: list[int],
                             ceil_mode: bool, count_include_pad: bool, divisor: int | None) -> None:
    x = torch.randn(2, 3, *size)
    y = F.avg_pool2d(x, kernel, stride or None, padding, ceil_mode, count_include_pad, divisor)
    _check(lambda g, x: aten.avg_pool2d_backward(g, x, kernel, stride, padding, ceil_mode, count_include_pad,
                                                 divisor), (torch.randn_like(y), x))


def test_avg_pool2d_backward_unbatched_and_float64() -> None:
    x = torch.randn(3, 7, 6, dtype=torch.float64)
    y = F.avg_pool2d(x, 3, 2, 1, True, False)
    _check(lambda g, x: aten.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], True, False, None),
           (torch.randn_like(y), x), rtol=1e-10, atol=1e-12)


def test_pooling_backward_float16() -> None:
    x = torch.randn(2, 3, 7, 8).half()
    y = F.avg_pool2d(x.float(), 3, 2, 1).half()
    _check(lambda g, x: aten.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], False, True, None),
           (torch.randn_like(y), x), rtol=1e-2, atol=1e-2)
    _check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), (torch.randn(2, 3, 3, 5).half(), x),
           rtol=1e-2, atol=1e-2)


# -- convolution -------------------------------------------------------------------------------------

CONV_CASES = {
    # name: (input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups)
    "1d_groups": ((2, 4, 11), (6, 2, 3), [2], [1], [1], False, [0], 2),
    "2d": ((2, 3, 9, 8), (4, 3, 3, 3), [2, 1], [1, 0], [1, 2], False, [0, 0], 1),
    "2d_floor_drops_rows": ((2, 3, 10, 9), (5, 3, 3, 2), [3, 2], [1, 1], [1, 1], False, [0, 0], 1),
    "2d_groups": ((2, 6, 7, 7), (9, 2, 3, 3), [1, 2], [1, 1], [2, 1], False, [0, 0], 3),
    "2d_depthwise": ((3, 4, 6, 5), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 4),
    "3d": ((1, 2, 5, 6, 7), (4, 2, 2, 3, 2), [1, 2, 2], [0, 1, 1], [2, 1, 1], False, [0, 0, 0], 1),
    "1d_transposed": ((2, 4, 6), (4, 3, 3), [2], [1], [1], True, [1], 1),
    "2d_transposed_groups": ((2, 4, 5, 6), (4, 3, 3, 2), [2, 1], [1, 0], [1, 2], True, [1, 0], 2),
    "2d_transposed_output_padding_ge_stride": ((1, 3, 5, 4), (3, 2, 3, 3), [1, 1], [0, 1], [2, 2], True, [1, 1], 1),
    "3d_transposed": ((1, 2, 3, 4, 3), (2, 3, 2, 2, 3), [2, 2, 1], [0, 1, 1], [1, 1, 1], True, [1, 0, 0], 1),
}


def _conv_args(case: str, seed: int = 0) -> tuple[tuple[torch.Tensor, ...], tuple]:
    in_shape, w_shape, stride, padding, dilation, transposed, output_padding, groups = CONV_CASES[case]
    gen = torch.Generator().manual_seed(seed)
    x, w = torch.randn(in_shape, generator=gen), torch.randn(w_shape, generator=gen)
    y = aten.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    bias_sizes = [y.shape[1]]
    return (torch.randn(y.shape, generator=gen), x, w), (bias_sizes, stride, padding, dilation, transposed,
                                                         output_padding, groups)


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_convolution_backward(case: str) -> None:
    tensors, params = _conv_args(case)
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, *params, [True, True, True]), tensors)


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False], [False, False, True],
                                  [False, True, True]])
def test_convolution_backward_output_mask(mask: list[bool]) -> None:
    tensors, params = _conv_args("2d_groups")
    # Eager CPU computes some unrequested gradients of grouped convolutions anyway; compare the requested.
    program = _check(lambda g, x, w: [t for t, m in zip(aten.convolution_backward(g, x, w, *params, mask), mask) if m],
                     tensors)
    ops = _op_types(program)
    assert ("ConvTranspose" in ops) == mask[0]
    assert ("Conv" in ops) == mask[1]
    assert ("ReduceSum" in ops) == mask[2]


def test_convolution_backward_dynamic_batch() -> None:
    tensors, params = _conv_args("2d_groups")
    other, _ = _conv_args("2d_groups", seed=1)
    other = tuple(torch.cat([t, t]) if i < 2 else t for i, t in enumerate(other))  # batch 4
    batch = torch.export.Dim("batch", min=2)
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, *params, [True, True, True]), tensors,
           dynamic_shapes=({0: batch}, {0: batch}, None), others=(other,))


def test_convolution_backward_float16() -> None:
    tensors, params = _conv_args("2d_groups")
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, *params, [True, True, True]),
           tuple(t.half() for t in tensors), rtol=1e-2, atol=2e-2)


def test_convolution_backward_refuses_dynamic_spatial_sizes() -> None:
    tensors, params = _conv_args("2d")
    width = torch.export.Dim("width", min=4)
    model = Fn3(lambda g, x, w: aten.convolution_backward(g, x, w, *params, [True, True, True]))
    with pytest.raises(UnsupportedOpError, match="static sizes"):
        onnxport.export(model, tensors, dynamic_shapes=({3: width}, None, None))


# -- normalization -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "normalized", "affine"), [
    ((2, 3, 5), [5], (True, True)),
    ((2, 3, 4, 5), [4, 5], (True, False)),
    ((3, 4, 5), [3, 4, 5], (True, True)),  # every axis normalized: no leading axes to sum over
    ((6, 7), [7], (False, False)),
])
def test_native_layer_norm_backward(shape: tuple[int, ...], normalized: list[int], affine: tuple[bool, bool]) -> None:
    x = torch.randn(shape) * 3 + 1
    w = torch.randn(normalized) if affine[0] else None
    b = torch.randn(normalized) if affine[1] else None
    _, mean, rstd = aten.native_layer_norm(x, normalized, w, b, 1e-5)
    mask = [True, w is not None, b is not None]  # eager refuses a gradient of an absent weight/bias
    args = tuple(t for t in (torch.randn_like(x), x, mean, rstd, w, b) if t is not None)

    def fn(g: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor, *wb: torch.Tensor) -> Any:
        it = iter(wb)
        weight, bias = (next(it) if w is not None else None), (next(it) if b is not None else None)
        return aten.native_layer_norm_backward(g, x, normalized, mean, rstd, weight, bias, mask)

    _check(fn, args)


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, True], [False, False, True]])
def test_native_layer_norm_backward_output_mask(mask: list[bool]) -> None:
    x, w, b = torch.randn(2, 3, 6), torch.randn(6), torch.randn(6)
    _, mean, rstd = aten.native_layer_norm(x, [6], w, b, 1e-5)
    _check(lambda g, x, m, r, w, b: aten.native_layer_norm_backward(g, x, [6], m, r, w, b, mask),
           (torch.randn_like(x), x, mean, rstd, w, b))


def test_native_layer_norm_backward_without_weight_gives_none_gradients() -> None:
    # ATen's meta function reports no weight/bias gradient without weight/bias, even when requested.
    x = torch.randn(2, 3, 6)
    _, mean, rstd = aten.native_layer_norm(x, [6], None, None, 1e-5)
    g = torch.randn_like(x)
    expected = aten.native_layer_norm_backward(g, x, [6], mean, rstd, None, None, [True, False, False])
    _check(lambda g, x, m, r: aten.native_layer_norm_backward(g, x, [6], m, r, None, None, [True, True, True]),
           (g, x, mean, rstd), expected=expected)


def test_native_layer_norm_backward_float16() -> None:
    x, w, b = torch.randn(4, 8).half(), torch.randn(8).half(), torch.randn(8).half()
    _, mean, rstd = aten.native_layer_norm(x, [8], w, b, 1e-5)
    _check(lambda g, x, m, r, w, b: aten.native_layer_norm_backward(g, x, [8], m, r, w, b, [True, True, True]),
           (torch.randn_like(x), x, mean, rstd, w, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(("shape", "group"), [
    ((2, 6, 4, 5), 3),
    ((3, 4), 2),  # no spatial axes
    ((2, 6, 7), 6),  # one channel per group
    ((2, 4, 3, 2, 2), 1),  # one group, 3-D
])
def test_native_group_norm_backward(shape: tuple[int, ...], group: int) -> None:
    n, c = shape[:2]
    hxw = 1
    for s in shape[2:]:
        hxw *= s
    x, w = torch.randn(shape) * 2 - 1, torch.randn(c)
    _, mean, rstd = aten.native_group_norm(x, w, None, n, c, hxw, group, 1e-5)
    _check(lambda g, x, m, r, w: aten.native_group_norm_backward(g, x, m, r, w, n, c, hxw, group, [True, True, True]),
           (torch.randn_like(x), x, mean, rstd, w))


def test_native_group_norm_backward_without_weight() -> None:
    # Without weight, ATen's meta function still defines the weight/bias gradients (CPU eager
    # refuses to compute them): they equal those with a weight of ones.
    x = torch.randn(2, 6, 5)
    _, mean, rstd = aten.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5)
    g = torch.randn_like(x)
    expected = aten.native_group_norm_backward(g, x, mean, rstd, torch.ones(6), 2, 6, 5, 3, [True, True, True])
    _check(lambda g, x, m, r: aten.native_group_norm_backward(g, x, m, r, None, 2, 6, 5, 3, [True, True, True]),
           (g, x, mean, rstd), expected=expected)
    _check(lambda g, x, m, r: aten.native_group_norm_backward(g, x, m, r, None, 2, 6, 5, 3, [True, False, False]),
           (g, x, mean, rstd))


def test_native_group_norm_backward_dynamic_batch() -> None:
    def args(n: int) -> tuple[torch.Tensor, ...]:
        x, w = torch.randn(n, 4, 3, 3), torch.randn(4)
        _, mean, rstd = aten.native_group_norm(x, w, None, n, 4, 9, 2, 1e-5)
        return torch.randn_like(x), x, mean, rstd, w

    batch = torch.export.Dim("batch", min=2)
    _check(lambda g, x, m, r, w: aten.native_group_norm_backward(g, x, m, r, w, x.shape[0], 4, 9, 2, [True, True, True]),
           args(2), dynamic_shapes=({0: batch}, {0: batch}, {0: batch}, {0: batch}, None), others=(args(5),))


# -- real use: autograd's gradients for a given grad_output ------------------------------------------


def _autograd(fn: Any, grad: torch.Tensor, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    leaves = [t.detach().requires_grad_() for t in inputs]
    return torch.autograd.grad(fn(*leaves), leaves, grad)


def test_layer_norm_matches_autograd() -> None:
    x, w, b = torch.randn(2, 5, 8), torch.randn(8), torch.randn(8)
    grad = torch.randn(2, 5, 8)
    expected = _autograd(lambda x, w, b: F.layer_norm(x, [8], w, b), grad, x, w, b)

    def fn(g: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> Any:
        _, mean, rstd = aten.native_layer_norm(x, [8], w, b, 1e-5)  # translated forward's statistics
        return aten.native_layer_norm_backward(g, x, [8], mean, rstd, w, b, [True, True, True])

    _check(fn, (grad, x, w, b), expected=expected)


def test_group_norm_matches_autograd() -> None:
    x, w, b = torch.randn(3, 6, 4, 4), torch.randn(6), torch.randn(6)
    grad = torch.randn(3, 6, 4, 4)
    expected = _autograd(lambda x, w, b: F.group_norm(x, 2, w, b), grad, x, w, b)

    def fn(g: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> Any:
        _, mean, rstd = aten.native_group_norm(x, w, b, 3, 6, 16, 2, 1e-5)
        return aten.native_group_norm_backward(g, x, mean, rstd, w, 3, 6, 16, 2, [True, True, True])

    _check(fn, (grad, x, w, b), expected=expected)


@pytest.mark.parametrize("transposed", [False, True])
def test_conv2d_matches_autograd(transposed: bool) -> None:
    x = torch.randn(2, 4, 9, 7)
    w, b = torch.randn(4, 3, 3, 2) if transposed else torch.randn(6, 2, 3, 2), torch.randn(6)
    if transposed:
        forward = lambda x, w, b: F.conv_transpose2d(x, w, b, (2, 1), (1, 1), (1, 0), 2, (1, 2))  # noqa: E731
    else:
        forward = lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 1), (1, 2), 2)  # noqa: E731
    grad = torch.randn_like(forward(x, w, b))
    expected = _autograd(forward, grad, x, w, b)
    params = ([6], [2, 1], [1, 1], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, *params, [True, True, True]), (grad, x, w),
           expected=expected)


def test_avg_pool2d_matches_autograd() -> None:
    x = torch.randn(2, 3, 11, 10)
    forward = lambda x: F.avg_pool2d(x, (3, 4), (2, 3), (1, 2), ceil_mode=True, count_include_pad=False)  # noqa: E731
    grad = torch.randn_like(forward(x))
    expected = _autograd(forward, grad, x)
    _check(lambda g, x: aten.avg_pool2d_backward(g, x, [3, 4], [2, 3], [1, 2], True, False, None), (grad, x),
           expected=expected)


def test_adaptive_avg_pool2d_matches_autograd() -> None:
    x = torch.randn(2, 3, 13, 10)
    grad = torch.randn(2, 3, 5, 3)
    expected = _autograd(lambda x: F.adaptive_avg_pool2d(x, (5, 3)), grad, x)
    _check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), (grad, x), expected=expected)
