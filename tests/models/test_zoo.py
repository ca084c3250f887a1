"""Acceptance (issue 14): the architectures of ``onnxport.testing.zoo`` export with dynamic shapes and
match eager PyTorch in onnxruntime at two sizes, the second different in every dynamic dim.

CI runs ``zoo.FAST`` (the grouped_mm MoE and a few families; the new encodings also have small
tests in tests/translate/); the whole list is ``slow``. A case that cannot pass yet is marked xfail
with the reason docs/coverage.md gives.
"""

from __future__ import annotations

import inspect

import pytest

from onnxport.coverage import ARCHITECTURE_NOTES
from onnxport.testing import zoo

pytest.importorskip("transformers")

# The exact reasons, rendered in docs/coverage.md ("Architectures"). Not strict: the cases of issue 14
# items 1 and 3 (branch coverage-ops) pass once that branch is merged.
KNOWN_FAILURES: dict[str, str] = ARCHITECTURE_NOTES


def _param(case: zoo.Case) -> object:
    marks = [] if case.name in zoo.FAST else [pytest.mark.slow]
    if case.name in KNOWN_FAILURES:
        marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[case.name], strict=False))
    return pytest.param(case, marks=marks, id=case.name)


def _dynamic_dims(case: zoo.Case, size: object) -> dict[str, int]:
    """``"input[axis]" → size`` of every dim ``case.dynamic_shapes`` declares dynamic."""
    args, kwargs = case.inputs(size)
    spec = case.dynamic_shapes
    named = spec.items() if isinstance(spec, dict) else enumerate(spec)
    if isinstance(spec, dict):
        # a dict spec names forward's parameters, which may be given positionally
        params = list(inspect.signature(case.build().forward).parameters)
        values = {**dict(zip(params, args)), **kwargs}
    else:
        values = dict(enumerate(args))
    return {f"{key}[{axis}]": values[key].shape[axis] for key, axes in named for axis in axes}


def test_the_list_covers_every_family_and_resizes_every_dynamic_dim() -> None:
    families = {c.family for c in zoo.CASES}
    assert families == {"decoder", "encoder", "vision", "audio", "ssm", "diffusion", "torch.nn"}
    assert len(zoo.CASES) >= 40
    assert set(zoo.FAST) <= set(zoo.BY_NAME)
    for case in zoo.CASES:
        if case.family == "diffusion" and not _has("diffusers"):
            continue
        first, second = (_dynamic_dims(case, size) for size in case.sizes)
        assert first, f"{case.name}: no dynamic dim"
        same = [dim for dim in first if first[dim] == second[dim]]
        assert not same, f"{case.name}: the second size keeps {same}"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("case", [_param(c) for c in zoo.CASES])
def test_architecture_matches_eager_at_two_sizes(case: zoo.Case) -> None:
    if case.family == "diffusion":
        pytest.importorskip("diffusers")
    result = zoo.run(case)
    assert result.passed, result.error
    assert result.nodes > 0
