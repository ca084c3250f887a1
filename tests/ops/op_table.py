"""The one table of the OpInfo suite: which cases run in CI, and every skip / expected failure with
its reason. ``lookup`` applies the most specific entry: (op, dtype) before (op, any dtype) before
(any op, dtype).
"""

from __future__ import annotations

import dataclasses

ALL = None  # every dtype / every op


@dataclasses.dataclass(frozen=True)
class Expect:
    op: str | None
    dtypes: tuple[str, ...] | None
    kind: str  # "skip" (not run) or "xfail" (run; failing samples expected)
    reason: str


def skip(op: str | None, reason: str, dtypes: tuple[str, ...] | None = ALL) -> Expect:
    return Expect(op, dtypes, "skip", reason)


def xfail(op: str | None, reason: str, dtypes: tuple[str, ...] | None = ALL) -> Expect:
    return Expect(op, dtypes, "xfail", reason)


_COMPLEX = "produces or consumes complex tensors: onnxport has no complex encoding"
_LINALG = "decomposition/solver with no ONNX op (LAPACK-style factorization); not translated"
_DATA_DEPENDENT = "torch.export cannot capture it: output shape or control flow depends on values"
_OUTPUT_ALIAS = ("graph output is a graph input or repeats another output: translate/graph.py names the "
                 "two values alike and onnxruntime rejects the model (reported to the graph walker's owner)")

EXPECTATIONS: tuple[Expect, ...] = (
    # -- complex numbers ------------------------------------------------------------------------
    *(skip(op, _COMPLEX) for op in (
        "fft.fft", "fft.fft2", "fft.fftn", "fft.hfft", "fft.hfft2", "fft.hfftn", "fft.ifft", "fft.ifft2",
        "fft.ifftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn", "fft.irfft", "fft.irfft2", "fft.irfftn",
        "fft.rfft", "fft.rfft2", "fft.rfftn", "stft", "istft", "view_as_complex", "complex", "polar",
        "cfloat", "cdouble", "chalf", "angle", "linalg.eig", "linalg.eigvals",
    )),
    # -- LAPACK-style linear algebra ---------------------------------------------------------
    *(skip(op, _LINALG) for op in (
        "cholesky", "cholesky_inverse", "cholesky_solve", "geqrf", "inverse", "linalg.cholesky",
        "linalg.cholesky_ex", "linalg.cond", "linalg.det", "linalg.det.singular", "linalg.eigh",
        "linalg.eigvalsh", "linalg.householder_product", "linalg.inv", "linalg.inv_ex",
        "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve", "linalg.lu", "linalg.lu_factor",
        "linalg.lu_factor_ex", "linalg.lu_solve", "linalg.matrix_norm", "linalg.matrix_power",
        "linalg.matrix_rank", "linalg.matrix_rank.hermitian", "linalg.norm", "linalg.norm.subgradients_at_zero",
        "linalg.pinv", "linalg.pinv.hermitian", "linalg.pinv.singular", "linalg.qr", "linalg.slogdet",
        "linalg.solve", "linalg.solve_ex", "linalg.solve_triangular", "linalg.svd", "linalg.svdvals",
        "linalg.tensorinv", "linalg.tensorsolve", "logdet", "lu", "lu_solve", "lu_unpack", "matrix_exp",
        "nuclear_norm", "ormqr", "pca_lowrank", "pinverse", "qr", "svd", "svd_lowrank", "triangular_solve",
        "det", "linalg.lstsq", "linalg.lstsq.grad_oriented",
    )),
    # -- capture limits (torch.export) -------------------------------------------------------
    *(skip(op, _DATA_DEPENDENT) for op in (
        "combinations", "corrcoef", "cov", "nn.functional.ctc_loss", "take", "tensor_split", "narrow",
        "unique", "unique_consecutive", "allclose", "equal", "item", "nonzero_static",
        "bincount", "histc", "histogram", "histogramdd", "to_sparse", "sparse.sampled_addmm",
        "sparse.mm.reduce",
    )),
)

