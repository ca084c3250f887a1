"""Pooling against eager: integer and float64 avg_pool, adaptive max pooling with non-uniform bins and indices, divisor_override with ceil_mode."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager, ints

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("kwargs", [{}, {"ceil_mode": True, "padding": 1}, {"divisor_override": 3},
                                    {"count_include_pad": False, "padding": 1}])
def test_integer_avg_pool_truncates(kwargs: dict) -> None:
    x = ints(torch.int64, 2, 3, 7, 6)  # negative window sums: truncation toward zero
    check_against_eager(lambda t: F.avg_pool2d(t, 3, stride=2, **kwargs), x)


FLOAT64_POOLS = {
    "avg_pool1d": lambda x: F.avg_pool1d(x.flatten(2), 3, 2),
    "avg_pool2d_padding": lambda x: F.avg_pool2d(x, 3, 2, padding=1),
    "avg_pool2d_padding_not_counted": lambda x: F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False),
    "avg_pool2d_divisor": lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3),
    "avg_pool3d": lambda x: F.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1), (2, 2, 2), (1, 2, 1)),
    "avg_pool2d_unbatched": lambda x: F.avg_pool2d(x[0], 2),
    "adaptive_global": lambda x: F.adaptive_avg_pool2d(x, 1),
    "adaptive_bins": lambda x: F.adaptive_avg_pool2d(x, (3, 5)),
}


@pytest.mark.parametrize("case", list(FLOAT64_POOLS))
def test_float64_avg_pool_without_an_average_pool_kernel(case: str) -> None:
    """onnxruntime has float-only (Global)AveragePool kernels: a float64 pool (AnyFlow-FAR averages
    its complex128 rotary table with avg_pool1d) made a model onnxruntime refused to load."""
    x = torch.randn(2, 3, 8, 12, dtype=torch.float64)
    out = check_against_eager(FLOAT64_POOLS[case], x, dynamic_shapes=({0: "b", 2: "h", 3: "w"},),
                              others=((torch.randn(1, 3, 12, 16, dtype=torch.float64),),), rtol=1e-13, atol=1e-13)
    assert not {"AveragePool", "GlobalAveragePool"} & {n.op_type for n in out.program.model.graph}


def test_float64_adaptive_avg_pool_with_uniform_bins() -> None:
    out = check_against_eager(lambda t: F.adaptive_avg_pool2d(t, (4, 2)), torch.randn(2, 3, 8, 12, dtype=torch.float64),
                              rtol=1e-13, atol=1e-13)
    assert "AveragePool" not in {n.op_type for n in out.program.model.graph}


# -- pooling ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("shape", "out"), [((2, 3, 7), (3,)), ((2, 3, 5, 7), (2, 3)), ((3, 4, 5, 6), (4, 4)),
                                            ((1, 2, 5, 4, 6), (3, 3, 4))])
def test_adaptive_max_pool_non_uniform_bins_with_indices(shape: tuple, out: tuple) -> None:
    fn = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[len(out)]
    x = torch.randn(shape)
    x[..., 0] = x[..., 1]  # ties: the first maximum's index, as torch
    check_against_eager(lambda t: fn(t, out, return_indices=True), x)


def test_adaptive_max_pool_bfloat16() -> None:
    check_against_eager(lambda t: F.adaptive_max_pool2d(t, (2, 3)), torch.randn(2, 3, 5, 7).bfloat16(), rtol=0, atol=0)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_avg_pool_divisor_override_with_ceil_mode(n: int) -> None:
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    x = torch.randn(2, 3, *[6] * n)
    if n == 1:
        check_against_eager(lambda t: fn(t, 3, 2, 1, ceil_mode=True), x)  # avg_pool1d has no divisor_override
    else:
        check_against_eager(lambda t: fn(t, 3, 2, 1, ceil_mode=True, divisor_override=2), x)


class _AdaptiveAvg(torch.nn.Module):
    def __init__(self, out: tuple[int, int]) -> None:
        super().__init__()
        self.out = out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(x, self.out)


@pytest.mark.parametrize("out", [(2, 2), (3, 6), (6, 6)])
def test_adaptive_avg_pool_non_uniform_bins_with_dynamic_sizes(out: tuple[int, int]) -> None:
    # UperNet/PSPNet pyramid pooling on a feature map whose height and width are dynamic: the bin
    # bounds are computed at run time, so sizes not divisible by the output sizes stay exact
    import onnxport

    dims = {"x": {0: "batch_size", 2: "height", 3: "width"}}
    g = torch.Generator().manual_seed(0)
    program = onnxport.export(_AdaptiveAvg(out), (torch.randn(2, 3, 12, 12, generator=g),), dynamic_shapes=dims)
    assert "ReduceMean" in {n.op_type for n in program.model.graph}
    for shape in [(2, 3, 12, 12), (3, 3, 7, 13), (1, 3, 5, 4)]:
        x = torch.randn(*shape, generator=g)
        got = program(x)[0]
        want = F.adaptive_avg_pool2d(x, out)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
        torch.testing.assert_close(torch.as_tensor(got), want, rtol=1e-5, atol=1e-6)


def test_adaptive_max_pool_non_uniform_bins_with_dynamic_sizes() -> None:
    # F.adaptive_max_pool2d on a feature map of any size: the values from per-bin ReduceMax whose
    # bounds come from Shape (the indices torch.export keeps unread are not encoded)
    others = tuple((torch.randn(1, 3, h, w),) for h, w in ((7, 13), (5, 4), (3, 3)))
    out = check_against_eager(lambda x: F.adaptive_max_pool2d(x, (3, 2)), torch.randn(2, 3, 11, 10),
                              dynamic_shapes={"x": {0: "batch", 2: "height", 3: "width"}}, others=others, exact=True)
    assert "ReduceMax" in {n.op_type for n in out.program.model.graph}


def test_adaptive_max_pool_with_dynamic_sizes_refuses_used_indices() -> None:
    import onnxport
    from _eager import Fn1

    with pytest.raises(onnxport.UnsupportedOpError, match="indices used"):
        onnxport.export(Fn1(lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True)), (torch.randn(2, 3, 11, 10),),
                        dynamic_shapes={"x": {2: "height", 3: "width"}})
