"""Property-based: any combination of export arguments (names, dynamic specs, opsets, output
structures) gives a valid model or an onnxport error, never another exception.

The default profile (``max_examples=25``, tiny models) keeps this under a minute in CI; the slow
test runs the ``reliability-long`` profile (200 examples): ``pytest -m slow tests/reliability``.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxport
from onnxport.errors import OnnxportError

OUTPUTS = {
    "tensor": lambda a, b: a + b,
    "tuple": lambda a, b: (a * b, a - b),
    "dict": lambda a, b: {"s": a + b, "n": a.shape[0]},
    "nested": lambda a, b: [(a,), {"k": b * 2}],
    "none": lambda a, b: None,
    "str": lambda a, b: (a, "x"),
    "with_none": lambda a, b: (a + 1, None),
    "number": lambda a, b: (a.sum(), 3),
    "branch": lambda a, b: a * 2 if a.shape[0] == 1 else a + b,
}


class Fuzz(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, a: torch.Tensor, b: torch.Tensor):  # type: ignore[no-untyped-def]
        return OUTPUTS[self.kind](a, b)


names = st.one_of(
    st.none(),
    st.lists(st.one_of(st.sampled_from(["a", "b", "x", "", "sum", "n"]), st.integers(0, 3), st.none()), max_size=3),
    st.sampled_from(["ab", 5]),
)
axis_key = st.one_of(st.integers(-3, 3), st.sampled_from(["zero", "0", 1.0, True]))
dim_value = st.one_of(st.sampled_from(["batch", "b", "n", "", "seq"]), st.integers(-1, 4), st.none(), st.just(1.5))
per_input = st.one_of(st.none(), st.dictionaries(axis_key, dim_value, max_size=2), st.lists(dim_value, max_size=3))
dynamic = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"a": per_input, "b": per_input, "c": per_input}),
    st.tuples(per_input, per_input),
    st.sampled_from(["batch", 3, [0]]),
)
opsets = st.one_of(st.none(), st.integers(-1, 30), st.sampled_from(["18", 17.0]))


def _check(kind, sizes, dynamic_shapes, input_names, output_names, opset, tmp_dir) -> None:  # type: ignore[no-untyped-def]
    a, b = torch.randn(sizes[0], 3), torch.randn(sizes[1], 3)
    path = tmp_dir / "m.onnx"
    try:
        program = onnxport.export(
            Fuzz(kind), (a, b), dynamic_shapes=dynamic_shapes, input_names=input_names,
            output_names=output_names, opset_version=opset, f=path,
        )
    except OnnxportError:
        return  # an onnxport error is an accepted outcome
    # a valid model: checker + onnxruntime accept it and it reproduces eager on the example inputs
    result = onnxport.verify(program, (a, b))
    assert result.passed, result
    assert path.is_file()


# one set of strategies for the CI profile and the long one
export_arguments = given(
    kind=st.sampled_from(sorted(OUTPUTS)),
    sizes=st.tuples(st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 3])),
    dynamic_shapes=dynamic,
    input_names=names,
    output_names=names,
    opset=opsets,
)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@export_arguments
def test_export_arguments_fuzz(tmp_path_factory, kind, sizes, dynamic_shapes, input_names, output_names, opset) -> None:  # type: ignore[no-untyped-def]
    _check(kind, sizes, dynamic_shapes, input_names, output_names, opset, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@export_arguments
def test_export_arguments_fuzz_long(tmp_path_factory, kind, sizes, dynamic_shapes, input_names, output_names, opset) -> None:  # type: ignore[no-untyped-def]
    _check(kind, sizes, dynamic_shapes, input_names, output_names, opset, tmp_path_factory.mktemp("fuzz"))
