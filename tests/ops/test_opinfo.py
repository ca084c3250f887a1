"""The OpInfo op suite: every OpInfo of PyTorch's ``op_db`` × dtype, exported by onnxport
(optimization off and on), run in onnxruntime and compared with eager (values, shapes, dtypes).

- Fast (CI): the representative ops of ``op_table.FAST_OPS`` in float32 and one more dtype each,
  up to 2 samples per case.
- Full (``pytest -m slow tests/ops`` or ``ONNXPORT_OPINFO_FULL=1``): every OpInfo and dtype, up to
  ``ONNXPORT_OPINFO_SAMPLES`` (default 5) samples per case.
- ``ONNXPORT_REPRO=1`` writes a standalone script per failing sample into ``onnxport_repro/``
  (or ``ONNXPORT_REPRO_DIR``).

Every skip and expected failure is in ``op_table.EXPECTATIONS`` with its reason.
"""

from __future__ import annotations

import os

import pytest
import torch

from . import op_table

oi = pytest.importorskip("onnxport.testing.opinfo")
pytest.importorskip("expecttest")  # torch.testing._internal needs it

FULL = os.environ.get("ONNXPORT_OPINFO_FULL") == "1"
FULL_SAMPLES = int(os.environ.get("ONNXPORT_OPINFO_SAMPLES", "5"))
FAST_SAMPLES = 2


def _cases() -> list:
    params = []
    fast = set(op_table.fast_cases())
    for name, dtype in oi.iter_cases():
        dtype_name = oi.DTYPE_NAMES[dtype]
        is_fast = (name, dtype_name) in fast
        marks = [] if is_fast or FULL else [pytest.mark.slow]
        params.append(pytest.param(name, dtype, is_fast, id=f"{name}-{dtype_name}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "dtype", "fast"), _cases())
def test_opinfo(name: str, dtype: torch.dtype, fast: bool) -> None:
    dtype_name = oi.DTYPE_NAMES[dtype]
    expectation = op_table.lookup(name, dtype_name)
    if expectation is not None and expectation.kind == "skip":
        pytest.skip(expectation.reason)
    info = oi.op_db()[name]
    limit = FAST_SAMPLES if fast and not FULL else FULL_SAMPLES
    samples = oi.samples(info, dtype, limit)
    failures = []
    attempted = 0
    for index, sample in enumerate(samples):
        for optimize in (False, True):
            result = oi.run_sample(info, sample, optimize=optimize)
            if result.status == "skip":
                continue
            attempted += 1
            if not result.passed:
                where = f"sample {index} (optimize={optimize}): {result.status}: {result.detail}"
                if os.environ.get("ONNXPORT_REPRO") == "1":
                    script = oi.write_repro(info, sample, dtype, index, result, optimize=optimize)
                    where += f"\n    repro: python {script}"
                failures.append(where)
    if expectation is not None and expectation.kind == "xfail":
        if failures:
            pytest.xfail(expectation.reason)
        return  # passing now: op_table can drop the entry (the full run lists these)
    if not attempted:
        pytest.skip("no sample eager can run")
    assert not failures, f"{name} [{dtype_name}] {len(failures)}/{attempted} failed:\n" + "\n".join(failures)


def test_fast_cases_name_real_opinfos() -> None:
    """A misspelt FAST_OPS entry would silently drop its case from CI."""
    for op, dtype in op_table.fast_cases():
        assert op in oi.op_db(), f"FAST_OPS names no OpInfo {op!r}"
        assert getattr(torch, dtype) in oi.supported_dtypes(oi.op_db()[op]), f"{op} has no {dtype} samples"
