"""A body torch.export wraps in a higher-order op (``wrap_with_autocast``, ``wrap_with_set_grad_enabled``)
is translated inline, its FX node names (``mul``, ``getitem``) repeating the outer graph's: the
values it makes are named under the HOP node, and the model stays valid (SAM's vision encoder
failed in onnxruntime with "Duplicate definition of name (getitem)")."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

import onnxport


class NoGradBody(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        top = x.max(dim=-1)[0] * 3  # outer graph: getitem, mul
        with torch.no_grad():  # wrap_with_set_grad_enabled (SAM's positional embeddings are built so)
            inner = x.max(dim=-2)[0] * 2  # the body: getitem, mul again
        return top[:, None] + inner.sum()


@pytest.mark.parametrize("optimize", [False, True])
def test_inlined_body_values_keep_unique_names(optimize: bool) -> None:
    rows = torch.export.Dim("rows")
    program = onnxport.export(NoGradBody(), (torch.randn(3, 4),), dynamic_shapes=({0: rows},), optimize=optimize)
    names = Counter(v.name for node in program.model.graph for v in node.outputs)
    assert [name for name, count in names.items() if count > 1] == []
    assert optimize or any("/" in name for name in names), sorted(names)  # "<HOP node>/<body node>"
    x = torch.randn(5, 4)
    (actual,) = program(x)
    np.testing.assert_allclose(np.asarray(actual), NoGradBody()(x).numpy(), rtol=1e-6)
