"""options.ExportOptions: every export parameter validated once, frozen; the opset policy."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import onnxport
from onnxport.errors import InputError, OpsetError
from onnxport.options import (
    DEFAULT_OPSET,
    MAX_OPSET,
    MIN_OPSET,
    RANDOM_OPSET,
    ExportOptions,
    check_opset,
)


def test_defaults_and_target_opset() -> None:
    options = ExportOptions.create()
    assert options.opset == DEFAULT_OPSET == 23
    assert options.target_opset == DEFAULT_OPSET
    old = ExportOptions.create(opset_version=13)
    assert (old.opset, old.target_opset) == (13, MIN_OPSET)  # translated at 18, then converted


def test_frozen() -> None:
    options = ExportOptions.create(input_names=["a", "b"])
    assert options.input_names == ("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.verify = True  # type: ignore[misc]


@pytest.mark.parametrize("opset", [MAX_OPSET + 1, 0, "23", True])
def test_bad_opset(opset: object) -> None:
    with pytest.raises(OpsetError, match="opset_version"):
        check_opset(opset)  # type: ignore[arg-type]
    with pytest.raises(OpsetError):
        ExportOptions.create(opset_version=opset)  # type: ignore[arg-type]


def test_bad_half_precision_compute_and_names() -> None:
    with pytest.raises(InputError, match="half_precision_compute must be 'float32' or None"):
        ExportOptions.create(half_precision_compute="float16")
    with pytest.raises(InputError, match="input_names must be a list of strings"):
        ExportOptions.create(input_names="x")


class _Attend(torch.nn.Module):
    def forward(self, q: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)


class _Noisy(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + torch.randn_like(x), torch.rand(x.shape[0], 3)


def test_random_ops_lower_the_default_opset_to_one_onnxruntime_runs() -> None:
    # onnxruntime 1.31 has no Random*/Bernoulli kernels for opset 22+: at the default opset a model
    # drawing noise (a diffusion step, a VAE's sample) was refused at load
    assert ExportOptions.create().for_random_ops(True).opset == RANDOM_OPSET == 21
    assert ExportOptions.create(opset_version=23).for_random_ops(True).opset == 23  # the user's choice
    assert ExportOptions.create().for_random_ops(False).opset == DEFAULT_OPSET
    x = torch.zeros(4, 5)
    program = onnxport.export(_Noisy(), (x,), dynamic_shapes={"x": {0: "batch"}}, verify=True)
    assert program.model.opset_imports[""] == RANDOM_OPSET
    noise, uniform = program(torch.zeros(200, 5))
    assert noise.shape == (200, 5) and abs(float(noise.mean())) < 0.2 and 0.8 < float(noise.std()) < 1.2
    assert uniform.shape == (200, 3) and 0.0 <= float(uniform.min()) and float(uniform.max()) < 1.0
    # dropout at inference (train=False) draws nothing: the default opset stays
    program = onnxport.export(torch.nn.Dropout(0.1).eval(), (x,))
    assert program.model.opset_imports[""] == DEFAULT_OPSET
    # nor does attention with dropout_p=0 (scaled_dot_product_attention is tagged as seeded)
    program = onnxport.export(_Attend(), (torch.randn(1, 2, 4, 8),))
    assert program.model.opset_imports[""] == DEFAULT_OPSET
