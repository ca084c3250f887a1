"""LDLᵀ factorization with Bunch-Kaufman pivoting (LAPACK sytf2, lower) and its solve (sytrs),
unrolled over a static matrix size; shares the column helpers of ``factorization.py``."""

from __future__ import annotations

import onnx_ir as ir
import torch

from onnxport.ops._common import _back, _f64, dtype_of, rank, shape_of
from onnxport.ops.linalg.dense import _zero_info
from onnxport.ops.linalg.factorization import (
    _F64,
    _I32,
    _I64,
    _batch,
    _broadcast_pair,
    _col,
    _entry,
    _first_failure,
    _gather_rows,
    _mask,
    _mT,
    _row,
    _rows_col,
    _square_n,
    _swap_index,
)
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.linalg_ldl_solve.default)
def aten_linalg_ldl_solve(
    ctx: Ctx, LD: ir.Value, pivots: ir.Value, B: ir.Value, *, hermitian: bool = False,
) -> ir.Value:
    """linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor

    X with A X = B given sytrf's compact A = L D Lᵀ (lower) and Bunch-Kaufman pivots
    (torch.linalg.ldl_solve docs; LAPACK sytrs, uplo='L'): pivots[k] > 0 is a 1×1 block with rows
    k and pivots[k] exchanged, a negative pair pivots[k] = pivots[k+1] = -p a 2×2 block with rows
    k+1 and p exchanged. The block structure is data, so every step computes both block kinds and
    each batch element keeps its own (Where on per-batch masks); batches broadcast.
    """
    n = _square_n(ctx, LD, "ldl_solve")
    r = max(rank(LD), rank(B))
    F, X = _broadcast_pair(ctx, _f64(ctx, LD), _f64(ctx, B), n)
    if n == 0 or shape_of(B)[-1] == 0:
        return _back(ctx, X, dtype_of(B))
    piv = ctx.op.Cast(ctx.op.Expand(pivots, ctx.op.Concat(_batch(ctx, F), ctx.const([n]), axis=0)), to=_I64)
    rows, rows_col = ctx.const(list(range(n))), _rows_col(ctx, n)
    zero = ctx.const(0.0, _F64)

    def at(j: int) -> ir.Value:  # pivots[..., j] as (..., 1)
        return ctx.op.Gather(piv, ctx.const([j]), axis=-1)

    def mask3(flag: ir.Value) -> ir.Value:  # (..., 1) → (..., 1, 1) for a matrix-wide Where
        return ctx.op.Unsqueeze(flag, ctx.const([-1]))

    def below(j: int) -> ir.Value:  # column j of L strictly below row j, (..., n, 1)
        return ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(j)), _col(ctx, F, j), zero)

    def set_row(M: ir.Value, j: int, row: ir.Value) -> ir.Value:
        return ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(j)), row, M)

    def swapped(M: ir.Value, j: int, p: ir.Value) -> ir.Value:
        return _gather_rows(ctx, M, _swap_index(ctx, rows, j, p))

    # Block structure: one[k] (1×1), start[k] (first of a 2×2), second[k] (second of a 2×2).
    one: list[ir.Value] = []
    start: list[ir.Value] = []
    second: list[ir.Value | None] = []  # None for k = 0: no block can end there
    prev_start: ir.Value | None = None
    for k in range(n):
        neg = ctx.op.Less(at(k), ctx.const(0))
        one.append(ctx.op.Not(neg))
        second.append(prev_start)
        prev_start = neg if prev_start is None else ctx.op.And(neg, ctx.op.Not(prev_start))
        start.append(prev_start)

    # L D Y = Pᵀ B, forward.
    for k in range(n):
        p1 = ctx.op.Where(one[k], ctx.op.Sub(at(k), ctx.const(1)), ctx.const(k))
        X1 = swapped(X, k, p1)
        xk = _row(ctx, X1, k)
        X1 = ctx.op.Sub(X1, ctx.op.Mul(below(k), xk))
        X1 = set_row(X1, k, ctx.op.Div(xk, _entry(ctx, F, k, k)))
        new = X1
        if k < n - 1:
            p2 = ctx.op.Where(start[k], ctx.op.Sub(ctx.op.Neg(at(k)), ctx.const(1)), ctx.const(k + 1))
            X2 = swapped(X, k + 1, p2)
            xa, xb = _row(ctx, X2, k), _row(ctx, X2, k + 1)
            lower2 = ctx.op.Greater(rows_col, ctx.const(k + 1))
            upd = ctx.op.Add(ctx.op.Mul(_col(ctx, F, k), xa), ctx.op.Mul(_col(ctx, F, k + 1), xb))
            X2 = ctx.op.Sub(X2, ctx.op.Where(lower2, upd, zero))
            d21 = _entry(ctx, F, k + 1, k)
            d11 = ctx.op.Div(_entry(ctx, F, k, k), d21)
            d22 = ctx.op.Div(_entry(ctx, F, k + 1, k + 1), d21)
            denom = ctx.op.Sub(ctx.op.Mul(d11, d22), ctx.const(1.0, _F64))
            ba, bb = ctx.op.Div(xa, d21), ctx.op.Div(xb, d21)
            X2 = set_row(X2, k, ctx.op.Div(ctx.op.Sub(ctx.op.Mul(d22, ba), bb), denom))
            X2 = set_row(X2, k + 1, ctx.op.Div(ctx.op.Sub(ctx.op.Mul(d11, bb), ba), denom))
            new = ctx.op.Where(mask3(start[k]), X2, new)
        X = new if k == 0 else ctx.op.Where(mask3(ctx.op.Or(one[k], start[k])), new, X)

    # Lᵀ Pᵀ X = Y, backward.
    for k in reversed(range(n)):
        tail = ctx.op.MatMul(_mT(ctx, below(k), r), X)  # Σ_{i>k} L[i,k] X[i]
        X1 = set_row(X, k, ctx.op.Sub(_row(ctx, X, k), tail))
        p1 = ctx.op.Where(one[k], ctx.op.Sub(at(k), ctx.const(1)), ctx.const(k))
        new = swapped(X1, k, p1)
        if k > 0:
            tail_prev = ctx.op.MatMul(_mT(ctx, _below_from(ctx, F, rows_col, k - 1, k), r), X)
            X2 = set_row(X1, k - 1, ctx.op.Sub(_row(ctx, X, k - 1), tail_prev))
            ends_pair = second[k]
            assert ends_pair is not None  # k > 0
            p2 = ctx.op.Where(ends_pair, ctx.op.Sub(ctx.op.Neg(at(k)), ctx.const(1)), ctx.const(k))
            new = ctx.op.Where(mask3(ends_pair), swapped(X2, k, p2), new)
            X = ctx.op.Where(mask3(ctx.op.Not(start[k])), new, X)
        else:
            X = ctx.op.Where(mask3(one[k]), new, X)
    return _back(ctx, X, dtype_of(B))


