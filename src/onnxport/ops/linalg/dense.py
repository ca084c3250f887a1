"""Small dense matrix functions, unrolled for a static n: det, slogdet, inverse and solve
(Gauss-Jordan elimination with partial pivoting), the singular values (one-sided Jacobi) and
linalg's error check; the static-size guard every unrolled linalg algorithm uses. Matrix products
are in ``products.py``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import rank, static_dim
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


# -- determinants, inverse, solve ---------------------------------------------------------------

# Gauss-Jordan elimination is unrolled: one block of ~20 nodes per column, so n is bounded.
MAX_UNROLLED_N = 16


def _only_first_outputs(ctx: Ctx, count: int, what: str) -> None:
    """Refuse when the node's outputs past the first ``count`` (LAPACK's LU factors, pivots) are used:
    ONNX has no LU factorization to produce them."""
    used = ctx.used_outputs()
    if used is None or any(i >= count for i in used):
        ctx.unsupported(f"{what} is used; only the first {count} output(s) have an ONNX encoding")


@translates(aten._linalg_det.default)
def aten_linalg_det(ctx: Ctx, A: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)

    ONNX Det (ONNX operator spec, Det-11) over the trailing two dims, batches included; the
    determinant of a 0×0 matrix is 1, as in torch. LU and pivots are refused when used.
    """
    _only_first_outputs(ctx, 1, "the LU factorization of det")
    det = _det(ctx, A)
    return det, ctx.const(0.0, A.dtype), ctx.const(0, ir.DataType.INT32)


