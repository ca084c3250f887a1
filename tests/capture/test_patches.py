"""transformers' method LRU caches are bypassed while onnxport probes or captures on fake tensors."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from onnxport.capture.patches import library_patches, transformers_method_caches_off

pytest.importorskip("transformers")


def _anchors_class() -> type:
    from transformers.pytorch_utils import compile_compatible_method_lru_cache

    class Anchors:
        """RT-DETR's ``_cached_generate_anchors`` pattern: anchors cached per grid size."""

        @staticmethod
        @compile_compatible_method_lru_cache(maxsize=4)
        def anchors(side: int) -> torch.Tensor:
            return torch.arange(side, dtype=torch.float32) / side

    return Anchors


def test_a_fake_tensor_probe_leaves_no_fake_tensor_in_the_cache() -> None:
    leaky = _anchors_class()
    with FakeTensorMode():
        leaky.anchors(4)
    assert isinstance(leaky.anchors(4), FakeTensor)  # what the eager validation got back before

    fixed = _anchors_class()
    for scope in (transformers_method_caches_off, library_patches):
        with scope(), FakeTensorMode():
            fixed.anchors(4)
        value = fixed.anchors(4)
        assert not isinstance(value, FakeTensor)
        torch.testing.assert_close(value, torch.tensor([0.0, 0.25, 0.5, 0.75]))
