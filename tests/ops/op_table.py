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
_BF16_ORT = "onnxruntime 1.31 CPU has no bfloat16 kernel for an op of the graph"
_F16_ORT = "onnxruntime 1.31 CPU has no float16 kernel for an op of the graph"
_INT_ORT = "onnxruntime 1.31 CPU has no int32/int64 or bool kernel for an op of the graph"
_OUTPUT_ALIAS = ("graph output is a graph input or repeats another output: translate/graph.py names the "
                 "two values alike and onnxruntime rejects the model (reported to the graph walker's owner)")

EXPECTATIONS: tuple[Expect, ...] = (
    # -- dtype-wide limits of onnxruntime's CPU kernels ---------------------------------------
    xfail(None, _BF16_ORT, ("bfloat16",)),
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
    best: tuple[int, Expect] | None = None
    for entry in EXPECTATIONS:
        if entry.op not in (None, op) or (entry.dtypes is not None and dtype not in entry.dtypes):
            continue
        score = 2 * (entry.op is not None) + (entry.dtypes is not None)
        if best is None or score > best[0]:
            best = (score, entry)
    return best[1] if best else None