@translates(aten._linalg_slogdet.default)
def aten_linalg_slogdet(ctx: Ctx, A: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)

    sign = sign(det A), logabsdet = log|det A| (torch.linalg.slogdet docs), from ONNX Det: 0 and
    -inf for a singular matrix, as torch. The determinant is formed before the logarithm, so it
    overflows float32 sooner than LAPACK's sum of log-pivots (|det| > 3.4e38).
    """
    _only_first_outputs(ctx, 2, "the LU factorization of slogdet")
    det = _det(ctx, A)
    sign, logabs = ctx.op.Sign(det), ctx.op.Log(ctx.op.Abs(det))
    return sign, logabs, ctx.const(0.0, A.dtype), ctx.const(0, ir.DataType.INT32)


def _det(ctx: Ctx, A: ir.Value) -> ir.Value:
    work = A if A.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE) else ctx.op.Cast(A, to=ir.DataType.FLOAT)
    det = ctx.op.Det(work)
    return det if work is A else ctx.op.Cast(det, to=A.dtype)


def _static_matrix(
    ctx: Ctx, A: ir.Value, what: str, unrolled: str, limit: tuple[Callable[[int, int], int], str, str],
) -> tuple[int, int]:
    """The static (rows, cols) of the matrices ``A`` (..., m, n), for an algorithm unrolled per
    column or sweep.

    Refuses (``ctx.unsupported``) a dynamic size, and a size whose ``limit[0](m, n)`` exceeds
    :data:`MAX_UNROLLED_N`: ``limit`` is ``(max or min, how the limit reads, "ONNX has no ... op")``.
    """
    m, n = static_dim(A, -2), static_dim(A, -1)
    if m is None or n is None:
        ctx.unsupported(f"{what} of a matrix with a dynamic size: {unrolled}, so the matrix size must be static")
    bound, reads, missing = limit
    if bound(m, n) > MAX_UNROLLED_N:
        ctx.unsupported(f"{what} of a {m}×{n} matrix: {unrolled}, limit {reads} ≤ {MAX_UNROLLED_N} ({missing})")
    return m, n


def _static_n(ctx: Ctx, A: ir.Value, what: str) -> int:
    """The static n of square matrices ``A`` (..., n, n) for the unrolled Gauss-Jordan elimination."""
    return _static_matrix(ctx, A, what, "the Gauss-Jordan elimination is unrolled per column",
                          (max, "n", "ONNX has no LU/solve op"))[0]


def _gauss_jordan(ctx: Ctx, A: ir.Value, B: ir.Value, n: int) -> tuple[ir.Value, ir.Value]:
    """Solve A X = B for a batch of n×n matrices A and n×k right-hand sides B.

    Gauss-Jordan elimination with partial pivoting (Golub & Van Loan, Matrix Computations, 4th ed.,
    §3.4.1-3.4.2; the pivot is the first row of largest |a_ij| at or below the diagonal, as LAPACK's
    getrf/idamax). Returns X and LAPACK's ``info``: the 1-based column of the first exactly-zero
    pivot, 0 when A is invertible (int32, batch-shaped).
    """
    M = ctx.op.Concat(A, B, axis=-1)  # (..., n, n + k)
    rows = ctx.const(list(range(n)))  # (n,)
    rows_col = ctx.const([[i] for i in range(n)])  # (n, 1)
    zero = ctx.const(0.0, A.dtype)
    infos = []
    for j in range(n):
        col = ctx.op.Gather(M, ctx.const(j), axis=-1)  # (..., n)
        score = ctx.op.Abs(col) if j == 0 else ctx.op.Where(
            ctx.op.Less(rows, ctx.const(j)), ctx.const(-1.0, A.dtype), ctx.op.Abs(col))
        p = ctx.op.ArgMax(score, axis=-1, keepdims=1)  # (..., 1): first maximal row
        # Row permutation swapping j and p, applied by gathering rows.
        at_j = ctx.op.Equal(rows, ctx.const(j))
        perm = ctx.op.Where(at_j, p, ctx.op.Where(ctx.op.Equal(rows, p), ctx.const(j), rows))  # (..., n)
        index = ctx.op.Expand(ctx.op.Unsqueeze(perm, ctx.const([-1])), ctx.op.Shape(M))
        M = ctx.op.GatherElements(M, index, axis=-2)
        pivot_row = ctx.op.Gather(M, ctx.const([j]), axis=-2)  # (..., 1, n + k)
        pivot = ctx.op.Gather(pivot_row, ctx.const([j]), axis=-1)  # (..., 1, 1)
        infos.append(ctx.op.Equal(ctx.op.Squeeze(pivot, ctx.const([-2, -1])), zero))
        pivot_row = ctx.op.Div(pivot_row, pivot)
        factor = ctx.op.Gather(M, ctx.const([j]), axis=-1)  # (..., n, 1)
        is_j = ctx.op.Equal(rows_col, ctx.const(j))  # (n, 1)
        M = ctx.op.Sub(M, ctx.op.Mul(ctx.op.Where(is_j, zero, factor), pivot_row))
        M = ctx.op.Where(is_j, pivot_row, M)
    X = ctx.op.Slice(M, ctx.const([n]), ctx.const([2**62]), ctx.const([-1]))
    # info: smallest j + 1 whose pivot is zero, else 0 (elementwise: ORT reductions over an empty
    # batch keep the reduced axis).
    info = ctx.const(0, ir.DataType.INT32)
    for j in reversed(range(n)):
        info = ctx.op.Where(infos[j], ctx.const(j + 1, ir.DataType.INT32), info)
    return X, info


def _zero_info(ctx: Ctx, A: ir.Value) -> ir.Value:
    return ctx.op.Expand(ctx.const(0, ir.DataType.INT32), ctx.op.Shape(A, start=0, end=-2))


@translates(aten.linalg_inv_ex.default)
def aten_linalg_inv_ex(ctx: Ctx, A: ir.Value, *, check_errors: bool = False) -> tuple[ir.Value, ir.Value]:
    """linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)

    A⁻¹ solves A X = I: Gauss-Jordan elimination with partial pivoting, unrolled for a static
    n ≤ MAX_UNROLLED_N (see :func:`_gauss_jordan`). ``info`` is LAPACK getrf's (torch.linalg.inv_ex
    docs); ``check_errors`` cannot raise in ONNX, so a singular A gives inf/NaN as info > 0 says.
    """
    n = _static_n(ctx, A, "inverse")
    if n == 0:
        return ctx.op.Identity(A), _zero_info(ctx, A)
    eye = ctx.op.Expand(ctx.const(torch.eye(n), A.dtype), ctx.op.Shape(A))
    return _gauss_jordan(ctx, A, eye, n)


@translates(aten._linalg_solve_ex.default)
def aten_linalg_solve_ex(
    ctx: Ctx, A: ir.Value, B: ir.Value, *, left: bool = True, check_errors: bool = False,
) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """_linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor LU, Tensor pivots, Tensor info)

    X with A X = B (X A = B when not ``left``, i.e. Aᵀ Xᵀ = Bᵀ), batches broadcast; B is a batch of
    vectors when B.ndim == 1 or B.shape == A.shape[:-1] (torch.linalg.solve docs). Gauss-Jordan
    elimination with partial pivoting on [A | B], unrolled for a static n ≤ MAX_UNROLLED_N.
    """
    used = ctx.used_outputs()
    if used is None or used & {1, 2}:
        ctx.unsupported("the LU factorization of solve is used; ONNX has no LU op")
    n = _static_n(ctx, A, "solve")
    rank_a, rank_b = rank(A), rank(B)
    a_val, b_val = ctx.arg_val(0), ctx.arg_val(1)
    vector = rank_b == 1 or (
        a_val is not None and b_val is not None and rank_b == rank_a - 1 and list(b_val.shape) == list(a_val.shape[:-1]))
    if not left:
        A = ctx.op.Transpose(A, perm=[*range(rank_a - 2), rank_a - 1, rank_a - 2])
        if not vector:
            B = ctx.op.Transpose(B, perm=[*range(rank_b - 2), rank_b - 1, rank_b - 2])
    if vector:
        B = ctx.op.Unsqueeze(B, ctx.const([-1]))
    # Broadcast the batch dims of A and B against each other (Expand broadcasts both ways).
    A_full = ctx.op.Expand(A, ctx.op.Concat(ctx.op.Shape(B, start=0, end=-2), ctx.const([n, n]), axis=0))
    B_full = ctx.op.Expand(B, ctx.op.Concat(ctx.op.Shape(A_full, start=0, end=-2), ctx.op.Shape(B, start=-2), axis=0))
    if n == 0:
        X, info = B_full, _zero_info(ctx, A_full)
    else:
        X, info = _gauss_jordan(ctx, A_full, B_full, n)
    if vector:
        X = ctx.op.Squeeze(X, ctx.const([-1]))
    elif not left:
        out_rank = len(ctx.val()[0].shape) if ctx.node is not None else rank_b
        X = ctx.op.Transpose(X, perm=[*range(out_rank - 2), out_rank - 1, out_rank - 2])
    return X, ctx.const(0.0, A.dtype), ctx.const(0, ir.DataType.INT32), info


@translates(aten._linalg_check_errors.default)
def aten_linalg_check_errors(ctx: Ctx, info: ir.Value, api_name: str, *, is_matrix: bool) -> tuple[()]:
    """_linalg_check_errors(Tensor info, str api_name, *, bool is_matrix) -> ()

    The eager check raising on a singular matrix. ONNX has no way to raise: no node, and a singular
    input gives the inf/NaN the unchecked ``*_ex`` op gives (its ``info`` output reports it).
    """
    return ()


# One-sided Jacobi: sweeps of n-1 rounds of disjoint column-pair rotations, run a fixed number of times.
JACOBI_SWEEPS = 10


def _round_robin(n: int) -> list[tuple[list[int], list[int]]]:
    """The n-1 rounds (n even) of the round-robin ordering: every pair of columns meets once per
    sweep, n/2 disjoint pairs a round (Brent & Luk 1985, the parallel Jacobi ordering)."""
    players = list(range(n))
    rounds = []
    for _ in range(n - 1):
        half = n // 2
        rounds.append((players[:half], players[half:][::-1]))
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


@translates(aten._linalg_svd.default)
def aten_linalg_svd(
    ctx: Ctx, A: ir.Value, full_matrices: bool = False, compute_uv: bool = True, *, driver: str | None = None,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)

    Singular values only (``compute_uv=False``: svdvals, matrix_rank): one-sided Jacobi (Hestenes
    1958; Demmel & Veselić 1992 for its relative accuracy) with the round-robin pair ordering,
    JACOBI_SWEEPS sweeps unrolled for a static min(m, n) ≤ MAX_UNROLLED_N; σ are the final column
    norms, sorted descending. U and Vh are refused when used.
    """
    used = ctx.used_outputs()
    if compute_uv and (used is None or used - {1}):
        ctx.unsupported("singular vectors are used: ONNX has no SVD; only singular values are encoded")
    m, n = static_dim(A, -2), static_dim(A, -1)
    if m is None or n is None:
        ctx.unsupported("svd of a matrix with a dynamic size: the Jacobi sweeps are unrolled")
    r = rank(A)
    x = A
    if m < n:  # rotate the columns of Aᵀ: min(m, n) of them
        x = ctx.op.Transpose(A, perm=[*range(r - 2), r - 1, r - 2])
        m, n = n, m
    if n > MAX_UNROLLED_N:
        ctx.unsupported(f"singular values of a matrix with {n} columns: the Jacobi sweeps are unrolled, limit "
                        f"min(m, n) ≤ {MAX_UNROLLED_N}")
    empty = ctx.const(np.zeros((0,), np.float32), A.dtype)
    if n == 0 or m == 0:
        return empty, ctx.op.Expand(empty, ctx.op.Concat(ctx.op.Shape(x, start=0, end=-2), ctx.const([0]), axis=0)), empty
    work = x if x.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE) else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    size = n + n % 2
    if size != n:  # a zero column makes the pairing even; its norm stays 0 and is dropped below
        pad = ctx.op.Expand(ctx.const(0.0, work.dtype),
                            ctx.op.Concat(ctx.op.Shape(work, start=0, end=-1), ctx.const([1]), axis=0))
        work = ctx.op.Concat(work, pad, axis=-1)
    work, _ = _one_sided_jacobi(ctx, work, size, r)
    rows_axis = ctx.const([r - 2])
    norms = ctx.op.Sqrt(ctx.op.ReduceSum(ctx.op.Mul(work, work), rows_axis, keepdims=0))  # (..., size)
    S, _ = ctx.op.TopK(norms, ctx.const([n]), axis=-1, largest=1, sorted=1, _outputs=2)
    if S.dtype != A.dtype:
        S = ctx.op.Cast(S, to=A.dtype)
    return empty, S, empty


