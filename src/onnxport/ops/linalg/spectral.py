"""Symmetric eigen-decomposition and what is built on it or on the singular value decomposition
(eigvalsh, pinv, nuclear norm) and the matrix exponential, unrolled over a static matrix size.

ONNX has no eigensolver, SVD or linear solve. The symmetric eigenvalues come from the cyclic Jacobi
eigenvalue algorithm with the parallel (round-robin) ordering, a fixed number of sweeps unrolled for
the static n (Golub & Van Loan, Matrix Computations, 4th ed., §8.5). Only quantities with a unique
answer are encoded: eigenvalues (ascending, as LAPACK syevd), the pseudo-inverse (V Σ⁺ Uᵀ does not
depend on the signs or the basis of degenerate singular/eigen-spaces) and the matrix exponential.
Eigenvectors are refused: LAPACK's signs follow no rule that a different algorithm can reproduce.
Arithmetic runs in float64 and is cast back.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import (
    _back,
    _f64,
    _loop,
    _trip_count,
    dtype_of,
    rank,
    shape_of,
    static_dim,
)
from onnxport.ops.linalg.dense import (
    JACOBI_SWEEPS,
    MAX_UNROLLED_N,
    _gauss_jordan,
    _jacobi_rotation,
    _one_sided_jacobi,
    _round_robin,
    _static_matrix,
)
from onnxport.ops.linalg.factorization import _mT
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

_F64 = ir.DataType.DOUBLE
_I64 = ir.DataType.INT64


def _static_size(ctx: Ctx, A: ir.Value, what: str) -> tuple[int, int]:
    return _static_matrix(ctx, A, what, "the Jacobi sweeps are unrolled",
                          (min, "min(m, n)", "ONNX has no eigensolver/SVD"))


def _batch_shape(ctx: Ctx, x: ir.Value, trailing: list[int] | ir.Value) -> ir.Value:
    tail = trailing if isinstance(trailing, ir.Value) else ctx.const(trailing, _I64)
    return ctx.op.Concat(ctx.op.Shape(x, start=0, end=-2), tail, axis=0)


def _empty_batch(A: ir.Value) -> bool:
    """Whether a batch dim is statically 0 (onnxruntime reductions keep an axis of an empty input)."""
    return any(d == 0 for d in shape_of(A)[:-2])


def _pad_even(ctx: Ctx, x: ir.Value, n: int, r: int, both: bool) -> ir.Value:
    """Append a zero column (and a zero row when ``both``) so the round-robin pairing is even."""
    if n % 2 == 0:
        return x
    col = ctx.op.Expand(ctx.const(0.0, x.dtype), ctx.op.Concat(ctx.op.Shape(x, start=0, end=-1), ctx.const([1]), axis=0))
    x = ctx.op.Concat(x, col, axis=-1)
    if both:
        row = ctx.op.Expand(ctx.const(0.0, x.dtype), _batch_shape(ctx, x, [1, n + 1]))
        x = ctx.op.Concat(x, row, axis=-2)
    return x


def _symmetric(ctx: Ctx, A: ir.Value, n: int, r: int, uplo: str) -> ir.Value:
    """The symmetric matrix LAPACK's ?syev reads: the lower (``uplo="L"``) or upper triangle of A."""
    keep = [[(i >= j) if uplo.upper() == "L" else (i <= j) for j in range(n)] for i in range(n)]
    return ctx.op.Where(ctx.const(np.array(keep, dtype=np.bool_).reshape(n, n)), A, _mT(ctx, A, r))


