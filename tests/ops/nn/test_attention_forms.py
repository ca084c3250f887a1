"""Every scaled_dot_product_attention mask form, nn.MultiheadAttention and nn.Transformer with
masks: exported with dynamic batch and sequence lengths, run in onnxruntime at two sizes (the second
differs in every dynamic dim) and compared with eager. At opset 23 the ONNX Attention node gets its
mask expanded to (..., L, S), the only form onnxruntime 1.31's CPU kernel accepts; at opset 18 the
explicit encoding runs. Cases whose capture takes tens of seconds (nn.Transformer, most
MultiheadAttention variants) are ``slow``."""

from __future__ import annotations

import pytest

from _cases import params
from onnxport.testing.coverage_cases import MODULE_ATTENTION_CASES, SDPA_CASES, Case, run_case


@pytest.mark.parametrize("opset", [18, 23])
@pytest.mark.parametrize("case", params(SDPA_CASES))
def test_sdpa_form_runs_at_two_sizes(case: Case, opset: int) -> None:
    result = run_case(case, opset_version=opset)
    assert ("Attention" in result.op_types) == (opset >= 23)
    assert len(result.diffs) == 2


@pytest.mark.parametrize("case", params(MODULE_ATTENTION_CASES))
def test_attention_module_runs_at_two_sizes(case: Case) -> None:
    result = run_case(case)
    assert "Attention" in result.op_types or case.name.endswith("weights_True")
    assert len(result.diffs) == 2
