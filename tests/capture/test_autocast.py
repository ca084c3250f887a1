"""Autocast regions: the captured subgraph of ``wrap_with_autocast`` holds its ops at their input
dtypes; the re-trace (capture/decomp.py) applies autocast's casts as eager's dispatcher does, so
the graph computes where eager computes (bfloat16/float16 matmuls, float32 softmax)."""

from __future__ import annotations

import pytest
import torch

import onnxport


class _Mixed(torch.nn.Module):
    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.dtype = dtype
        self.proj = torch.nn.Linear(16, 16)
        with torch.no_grad():
            self.proj.weight.copy_(torch.randn(16, 16, generator=g) / 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.autocast("cpu", dtype=self.dtype):
            h = self.proj(x)
            scores = (h @ h.transpose(-1, -2)).softmax(-1)
        return h, scores


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_region_computes_in_its_dtype(dtype: torch.dtype) -> None:
    model = _Mixed(dtype).eval()
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    program = onnxport.export(model, (x,), dynamic_shapes={"x": {0: "batch", 1: "sequence"}}, verify=True)
    for inputs in (x, torch.randn(3, 7, 16, generator=torch.Generator().manual_seed(2))):
        got = program(inputs)
        want = model(inputs)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
    assert want[0].dtype == dtype