def _jacobi_rotation(ctx: Ctx, app: ir.Value, aqq: ir.Value, apq: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(c, s) of the rotation J = [[c, s], [-s, c]] zeroing the off-diagonal of Jᵀ [[app, apq], [apq, aqq]] J
    (Golub & Van Loan, Matrix Computations, 4th ed., §8.5.2, Algorithm 8.5.1 sym.schur2; the smaller
    of the two angles). Elementwise; apq = 0 gives the identity."""
    dtype = app.dtype
    zero, one, two = ctx.const(0.0, dtype), ctx.const(1.0, dtype), ctx.const(2.0, dtype)
    idle = ctx.op.Equal(apq, zero)
    zeta = ctx.op.Div(ctx.op.Sub(aqq, app), ctx.op.Mul(two, ctx.op.Where(idle, one, apq)))
    sign = ctx.op.Where(ctx.op.Less(zeta, zero), ctx.const(-1.0, dtype), one)
    t = ctx.op.Div(sign, ctx.op.Add(ctx.op.Abs(zeta), ctx.op.Sqrt(ctx.op.Add(one, ctx.op.Mul(zeta, zeta)))))
    t = ctx.op.Where(idle, zero, t)
    c = ctx.op.Div(one, ctx.op.Sqrt(ctx.op.Add(one, ctx.op.Mul(t, t))))
    return c, ctx.op.Mul(c, t)


def _one_sided_jacobi(
    ctx: Ctx, work: ir.Value, size: int, r: int, V: ir.Value | None = None,
) -> tuple[ir.Value, ir.Value | None]:
    """JACOBI_SWEEPS sweeps of one-sided Jacobi (Hestenes 1958) on the ``size`` (even) columns of the
    rank-``r`` ``work``: returns W = work·V with mutually orthogonal columns (their norms are the
    singular values) and, when ``V`` is given, V times the same rotations (the right singular vectors
    when V starts as the identity)."""
    rows_axis = ctx.const([r - 2])
    for _ in range(JACOBI_SWEEPS):
        for p_idx, q_idx in _round_robin(size):
            ap = ctx.op.Gather(work, ctx.const(p_idx), axis=-1)  # (..., m, size/2)
            aq = ctx.op.Gather(work, ctx.const(q_idx), axis=-1)
            alpha = ctx.op.ReduceSum(ctx.op.Mul(ap, ap), rows_axis, keepdims=1)
            beta = ctx.op.ReduceSum(ctx.op.Mul(aq, aq), rows_axis, keepdims=1)
            gamma = ctx.op.ReduceSum(ctx.op.Mul(ap, aq), rows_axis, keepdims=1)
            c, s = _jacobi_rotation(ctx, alpha, beta, gamma)
            order = p_idx + q_idx
            inverse = ctx.const([order.index(k) for k in range(size)])
            mats = [work] if V is None else [work, V]
            for i, M in enumerate(mats):
                mp = ap if i == 0 else ctx.op.Gather(M, ctx.const(p_idx), axis=-1)
                mq = aq if i == 0 else ctx.op.Gather(M, ctx.const(q_idx), axis=-1)
                new_p = ctx.op.Sub(ctx.op.Mul(c, mp), ctx.op.Mul(s, mq))
                new_q = ctx.op.Add(ctx.op.Mul(s, mp), ctx.op.Mul(c, mq))
                mats[i] = ctx.op.Gather(ctx.op.Concat(new_p, new_q, axis=-1), inverse, axis=-1)
            work, V = mats[0], (mats[1] if V is not None else None)
    return work, V