def _jacobi_eigen(
    ctx: Ctx, S: ir.Value, n: int, r: int, with_vectors: bool,
) -> tuple[ir.Value, ir.Value | None]:
    """Eigenvalues (unsorted, (..., n)) and, when asked, eigenvectors (columns of (..., n, n)) of the
    float64 symmetric (..., n, n) ``S``.

    Cyclic Jacobi (Golub & Van Loan §8.5.2-8.5.3): each step applies S ← Jᵀ S J for a rotation J
    zeroing one off-diagonal pair; the parallel ordering (§8.5.5; Brent & Luk 1985) rotates n/2
    disjoint pairs at once, so one round is one n×n rotation matrix and two MatMuls. JACOBI_SWEEPS
    sweeps of n - 1 rounds each are unrolled (quadratic convergence: far below float64 rounding for
    n ≤ MAX_UNROLLED_N). An odd n gets a decoupled zero row and column (its pairs stay idle) that is
    dropped at the end.
    """
    size = n + n % 2
    S = _pad_even(ctx, S, n, r, both=True)
    eye = ctx.const(np.eye(size), _F64)
    flat_shape = ctx.const([0] * (r - 2) + [size * size])
    V = ctx.op.Expand(eye, ctx.op.Shape(S)) if with_vectors else None
    for _ in range(JACOBI_SWEEPS):
        for p_idx, q_idx in _round_robin(size):
            flat = ctx.op.Reshape(S, flat_shape)  # (..., size²); 0 copies the batch dims
            app = ctx.op.Gather(flat, ctx.const([p * size + p for p in p_idx]), axis=-1)  # (..., size/2)
            aqq = ctx.op.Gather(flat, ctx.const([q * size + q for q in q_idx]), axis=-1)
            apq = ctx.op.Gather(flat, ctx.const([p * size + q for p, q in zip(p_idx, q_idx)]), axis=-1)
            c, s = _jacobi_rotation(ctx, app, aqq, apq)
            # J = diag(c per index) + (±s at (p, q) / (q, p)): J_pp = J_qq = c, J_pq = s, J_qp = -s.
            pair, sign, partner = [0] * size, [0.0] * size, np.zeros((size, size))
            for k, (p, q) in enumerate(zip(p_idx, q_idx)):
                pair[p], pair[q], sign[p], sign[q] = k, k, 1.0, -1.0
                partner[p, q] = partner[q, p] = 1.0
            cvec = ctx.op.Gather(c, ctx.const(pair), axis=-1)  # (..., size)
            svec = ctx.op.Mul(ctx.op.Gather(s, ctx.const(pair), axis=-1), ctx.const(sign, _F64))
            J = ctx.op.Add(ctx.op.Mul(ctx.op.Unsqueeze(cvec, ctx.const([-1])), eye),
                           ctx.op.Mul(ctx.op.Unsqueeze(svec, ctx.const([-1])), ctx.const(partner, _F64)))
            S = ctx.op.MatMul(ctx.op.MatMul(_mT(ctx, J, r), S), J)
            if V is not None:
                V = ctx.op.MatMul(V, J)
    diag = ctx.op.Gather(ctx.op.Reshape(S, flat_shape), ctx.const([k * size + k for k in range(n)]), axis=-1)
    if size != n:
        if V is not None:
            V = ctx.op.Slice(V, ctx.const([0, 0]), ctx.const([n, n]), ctx.const([-2, -1]))
    return diag, V


def _only_values(ctx: Ctx) -> None:
    used = ctx.used_outputs()
    if used is None or used - {0}:
        ctx.unsupported("eigenvectors are used: their signs follow LAPACK syevd's Householder "
                        "tridiagonalization, which the Jacobi eigensolver cannot reproduce; only "
                        "eigenvalues (linalg.eigvalsh) are encoded")


@translates(aten._linalg_eigh.default)
def aten_linalg_eigh(
    ctx: Ctx, A: ir.Value, UPLO: str = "L", compute_v: bool = True,
) -> tuple[ir.Value, ir.Value]:
    """_linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)

    Eigenvalues of the symmetric matrix read from A's ``UPLO`` triangle, ascending (as LAPACK
    syevd): cyclic Jacobi in float64 (:func:`_jacobi_eigen`). Eigenvectors are refused when used.
    """
    _only_values(ctx)
    n, _ = _static_size(ctx, A, "eigh")
    r = rank(A)
    empty = ctx.const(np.zeros((0,), np.float32), A.dtype)
    if n == 0 or _empty_batch(A):
        return ctx.op.Expand(ctx.const(0.0, A.dtype), _batch_shape(ctx, A, [n])), empty
    S = _symmetric(ctx, _f64(ctx, A), n, r, UPLO)
    values, _ = _jacobi_eigen(ctx, S, n, r, with_vectors=False)
    values, _ = ctx.op.TopK(values, ctx.const([n]), axis=-1, largest=0, sorted=1, _outputs=2)
    return _back(ctx, values, dtype_of(A)), empty


