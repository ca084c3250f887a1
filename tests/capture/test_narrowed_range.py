"""A dynamic axis whose range the captured program bounds from above gets a warning
(``capture/specialization.warn_narrowed``); an unbounded one does not."""

from __future__ import annotations

import warnings

import torch

import onnxport


class Bounded(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._check(x.shape[1] <= 64)  # what a loop over a fixed number of 64-wide chunks amounts to
        return x * 2


class Branching(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] >= 64:  # diffusers' Upsample2D: a layout change for large batches
            x = x.contiguous()
        return x * 2


class Free(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.cumsum(1)


def _narrowing_warnings(model: torch.nn.Module) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = onnxport.export(model, (torch.randn(2, 5),), dynamic_shapes=({0: "batch_size", 1: "sequence_length"},))
    x = torch.randn(3, 9)
    torch.testing.assert_close(program(x)[0], model(x))
    return [str(w.message) for w in caught if "narrowed its range" in str(w.message)]


def test_a_bounded_axis_is_named_with_its_bound() -> None:
    (message,) = _narrowing_warnings(Bounded())
    assert "'sequence_length'" in message and "only up to 64" in message and "axis 1" in message


def test_the_guard_that_narrowed_the_axis_is_named_with_its_source_line() -> None:
    (message,) = _narrowing_warnings(Branching())
    assert "'batch_size'" in message and "only up to 63" in message
    assert "bounds it with `" in message and "< 64` (" in message
    assert "test_narrowed_range.py" in message and "if x.shape[0] >= 64:" in message
    # a torch._check is named the same way
    assert "torch._check(x.shape[1] <= 64)" in _narrowing_warnings(Bounded())[0]


def test_an_unbounded_axis_gives_no_warning() -> None:
    assert _narrowing_warnings(Free()) == []