def _below_from(ctx: Ctx, F: ir.Value, rows_col: ir.Value, j: int, after: int) -> ir.Value:
    """Column j of F at rows > ``after``, zero elsewhere: (..., n, 1)."""
    return ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(after)), _col(ctx, F, j), ctx.const(0.0, _F64))


def _sym_permute(ctx: Ctx, S: ir.Value, a: ir.Value, b: ir.Value, rows: ir.Value) -> ir.Value:
    """P S P for the transposition of indices a and b ((..., 1) int64 each, per batch element)."""
    order = ctx.op.Where(ctx.op.Equal(rows, a), b, ctx.op.Where(ctx.op.Equal(rows, b), a, rows))  # (..., n)
    S = _gather_rows(ctx, S, order)
    index = ctx.op.Expand(ctx.op.Unsqueeze(order, ctx.const([-2])), ctx.op.Shape(S))
    return ctx.op.GatherElements(S, index, axis=-1)


def _sytf2_lower(ctx: Ctx, A: ir.Value, n: int, r: int) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Bunch-Kaufman LDLᵀ of a batch of symmetric float64 matrices (lower triangle read), in LAPACK
    sytrf's compact form with its pivots and ``info``.

    LAPACK dsytf2, uplo='L' (the unblocked code sytrf runs for n below its block size, > 16), after
    Bunch & Kaufman, "Some stable methods for calculating inertia and solving symmetric linear
    systems" (1977), α = (1 + √17)/8: at column k with colmax = max_{i>k} |a_ik| (first at imax) and
    rowmax = max_{j≠imax} |a_imax,j| over the trailing matrix, the pivot is 1×1 at k when
    |a_kk| ≥ α·colmax or |a_kk| ≥ α·colmax·(colmax/rowmax), 1×1 at imax when |a_imax,imax| ≥
    α·rowmax, else the 2×2 block (k, imax) with imax moved to k+1. Rows and columns are exchanged in
    the trailing matrix only (earlier columns of L stay as stored); a zero column sets ``info``
    and is skipped. The trailing matrix is kept dense and symmetric (from the lower triangle LAPACK
    updates, with its operation order). Whether step k starts a block or is the second half of a
    2×2 one is data: every step computes both block kinds and each batch element keeps its own.
    """
    alpha = (1.0 + 17.0 ** 0.5) / 8.0
    rows, rows_col = ctx.const(list(range(n))), _rows_col(ctx, n)
    cols_row = ctx.const([list(range(n))])
    lower = _mask(ctx, n, n, lambda i, j: i >= j)
    zero, one = ctx.const(0.0, _F64), ctx.const(1.0, _F64)
    S = ctx.op.Where(lower, A, _mT(ctx, A, r))

    def sym(M: ir.Value) -> ir.Value:
        return ctx.op.Where(lower, M, _mT(ctx, M, r))

    skip = None  # (..., 1, 1): step k is the second column of a 2×2 block
    pending_col = pending_piv = None
    cols, pivs, fails = [], [], []
    for k in range(n):
        akk = _entry(ctx, S, k, k)
        absakk = ctx.op.Abs(akk)
        kc = ctx.const([[k]])  # (1, 1) int64
        if k < n - 1:
            mag = ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(k)), ctx.op.Abs(_col(ctx, S, k)), ctx.const(-1.0, _F64))
            # Positive axes: onnxruntime reduces an empty batch over a negative axis to the input shape.
            imax = ctx.op.ArgMax(mag, axis=r - 2, keepdims=1)  # (..., 1, 1): first largest (BLAS i_amax)
            imax = ctx.op.Slice(imax, ctx.const([0]), ctx.const([1]), ctx.const([r - 2]))
            colmax = ctx.op.ReduceMax(mag, ctx.const([r - 2]), keepdims=1)
            row_i = ctx.op.GatherElements(S, ctx.op.Expand(imax, ctx.op.Concat(_batch(ctx, S), ctx.const([1, n]), axis=0)),
                                          axis=-2)  # (..., 1, n)
            in_row = ctx.op.And(ctx.op.GreaterOrEqual(cols_row, ctx.const(k)), ctx.op.Not(ctx.op.Equal(cols_row, imax)))
            rowmax = ctx.op.ReduceMax(ctx.op.Where(in_row, ctx.op.Abs(row_i), ctx.const(-1.0, _F64)), ctx.const([r - 1]),
                                      keepdims=1)
            aii = ctx.op.Abs(ctx.op.GatherElements(row_i, imax, axis=-1))
            acol = ctx.op.Mul(ctx.const(alpha, _F64), colmax)
            is_zero = ctx.op.Or(ctx.op.Equal(ctx.op.Max(absakk, colmax), zero), ctx.op.IsNaN(absakk))
            keep = ctx.op.Or(ctx.op.GreaterOrEqual(absakk, acol),
                             ctx.op.GreaterOrEqual(absakk, ctx.op.Mul(acol, ctx.op.Div(colmax, rowmax))))
            keep = ctx.op.Or(keep, is_zero)
            at_imax = ctx.op.GreaterOrEqual(aii, ctx.op.Mul(ctx.const(alpha, _F64), rowmax))
            two = ctx.op.And(ctx.op.Not(keep), ctx.op.Not(at_imax))
            kp = ctx.op.Where(keep, kc, imax)
            kk = ctx.op.Where(two, ctx.const([[k + 1]]), kc)
            Sp = _sym_permute(ctx, S, ctx.op.Squeeze(kk, ctx.const([r - 1])), ctx.op.Squeeze(kp, ctx.const([r - 1])), rows)
        else:
            is_zero = ctx.op.Or(ctx.op.Equal(absakk, zero), ctx.op.IsNaN(absakk))
            two, kp, Sp = None, kc, S
        # 1×1 block at k (LAPACK dsyr with -1/d, then dscal of the column by 1/d).
        d = _entry(ctx, Sp, k, k)
        below_k = ctx.op.Greater(rows_col, ctx.const(k))
        x = ctx.op.Where(below_k, _col(ctx, Sp, k), zero)
        inv = ctx.op.Div(one, d)
        l1 = ctx.op.Where(ctx.op.Or(is_zero, ctx.op.Not(below_k)), x, ctx.op.Mul(x, inv))
        col1 = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(k)), d, l1)
        new_S, new_col = Sp, col1
        if k < n - 1:
            trailing = _mask(ctx, n, n, lambda i, j, k=k: i > k and j > k)
            S1 = ctx.op.Add(Sp, ctx.op.Where(trailing, ctx.op.Mul(x, ctx.op.Mul(_mT(ctx, x, r), ctx.op.Neg(inv))), zero))
            new_S = ctx.op.Where(is_zero, Sp, sym(S1))
            # 2×2 block (k, k+1): W = X D⁻¹ as LAPACK forms it, trailing -= X Wᵀ.
            a, b, c = d, _entry(ctx, Sp, k + 1, k), _entry(ctx, Sp, k + 1, k + 1)
            d11, d22 = ctx.op.Div(c, b), ctx.op.Div(a, b)
            t = ctx.op.Div(one, ctx.op.Sub(ctx.op.Mul(d11, d22), one))
            d21 = ctx.op.Div(t, b)
            below2 = ctx.op.Greater(rows_col, ctx.const(k + 1))
            X0 = ctx.op.Where(below2, _col(ctx, Sp, k), zero)
            X1 = ctx.op.Where(below2, _col(ctx, Sp, k + 1), zero)
            wk = ctx.op.Where(below2, ctx.op.Mul(d21, ctx.op.Sub(ctx.op.Mul(d11, X0), X1)), zero)
            wk1 = ctx.op.Where(below2, ctx.op.Mul(d21, ctx.op.Sub(ctx.op.Mul(d22, X1), X0)), zero)
            trailing2 = _mask(ctx, n, n, lambda i, j, k=k: i > k + 1 and j > k + 1)
            upd = ctx.op.Add(ctx.op.Mul(X0, _mT(ctx, wk, r)), ctx.op.Mul(X1, _mT(ctx, wk1, r)))
            S2 = sym(ctx.op.Sub(Sp, ctx.op.Where(trailing2, upd, zero)))
            col2 = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(k)), a,
                              ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(k + 1)), b, wk))
            next_col = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(k + 1)), c, wk1)
            assert two is not None
            new_S = ctx.op.Where(two, S2, new_S)
            new_col = ctx.op.Where(two, col2, new_col)
        kp1 = ctx.op.Add(kp, ctx.const(1))  # 1-based
        piv = kp1 if two is None else ctx.op.Where(two, ctx.op.Neg(kp1), kp1)
        fail = is_zero
        if skip is not None:
            assert pending_col is not None and pending_piv is not None
            new_S = ctx.op.Where(skip, S, new_S)
            new_col = ctx.op.Where(skip, pending_col, new_col)
            piv = ctx.op.Where(skip, pending_piv, piv)
            fail = ctx.op.And(ctx.op.Not(skip), is_zero)
        S = new_S
        cols.append(new_col)
        pivs.append(piv)
        fails.append(ctx.op.Squeeze(fail, ctx.const([r - 2, r - 1])))
        if two is not None:
            pending_col, pending_piv = next_col, ctx.op.Neg(kp1)
            skip = two if skip is None else ctx.op.And(ctx.op.Not(skip), two)
    LD = ctx.op.Concat(*cols, axis=-1)
    pivots = ctx.op.Cast(ctx.op.Squeeze(ctx.op.Concat(*pivs, axis=-1), ctx.const([r - 2])), to=_I32)
    pivots = ctx.op.Expand(pivots, ctx.op.Concat(_batch(ctx, A), ctx.const([n]), axis=0))  # n = 1: constant
    return LD, pivots, _first_failure(ctx, fails)


@translates(aten.linalg_ldl_factor_ex.default)
def aten_linalg_ldl_factor_ex(
    ctx: Ctx, self: ir.Value, *, hermitian: bool = False, check_errors: bool = False,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)

    A = L D Lᵀ with Bunch-Kaufman pivoting in LAPACK sytrf's compact lower form (torch.linalg.
    ldl_factor_ex docs): L's multipliers below D's 1×1/2×2 blocks, the strict upper triangle zero,
    1-based pivots (negative pairs for 2×2 blocks), ``info`` = first exactly singular D block
    (:func:`_sytf2_lower`). ``hermitian`` selects hetrf over sytrf, the same for real matrices;
    ``check_errors`` cannot raise in ONNX.
    """
    n = _square_n(ctx, self, "ldl_factor")
    if n == 0:
        empty_piv = ctx.op.Expand(ctx.const(torch.zeros(0, dtype=torch.int32)),
                                  ctx.op.Concat(_batch(ctx, self), ctx.const([0]), axis=0))
        return ctx.op.Identity(self), empty_piv, _zero_info(ctx, self)
    LD, pivots, info = _sytf2_lower(ctx, _f64(ctx, self), n, rank(self))
    return _back(ctx, LD, dtype_of(self)), pivots, info
