"""F.interpolate with dynamic spatial sizes in every mode × align_corners: by scale factor, to a size
computed from the dynamic dims, to a skip tensor's size (UNet decoders); exported with dynamic batch
and spatial dims and run in onnxruntime at two sizes against eager."""

from __future__ import annotations

import pytest

from _cases import params
from onnxport.testing.coverage_cases import RESIZE_CASES, Case, run_case


@pytest.mark.parametrize("case", params(RESIZE_CASES))
def test_resize_runs_at_two_sizes(case: Case) -> None:
    result = run_case(case)
    assert "Resize" in result.op_types
    assert len(result.diffs) == 2