@translates(aten.linalg_pinv.atol_rtol_tensor)
def aten_linalg_pinv(
    ctx: Ctx, self: ir.Value, *, atol: ir.Value | None = None, rtol: ir.Value | None = None,
    hermitian: bool = False,
) -> ir.Value:
    """linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor

    The Moore-Penrose pseudo-inverse V Σ⁺ Uᵀ (Golub & Van Loan §5.5.2), singular values at or below
    max(atol, rtol·σ_max) dropped; rtol defaults to eps·max(m, n), or 0 when a positive atol is given
    (torch.linalg.pinv docs). General A: one-sided Jacobi in float64 with the rotations accumulated
    (W = A V has orthogonal columns w_i = σ_i u_i), so A⁺ = Σ_i v_i w_iᵀ / σ_i² over the kept σ_i.
    ``hermitian``: the Jacobi eigen-decomposition of A's lower triangle, A⁺ = Σ_i v_i v_iᵀ / λ_i over
    |λ_i| above the cutoff (of max |λ|).
    """
    m, n = _static_size(ctx, self, "pinv")
    r = rank(self)
    dtype = dtype_of(self)
    if m == 0 or n == 0 or _empty_batch(self):
        return ctx.op.Expand(ctx.const(0.0, dtype), _batch_shape(ctx, self, [n, m]))
    eps = float(torch.finfo(ir.tensor_adapters.to_torch_dtype(dtype)).eps)
    default_rtol = ctx.const(eps * max(m, n), _F64)
    zero = ctx.const(0.0, _F64)
    atol64 = zero if atol is None else _f64(ctx, atol)
    if rtol is not None:
        rtol64 = _f64(ctx, rtol)
    elif atol is not None:
        rtol64 = ctx.op.Where(ctx.op.Greater(atol64, zero), zero, default_rtol)
    else:
        rtol64 = default_rtol
    # atol/rtol broadcast against the batch dims: (..., 1, 1) against the (..., 1, k) values.
    atol64 = ctx.op.Unsqueeze(atol64, ctx.const([-1, -2]))
    rtol64 = ctx.op.Unsqueeze(rtol64, ctx.const([-1, -2]))
    A = _f64(ctx, self)
    if hermitian:
        S = _symmetric(ctx, A, n, r, "L")
        lam, V = _jacobi_eigen(ctx, S, n, r, with_vectors=True)
        assert V is not None  # with_vectors
        lam = ctx.op.Unsqueeze(lam, ctx.const([-2]))  # (..., 1, n)
        mag = ctx.op.Abs(lam)
        tol = ctx.op.Max(atol64, ctx.op.Mul(rtol64, ctx.op.ReduceMax(mag, ctx.const([-1]), keepdims=1)))
        safe = ctx.op.Where(ctx.op.Greater(mag, tol), lam, ctx.const(np.inf, _F64))
        inv = ctx.op.Div(ctx.const(1.0, _F64), safe)  # 1/∞ = 0 for the dropped ones
        return _back(ctx, ctx.op.MatMul(ctx.op.Mul(V, inv), _mT(ctx, V, r)), dtype)
    X = A
    if m < n:  # pinv(A) = pinv(Aᵀ)ᵀ: rotate the min(m, n) columns
        X, m, n = _mT(ctx, A, r), n, m
    size = n + n % 2
    W = _pad_even(ctx, X, n, r, both=False)
    V0 = ctx.op.Expand(ctx.const(np.eye(size), _F64), _batch_shape(ctx, W, [size, size]))
    W, V = _one_sided_jacobi(ctx, W, size, r, V0)
    sq = ctx.op.ReduceSum(ctx.op.Mul(W, W), ctx.const([-2]), keepdims=1)  # σ², (..., 1, size)
    sigma = ctx.op.Sqrt(sq)
    tol = ctx.op.Max(atol64, ctx.op.Mul(rtol64, ctx.op.ReduceMax(sigma, ctx.const([-1]), keepdims=1)))
    inv = ctx.op.Div(ctx.const(1.0, _F64), ctx.op.Where(ctx.op.Greater(sigma, tol), sq, ctx.const(np.inf, _F64)))
    if size != n:
        V = ctx.op.Slice(V, ctx.const([0]), ctx.const([n]), ctx.const([-2]))
    P = ctx.op.MatMul(ctx.op.Mul(V, inv), _mT(ctx, W, r))  # (..., n, m)
    if X is not A:
        P = _mT(ctx, P, r)
    return _back(ctx, P, dtype)


