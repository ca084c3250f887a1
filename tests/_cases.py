"""pytest parametrization of onnxport.testing.coverage_cases: one param per case, slow ones marked."""

from __future__ import annotations

from typing import Any

import pytest

from onnxport.testing.coverage_cases import Case


def params(cases: list[Case]) -> list[Any]:
    """``pytest.param`` per case, id = its name, cases with ``slow=True`` marked ``slow``."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in cases]