# Representative cases run in CI (not marked slow): one or two per op family, float32 and one
# more dtype where the op supports it.
FAST_OPS: dict[str, tuple[str, ...]] = {
    "add": ("float32", "int64"),
    "mul": ("float32", "bool"),
    "div.floor_rounding": ("float32", "int32"),
    "remainder": ("float32", "int64"),
    "exp": ("float32", "float16"),
    "sigmoid": ("float32",),
    "where": ("float32",),
    "clamp": ("float32", "int64"),
    "sum": ("float32", "int64"),
    "mean": ("float32",),
    "amax": ("float32", "int32"),
    "argmax": ("float32",),
    "var": ("float32",),
    "cumsum": ("float32", "int64"),
    "cumprod": ("float32",),
    "cat": ("float32", "bool"),
    "reshape": ("float32",),
    "permute": ("float32",),
    "expand": ("float32",),
    "index_select": ("float32",),
    "gather": ("float32",),
    "scatter": ("float32",),
    "scatter_add": ("float32",),
    "index_put": ("float32",),
    "masked_scatter": ("float32",),
    "sort": ("float32", "int64"),
    "topk": ("float32",),
    "flip": ("float32", "bool"),
    "roll": ("float32",),
    "tril": ("float32",),
    "repeat": ("float32",),
    "matmul": ("float32",),
    "nn.functional.linear": ("float32",),
    "nn.functional.conv2d": ("float32",),
    "nn.functional.layer_norm": ("float32", "float16"),
    "nn.functional.group_norm": ("float32",),
    "nn.functional.softmax": ("float32",),
    "nn.functional.gelu": ("float32",),
    "nn.functional.embedding": ("float32",),
    "nn.functional.pad.constant": ("float32",),
    "nn.functional.pad.reflect": ("float32",),
    "nn.functional.interpolate.bilinear": ("float32",),
    "nn.functional.interpolate.nearest": ("float32",),
    "nn.functional.max_pool2d": ("float32",),
    "nn.functional.grid_sample": ("float32",),
    "nn.functional.scaled_dot_product_attention": ("float32",),
    "bernoulli": ("float32",),
}


def fast_cases() -> list[tuple[str, str]]:
    return [(op, d) for op, dtypes in FAST_OPS.items() for d in dtypes]


def lookup(op: str, dtype: str) -> Expect | None:
    """The entry that applies to ``op`` in ``dtype``, most specific first."""
    return _lookup(op, dtype, EXPECTATIONS)


def _lookup(op: str, dtype: str, table: tuple[Expect, ...]) -> Expect | None:
    best: tuple[int, Expect] | None = None
    for entry in table:
        if entry.op not in (None, op) or (entry.dtypes is not None and dtype not in entry.dtypes):
            continue
        score = 2 * (entry.op is not None) + (entry.dtypes is not None)
        if best is None or score > best[0]:
            best = (score, entry)
    return best[1] if best else None


# -- known failures, generated from docs/coverage_results.json ------------------------------------
# `python tests/ops/op_table.py` rewrites the block below from the last `python -m onnxport.coverage
# run`: every (OpInfo, dtype) with a failing sample that no entry above covers, with the reason the
# failure states (grouped by kind). Review it; fix the translation rather than growing it.
# BEGIN GENERATED
GENERATED: tuple[Expect, ...] = ()
# END GENERATED

_HAND_WRITTEN = EXPECTATIONS
EXPECTATIONS = EXPECTATIONS + GENERATED


def _reason(status: str, detail: str) -> str:
    import re

    if "Duplicate definition of name" in detail:
        return _OUTPUT_ALIAS
    m = re.search(r"Could not find an implementation for (\w+)\((\d+)\)", detail)
    if m:
        return f"onnxruntime 1.31 CPU has no kernel for {m.group(1)}-{m.group(2)} in this dtype"
    m = re.search(r"- (aten\.[\w.]+): \d+ node", detail)
    if status == "unsupported" and m:
        return f"{m.group(1)} has no translation (no ONNX equivalent written; not in core ATen)"
    if status == "unsupported":
        return "refused by the translation: " + detail.split(" FX node")[0][:140]
    if "CaptureError" in detail or "DynamicShapesError" in detail or "GuardOnDataDependent" in detail:
        return _DATA_DEPENDENT
    if status == "mismatch":
        return "differs from eager: " + detail[:140]
    return f"{status}: " + detail[:140]


def _generate() -> str:
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    results = json.loads((root / "docs" / "coverage_results.json").read_text())["results"]
    lines = []
    for op, by_dtype in sorted(results.items()):
        by_reason: dict[str, list[str]] = {}
        for dtype, samples in sorted(by_dtype.items()):
            failing = [(s, d) for s, d, _ in samples if s not in ("pass", "skip")]
            if not failing or _lookup(op, dtype, _HAND_WRITTEN) is not None:
                continue
            by_reason.setdefault(_reason(*failing[0]), []).append(dtype)
        for reason, dtypes in by_reason.items():
            lines.append(f"    xfail({op!r}, {reason!r}, {tuple(dtypes)!r}),")
    return "GENERATED: tuple[Expect, ...] = (\n" + "\n".join(lines) + "\n)\n" if lines else "GENERATED: tuple[Expect, ...] = ()\n"


if __name__ == "__main__":
    import re
    from pathlib import Path

    here = Path(__file__)
    text = here.read_text()
    block = re.compile(r"(# BEGIN GENERATED\n).*?(# END GENERATED)", re.S)
    here.write_text(block.sub(lambda m: m.group(1) + _generate() + m.group(2), text))