# -- matrix exponential ---------------------------------------------------------------------

# Padé [13/13] coefficients b_0..b_13 and θ_13 (Higham 2005, Table 2.3 / eq. 2.4).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152
_MAX_SQUARINGS = 1100  # ‖A‖₁ < θ₁₃·2^1100 covers every finite float64


@translates(aten.linalg_matrix_exp.default)
def aten_linalg_matrix_exp(ctx: Ctx, self: ir.Value) -> ir.Value:
    """linalg_matrix_exp(Tensor self) -> Tensor

    Scaling and squaring with the [13/13] Padé approximant (Higham 2005, "The scaling and squaring
    method for the matrix exponential revisited", Algorithm 2.3; Golub & Van Loan §9.3.1), in
    float64: s = max(0, ⌈log₂(‖A‖₁/θ₁₃)⌉) per matrix, r₁₃(A/2^s) from (V - U) X = V + U by unrolled
    Gauss-Jordan elimination (static n ≤ MAX_UNROLLED_N), then s squarings in an ONNX Loop running
    the batch's largest s (a matrix stops squaring at its own s).
    """
    n = static_dim(self, -1)
    if n is None:
        ctx.unsupported("matrix_exp of a matrix with a dynamic size: the Padé solve is unrolled per column")
    if n > MAX_UNROLLED_N:
        ctx.unsupported(f"matrix_exp of a {n}×{n} matrix: the Padé solve is unrolled, limit n ≤ {MAX_UNROLLED_N}")
    if n == 0:
        return ctx.op.Identity(self)
    A = _f64(ctx, self)
    norm = ctx.op.ReduceMax(ctx.op.ReduceSum(ctx.op.Abs(A), ctx.const([-2]), keepdims=1),
                            ctx.const([-1]), keepdims=1)  # ‖A‖₁, (..., 1, 1)
    s = ctx.op.Ceil(ctx.op.Div(ctx.op.Log(ctx.op.Div(norm, ctx.const(_THETA13, _F64))), ctx.const(np.log(2.0), _F64)))
    s = ctx.op.Max(s, ctx.const(0.0, _F64))
    s = ctx.op.Where(ctx.op.IsNaN(s), ctx.const(0.0, _F64), ctx.op.Min(s, ctx.const(float(_MAX_SQUARINGS), _F64)))
    A = ctx.op.Div(A, ctx.op.Pow(ctx.const(2.0, _F64), s))
    b = [ctx.const(v, _F64) for v in _PADE13]
    eye = ctx.op.Expand(ctx.const(np.eye(n), _F64), ctx.op.Shape(A))
    A2 = ctx.op.MatMul(A, A)
    A4 = ctx.op.MatMul(A2, A2)
    A6 = ctx.op.MatMul(A4, A2)

    def comb(*terms: tuple[int, ir.Value]) -> ir.Value:
        (k0, M0), *rest = terms
        out = ctx.op.Mul(b[k0], M0)
        for k, M in rest:
            out = ctx.op.Add(out, ctx.op.Mul(b[k], M))
        return out

    U = ctx.op.MatMul(A, ctx.op.Add(ctx.op.MatMul(A6, comb((13, A6), (11, A4), (9, A2))),
                                    comb((7, A6), (5, A4), (3, A2), (1, eye))))
    V = ctx.op.Add(ctx.op.MatMul(A6, comb((12, A6), (10, A4), (8, A2))), comb((6, A6), (4, A4), (2, A2), (0, eye)))
    X, _ = _gauss_jordan(ctx, ctx.op.Sub(V, U), ctx.op.Add(V, U), n)
    s_int = ctx.op.Cast(s, to=_I64)
    trips = _trip_count(ctx, s_int, ctx.const(True))

    def square(bctx: Ctx, it: ir.Value, states: list[ir.Value]) -> list[ir.Value]:
        (Y,) = states
        return [bctx.op.Where(bctx.op.Less(it, s_int), bctx.op.MatMul(Y, Y), Y)]

    (X,) = _loop(ctx, trips, [X], square)
    return _back(ctx, X, dtype_of(self))
