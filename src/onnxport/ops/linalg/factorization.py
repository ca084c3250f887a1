"""Matrix factorizations and triangular solves (Cholesky, LU, QR, triangular systems;
LDLᵀ is in ``ldl.py``),
unrolled over a static matrix size with ONNX tensor ops.

ONNX has no factorization operator, so every algorithm here is written out column by column for the
static size of the matrix (one block of ~10-20 vectorized nodes per column, batches over the leading
dims). The arithmetic runs in float64 and is cast back: LAPACK's float32 routines accumulate in
float32 but in a different order, and the double computation keeps onnxport's own rounding well
inside the float32 tolerance. Pivot and sign choices follow LAPACK's so the raw outputs match eager.
"""

from __future__ import annotations

import onnx_ir as ir
import torch

from onnxport.ops._common import _back, _f64, dtype_of, rank, shape_of, static_dim
from onnxport.ops.linalg.dense import _static_matrix, _static_n, _zero_info
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

_F64 = ir.DataType.DOUBLE
_I32 = ir.DataType.INT32
_I64 = ir.DataType.INT64


# -- helpers ----------------------------------------------------------------------------------

def _static_mn(ctx: Ctx, A: ir.Value, what: str) -> tuple[int, int]:
    """The static (rows, cols) of A; refuses a dynamic size (the algorithm is unrolled per column)
    and sizes past MAX_UNROLLED_N."""
    return _static_matrix(ctx, A, what, "the factorization is unrolled per column",
                          (max, "max(m, n)", "ONNX has no factorization op"))


def _square_n(ctx: Ctx, A: ir.Value, what: str) -> int:
    _static_mn(ctx, A, what)
    return _static_n(ctx, A, what)


def _mT(ctx: Ctx, x: ir.Value, r: int) -> ir.Value:
    """Swap the last two axes of a rank-``r`` value."""
    return ctx.op.Transpose(x, perm=[*range(r - 2), r - 1, r - 2])


def _col(ctx: Ctx, M: ir.Value, j: int) -> ir.Value:
    return ctx.op.Gather(M, ctx.const([j]), axis=-1)  # (..., m, 1)


def _row(ctx: Ctx, M: ir.Value, j: int) -> ir.Value:
    return ctx.op.Gather(M, ctx.const([j]), axis=-2)  # (..., 1, n)


def _entry(ctx: Ctx, M: ir.Value, i: int, j: int) -> ir.Value:
    return ctx.op.Gather(_row(ctx, M, i), ctx.const([j]), axis=-1)  # (..., 1, 1)


def _rows_col(ctx: Ctx, m: int) -> ir.Value:
    return ctx.const([[i] for i in range(m)])  # (m, 1) int64


def _mask(ctx: Ctx, m: int, n: int, keep) -> ir.Value:
    """A constant (m, n) boolean mask with ``keep(i, j)``."""
    return ctx.const(torch.tensor([[bool(keep(i, j)) for j in range(n)] for i in range(m)], dtype=torch.bool)
                     .reshape(m, n))


def _eye(ctx: Ctx, m: int, n: int) -> ir.Value:
    return ctx.const(torch.eye(m, n, dtype=torch.float64))


def _batch(ctx: Ctx, x: ir.Value, trailing: int = 2) -> ir.Value:
    """The batch shape (all but the ``trailing`` last dims) as a 1-D INT64 tensor."""
    return ctx.op.Shape(x, start=0, end=-trailing)


def _first_failure(ctx: Ctx, fails: list[ir.Value]) -> ir.Value:
    """LAPACK's ``info``: 1 + the first step whose flag is set, 0 when none (int32, elementwise so an
    empty batch stays empty)."""
    info = ctx.const(0, _I32)
    for j in reversed(range(len(fails))):
        info = ctx.op.Where(fails[j], ctx.const(j + 1, _I32), info)
    return info


def _broadcast_pair(ctx: Ctx, A: ir.Value, B: ir.Value, n: int) -> tuple[ir.Value, ir.Value]:
    """A (..., n, n) and B (..., n, k) expanded to their common batch shape."""
    A_full = ctx.op.Expand(A, ctx.op.Concat(_batch(ctx, B), ctx.const([n, n]), axis=0))
    B_full = ctx.op.Expand(B, ctx.op.Concat(_batch(ctx, A_full), ctx.op.Shape(B, start=-2), axis=0))
    return A_full, B_full


# -- triangular systems -----------------------------------------------------------------------

def _trsm(ctx: Ctx, T: ir.Value, B: ir.Value, n: int, *, lower: bool, unit: bool) -> ir.Value:
    """X with T X = B for a batch of triangular T (..., n, n), B (..., n, k) of the same batch shape.

    Column-oriented forward (lower) / back (upper) substitution (Golub & Van Loan, Matrix
    Computations, 4th ed., §3.1.1-3.1.2, Algorithms 3.1.3/3.1.4); only T's triangle is read, and its
    diagonal is taken as ones when ``unit`` (LAPACK trtrs / trsm ``diag='U'``).
    """
    strict = _mask(ctx, n, n, (lambda i, j: i > j) if lower else (lambda i, j: i < j))
    Tm = ctx.op.Where(strict, T, ctx.const(0.0, _F64))
    xs: dict[int, ir.Value] = {}
    order = list(range(n)) if lower else list(reversed(range(n)))
    for step, j in enumerate(order):
        x = _row(ctx, B, j)  # (..., 1, k)
        if not unit:
            x = ctx.op.Div(x, _entry(ctx, T, j, j))
        xs[j] = x
        if step < n - 1:
            B = ctx.op.Sub(B, ctx.op.Mul(_col(ctx, Tm, j), x))
    return ctx.op.Concat(*[xs[j] for j in range(n)], axis=-2)


def _solve_tri(
    ctx: Ctx, A: ir.Value, B: ir.Value, n: int, r: int, *, upper: bool, left: bool, unit: bool,
) -> ir.Value:
    """X with A X = B (X A = B when not ``left``), A triangular (float64, rank-``r`` result)."""
    if not left:  # X A = B  ⇔  Aᵀ Xᵀ = Bᵀ, and Aᵀ has the other triangle
        A, B, upper = _mT(ctx, A, rank(A)), _mT(ctx, B, rank(B)), not upper
    A, B = _broadcast_pair(ctx, A, B, n)
    X = B if n == 0 else _trsm(ctx, A, B, n, lower=not upper, unit=unit)
    return X if left else _mT(ctx, X, r)


@translates(aten.linalg_solve_triangular.default)
def aten_linalg_solve_triangular(
    ctx: Ctx, self: ir.Value, B: ir.Value, *, upper: bool, left: bool = True, unitriangular: bool = False,
) -> ir.Value:
    """linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor

    X with A X = B (X A = B when not ``left``) for triangular A, batches broadcast; only the
    ``upper``/lower triangle of A is read (torch.linalg.solve_triangular docs, LAPACK trtrs).
    Substitution unrolled over the static n (:func:`_trsm`).
    """
    n = _square_n(ctx, self, "solve_triangular")
    r = max(rank(self), rank(B))
    X = _solve_tri(ctx, _f64(ctx, self), _f64(ctx, B), n, r, upper=upper, left=left, unit=unitriangular)
    return _back(ctx, X, dtype_of(B))


@translates(aten.triangular_solve.default)
def aten_triangular_solve(
    ctx: Ctx, self: ir.Value, A: ir.Value, upper: bool = True, transpose: bool = False, unitriangular: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)

    X with op(A) X = B, op(A) = Aᵀ when ``transpose`` (torch.triangular_solve docs, LAPACK trtrs);
    the second output is A broadcast to the batch shape of the solution.
    """
    n = _square_n(ctx, A, "triangular_solve")
    T = _f64(ctx, A)
    if transpose:
        T, upper = _mT(ctx, T, rank(A)), not upper
    T_full, B_full = _broadcast_pair(ctx, T, _f64(ctx, self), n)
    X = B_full if n == 0 else _trsm(ctx, T_full, B_full, n, lower=not upper, unit=unitriangular)
    coeff = ctx.op.Expand(A, ctx.op.Concat(_batch(ctx, B_full), ctx.const([n, n]), axis=0))
    return _back(ctx, X, dtype_of(self)), coeff


# -- Cholesky ---------------------------------------------------------------------------------

def _cholesky_lower(ctx: Ctx, A: ir.Value, n: int, r: int) -> tuple[ir.Value, ir.Value]:
    """L (lower) with A = L Lᵀ from A's lower triangle, and LAPACK potrf's ``info``.

    Outer-product Cholesky (Golub & Van Loan §4.2.5, Algorithm 4.2.2): column j is the current
    Schur complement's column over sqrt of its diagonal, then a rank-1 downdate. A step fails when
    the diagonal is not > 0 (or NaN), as LAPACK potf2; the output then is what eager returns: the
    finished columns, the failing diagonal element, and A's lower triangle elsewhere.
    """
    rows_col = _rows_col(ctx, n)
    zero = ctx.const(0.0, _F64)
    M = A
    ok_prev = None
    cols, fails = [], []
    for j in range(n):
        c = _col(ctx, M, j)  # (..., n, 1)
        d = ctx.op.Gather(c, ctx.const([j]), axis=-2)  # (..., 1, 1)
        good = ctx.op.Greater(d, zero)
        fails.append(ctx.op.Squeeze(ctx.op.Not(good), ctx.const([-2, -1])))
        ok = good if ok_prev is None else ctx.op.And(ok_prev, good)
        below = ctx.op.GreaterOrEqual(rows_col, ctx.const(j))
        l_col = ctx.op.Where(below, ctx.op.Div(c, ctx.op.Sqrt(d)), zero)
        a_col = ctx.op.Where(below, _col(ctx, A, j), zero)
        failed_here = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(j)), d, a_col)
        cols.append(ctx.op.Where(ok, l_col, failed_here if ok_prev is None else
                                 ctx.op.Where(ok_prev, failed_here, a_col)))
        if j < n - 1:
            M = ctx.op.Sub(M, ctx.op.Mul(l_col, _mT(ctx, l_col, r)))
        ok_prev = ok
    return ctx.op.Concat(*cols, axis=-1), _first_failure(ctx, fails)


def _cholesky(ctx: Ctx, A: ir.Value, upper: bool, what: str) -> tuple[ir.Value, ir.Value]:
    n = _square_n(ctx, A, what)
    if n == 0:
        return ctx.op.Identity(A), _zero_info(ctx, A)
    r = rank(A)
    work = _f64(ctx, A)
    if upper:  # U = (chol of Aᵀ's lower triangle)ᵀ: reads A's upper triangle, as LAPACK uplo='U'
        work = _mT(ctx, work, r)
    L, info = _cholesky_lower(ctx, work, n, r)
    return _back(ctx, _mT(ctx, L, r) if upper else L, dtype_of(A)), info


@translates(aten.linalg_cholesky_ex.default)
def aten_linalg_cholesky_ex(
    ctx: Ctx, self: ir.Value, *, upper: bool = False, check_errors: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)

    A = L Lᵀ (A = Uᵀ U when ``upper``), reading one triangle of A (torch.linalg.cholesky_ex docs,
    LAPACK potrf). ``info`` is 0, or the order of the first leading minor that is not positive
    definite; ``check_errors`` cannot raise in ONNX.
    """
    return _cholesky(ctx, self, upper, "cholesky")


@translates(aten.cholesky.default)
def aten_cholesky(ctx: Ctx, self: ir.Value, upper: bool = False) -> ir.Value:
    """cholesky(Tensor self, bool upper=False) -> Tensor

    The deprecated torch.cholesky: linalg_cholesky_ex's factor without the error check.
    """
    return _cholesky(ctx, self, upper, "cholesky")[0]


def _cholesky_solve(ctx: Ctx, B: ir.Value, F: ir.Value, n: int, upper: bool, r: int) -> ir.Value:
    """X with A X = B, A = F Fᵀ (F lower) or Fᵀ F (F upper): two triangular solves (LAPACK potrs);
    ``r`` is the result's rank."""
    if upper:
        F = _mT(ctx, F, rank(F))  # A = Fᵀ F = L Lᵀ with L = Fᵀ
    L, B = _broadcast_pair(ctx, F, B, n)
    if n == 0:
        return B
    Y = _trsm(ctx, L, B, n, lower=True, unit=False)
    return _trsm(ctx, _mT(ctx, L, r), Y, n, lower=False, unit=False)


@translates(aten.cholesky_solve.default)
def aten_cholesky_solve(ctx: Ctx, self: ir.Value, input2: ir.Value, upper: bool = False) -> ir.Value:
    """cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor

    X with A X = B given B = ``self`` and A's Cholesky factor ``input2`` (torch.cholesky_solve docs,
    LAPACK potrs): forward then back substitution, batches broadcast.
    """
    n = _square_n(ctx, input2, "cholesky_solve")
    r = max(rank(self), rank(input2))
    X = _cholesky_solve(ctx, _f64(ctx, self), _f64(ctx, input2), n, upper, r)
    return _back(ctx, X, dtype_of(self))


@translates(aten.cholesky_inverse.default)
def aten_cholesky_inverse(ctx: Ctx, self: ir.Value, upper: bool = False) -> ir.Value:
    """cholesky_inverse(Tensor self, bool upper=False) -> Tensor

    A⁻¹ from A's Cholesky factor (torch.cholesky_inverse docs, LAPACK potri): cholesky_solve of
    the identity.
    """
    n = _square_n(ctx, self, "cholesky_inverse")
    if n == 0:
        return ctx.op.Identity(self)
    eye = ctx.op.Expand(_eye(ctx, n, n), ctx.op.Shape(self))
    X = _cholesky_solve(ctx, eye, _f64(ctx, self), n, upper, rank(self))
    return _back(ctx, X, dtype_of(self))


# -- LU ---------------------------------------------------------------------------------------

def _swap_index(ctx: Ctx, rows: ir.Value, j: int, p: ir.Value) -> ir.Value:
    """The row order (..., m) exchanging rows j and p (p: (..., 1) int64)."""
    return ctx.op.Where(ctx.op.Equal(rows, ctx.const(j)), p,
                        ctx.op.Where(ctx.op.Equal(rows, p), ctx.const(j), rows))


def _gather_rows(ctx: Ctx, M: ir.Value, order: ir.Value) -> ir.Value:
    """M (..., m, k) with its rows taken in ``order`` (..., m)."""
    index = ctx.op.Expand(ctx.op.Unsqueeze(order, ctx.const([-1])), ctx.op.Shape(M))
    return ctx.op.GatherElements(M, index, axis=-2)


def _getrf(ctx: Ctx, A: ir.Value, m: int, n: int, pivot: bool) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """LU factorization with partial pivoting of a batch of m×n float64 matrices.

    Right-looking Gaussian elimination (Golub & Van Loan §3.4.2, Algorithm 3.4.1; LAPACK getf2):
    at step j the pivot is the first row at or below j of largest |a_ij| (BLAS i_amax), rows j
    and p are exchanged, the multipliers below the pivot are stored in place and the trailing
    matrix gets a rank-1 update. A zero pivot leaves its column unscaled and sets ``info``.

    Returns LU (..., m, n), the 1-based LAPACK pivots (int32, (..., k)), ``info`` (int32) and the
    final row order (..., m) int64: row i of L U is row order[i] of A.
    """
    k = min(m, n)
    rows = ctx.const(list(range(m)))
    rows_col = _rows_col(ctx, m)
    cols_row = ctx.const([list(range(n))])  # (1, n)
    zero, one = ctx.const(0.0, _F64), ctx.const(1.0, _F64)
    batch = _batch(ctx, A)
    order = ctx.op.Expand(rows, ctx.op.Concat(batch, ctx.const([m]), axis=0))
    M = A
    pivots, fails = [], []
    for j in range(k):
        if pivot:
            mag = ctx.op.Abs(ctx.op.Gather(M, ctx.const(j), axis=-1))  # (..., m)
            if j > 0:
                mag = ctx.op.Where(ctx.op.Less(rows, ctx.const(j)), ctx.const(-1.0, _F64), mag)
            p = ctx.op.ArgMax(mag, axis=-1, keepdims=1)  # (..., 1): first largest
            # onnxruntime's ArgMax over an empty batch keeps the reduced axis whole: cut it to 1.
            p = ctx.op.Slice(p, ctx.const([0]), ctx.const([1]), ctx.const([-1]))
            swap = _swap_index(ctx, rows, j, p)
            M = _gather_rows(ctx, M, swap)
            order = ctx.op.GatherElements(order, swap, axis=-1)
        else:
            p = ctx.op.Expand(ctx.const([j]), ctx.op.Concat(batch, ctx.const([1]), axis=0))
        pivots.append(p)
        pivot_row = _row(ctx, M, j)
        piv = ctx.op.Gather(pivot_row, ctx.const([j]), axis=-1)  # (..., 1, 1)
        is_zero = ctx.op.Equal(piv, zero)
        fails.append(ctx.op.Squeeze(is_zero, ctx.const([-2, -1])))
        mult = ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(j)),
                            ctx.op.Div(_col(ctx, M, j), ctx.op.Where(is_zero, one, piv)), zero)  # (..., m, 1)
        if j < n - 1:
            M = ctx.op.Sub(M, ctx.op.Mul(mult, ctx.op.Where(ctx.op.Greater(cols_row, ctx.const(j)), pivot_row, zero)))
        M = ctx.op.Where(_mask(ctx, m, n, lambda a, b, j=j: a > j and b == j), mult, M)
    if k:
        piv_out = ctx.op.Cast(ctx.op.Add(ctx.op.Concat(*pivots, axis=-1), ctx.const(1)), to=_I32)
        info = _first_failure(ctx, fails)
    else:
        piv_out = ctx.op.Expand(ctx.const(torch.zeros(0, dtype=torch.int32)), ctx.op.Concat(batch, ctx.const([0]), axis=0))
        info = _zero_info(ctx, A)
    return M, piv_out, info, order


@translates(aten.linalg_lu_factor_ex.default)
def aten_linalg_lu_factor_ex(
    ctx: Ctx, A: ir.Value, *, pivot: bool = True, check_errors: bool = False,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)

    LAPACK getrf's compact LU of a batch of m×n matrices (torch.linalg.lu_factor_ex docs): L's
    multipliers below the diagonal, U on and above, 1-based row interchanges, ``info`` = first zero
    pivot. Partial pivoting by max |a| as LAPACK, so pivots equal eager's (:func:`_getrf`).
    """
    m, n = _static_mn(ctx, A, "lu_factor")
    LU, piv, info, _ = _getrf(ctx, _f64(ctx, A), m, n, pivot)
    return _back(ctx, LU, dtype_of(A)), piv, info


def _unpack(ctx: Ctx, LU: ir.Value, m: int, n: int, dtype: ir.DataType) -> tuple[ir.Value, ir.Value]:
    """L (..., m, k) unit lower and U (..., k, n) upper from a compact LU."""
    k = min(m, n)
    L = ctx.op.Slice(LU, ctx.const([0]), ctx.const([k]), ctx.const([-1]))
    L = ctx.op.Add(ctx.op.Where(_mask(ctx, m, k, lambda i, j: i > j), L, ctx.const(0.0, LU.dtype)),
                   ctx.const(torch.eye(m, k), LU.dtype))
    U = ctx.op.Slice(LU, ctx.const([0]), ctx.const([k]), ctx.const([-2]))
    U = ctx.op.Where(_mask(ctx, k, n, lambda i, j: i <= j), U, ctx.const(0.0, LU.dtype))
    return _back(ctx, L, dtype), _back(ctx, U, dtype)


def _permutation(ctx: Ctx, order: ir.Value, m: int, dtype: ir.DataType) -> ir.Value:
    """P (..., m, m) with P[r, i] = (order[i] == r), so that A = P L U."""
    hit = ctx.op.Equal(ctx.op.Unsqueeze(order, ctx.const([-2])), _rows_col(ctx, m))
    return ctx.op.Cast(hit, to=dtype)


@translates(aten.linalg_lu.default)
def aten_linalg_lu(ctx: Ctx, A: ir.Value, *, pivot: bool = True) -> tuple[ir.Value, ir.Value, ir.Value]:
    """linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)

    A = P L U (torch.linalg.lu docs): getrf (:func:`_getrf`) unpacked, P from the row order.
    """
    m, n = _static_mn(ctx, A, "lu")
    LU, _, _, order = _getrf(ctx, _f64(ctx, A), m, n, pivot)
    L, U = _unpack(ctx, LU, m, n, dtype_of(A))
    return _permutation(ctx, order, m, dtype_of(A)), L, U


def _apply_swaps(ctx: Ctx, B: ir.Value, pivots: ir.Value, n: int, reverse: bool) -> ir.Value:
    """Row interchanges of LAPACK laswp: rows j and pivots[j]-1 of B (..., n, k) for j = 0..n-1
    (in reverse order when ``reverse``); pivots (..., n) int with B's batch shape."""
    rows = ctx.const(list(range(n)))
    piv = ctx.op.Sub(ctx.op.Cast(pivots, to=_I64), ctx.const(1))
    for j in (reversed(range(n)) if reverse else range(n)):
        p = ctx.op.Gather(piv, ctx.const([j]), axis=-1)
        B = _gather_rows(ctx, B, _swap_index(ctx, rows, j, p))
    return B


@translates(aten.lu_unpack.default)
def aten_lu_unpack(
    ctx: Ctx, LU_data: ir.Value, LU_pivots: ir.Value, unpack_data: bool = True, unpack_pivots: bool = True,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)

    P, L, U from a compact LU and LAPACK's 1-based pivots (torch.lu_unpack docs): P applies the
    interchanges in order to the identity's rows. Outputs not asked for are empty, as in eager.
    """
    m, n = _static_mn(ctx, LU_data, "lu_unpack")
    empty = ctx.const(torch.zeros(0), LU_data.dtype)
    if unpack_data:
        L, U = _unpack(ctx, LU_data, m, n, dtype_of(LU_data))
    else:
        L = U = empty
    if not unpack_pivots:
        return empty, L, U
    rows = ctx.const(list(range(m)))
    order = ctx.op.Expand(rows, ctx.op.Concat(_batch(ctx, LU_pivots, 1), ctx.const([m]), axis=0))
    piv = ctx.op.Sub(ctx.op.Cast(LU_pivots, to=_I64), ctx.const(1))
    for j in range(min(m, n)):
        swap = _swap_index(ctx, rows, j, ctx.op.Gather(piv, ctx.const([j]), axis=-1))
        order = ctx.op.GatherElements(order, swap, axis=-1)
    return _permutation(ctx, order, m, dtype_of(LU_data)), L, U


@translates(aten.linalg_lu_solve.default)
def aten_linalg_lu_solve(
    ctx: Ctx, LU: ir.Value, pivots: ir.Value, B: ir.Value, *, left: bool = True, adjoint: bool = False,
) -> ir.Value:
    """linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor

    X with A X = B (Aᴴ X = B when ``adjoint``; X A = B when not ``left``) given getrf's LU and pivots
    (torch.linalg.lu_solve docs, LAPACK getrs): interchanges, then unit-lower and upper triangular
    solves (or the transposed sequence), batches broadcast.
    """
    n = _square_n(ctx, LU, "lu_solve")
    r = max(rank(LU), rank(B))
    Bw = _f64(ctx, B)
    if not left:  # X A = B ⇔ Aᵀ Xᵀ = Bᵀ (real A: adjoint = transpose)
        Bw, adjoint = _mT(ctx, Bw, rank(B)), not adjoint
    F, Bw = _broadcast_pair(ctx, _f64(ctx, LU), Bw, n)
    rhs = shape_of(B)[-1] if left else shape_of(B)[-2]
    if n > 0 and rhs != 0:  # (onnxruntime's Expand of the swap index to k = 0 columns keeps 1)
        piv = ctx.op.Expand(pivots, ctx.op.Concat(_batch(ctx, F), ctx.const([n]), axis=0))
        if not adjoint:  # A = P L U: X = U⁻¹ L⁻¹ Pᵀ B
            Y = _trsm(ctx, F, _apply_swaps(ctx, Bw, piv, n, reverse=False), n, lower=True, unit=True)
            Bw = _trsm(ctx, F, Y, n, lower=False, unit=False)
        else:  # Aᵀ = Uᵀ Lᵀ Pᵀ: X = P L⁻ᵀ U⁻ᵀ B
            Ft = _mT(ctx, F, r)
            Y = _trsm(ctx, Ft, Bw, n, lower=True, unit=False)
            Bw = _apply_swaps(ctx, _trsm(ctx, Ft, Y, n, lower=False, unit=True), piv, n, reverse=True)
    X = Bw if left else _mT(ctx, Bw, r)
    return _back(ctx, X, dtype_of(B))


# -- QR ---------------------------------------------------------------------------------------

def _geqrf(ctx: Ctx, A: ir.Value, m: int, n: int, r: int) -> tuple[ir.Value, list[ir.Value]]:
    """Householder QR of a batch of m×n float64 matrices in LAPACK geqrf's compact form.

    Golub & Van Loan §5.2.2 (Algorithm 5.2.1) with LAPACK larfg's reflector convention: for
    x = A[j:, j], β = -sign(α)·‖x‖ (sign(0) = +), τ = (β - α)/β, v = [1, x[1:]/(α - β)]; τ = 0 and
    β = α when x[1:] = 0. R's diagonal is β (may be negative), the v's are stored below it.
    Returns the compact matrix and the τ's, each (..., 1, 1).
    """
    rows_col = _rows_col(ctx, m)
    cols_row = ctx.const([list(range(n))])
    zero, one = ctx.const(0.0, _F64), ctx.const(1.0, _F64)
    M = A
    taus = []
    for j in range(min(m, n)):
        c = _col(ctx, M, j)
        alpha = ctx.op.Gather(c, ctx.const([j]), axis=-2)  # (..., 1, 1)
        below = ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(j)), c, zero)
        xnorm2 = ctx.op.MatMul(_mT(ctx, below, r), below)  # (..., 1, 1)
        norm = ctx.op.Sqrt(ctx.op.Add(ctx.op.Mul(alpha, alpha), xnorm2))
        beta = ctx.op.Where(ctx.op.GreaterOrEqual(alpha, zero), ctx.op.Neg(norm), norm)
        trivial = ctx.op.Equal(xnorm2, zero)
        tau = ctx.op.Where(trivial, zero, ctx.op.Div(ctx.op.Sub(beta, alpha), beta))
        beta = ctx.op.Where(trivial, alpha, beta)
        v = ctx.op.Div(below, ctx.op.Where(trivial, one, ctx.op.Sub(alpha, beta)))
        v = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(j)), one, v)  # (..., m, 1), zero above j
        if j < n - 1:  # apply H = I - τ v vᵀ to the columns right of j
            w = ctx.op.Where(ctx.op.Greater(cols_row, ctx.const(j)), ctx.op.MatMul(_mT(ctx, v, r), M), zero)
            M = ctx.op.Sub(M, ctx.op.Mul(ctx.op.Mul(v, tau), w))
        M = ctx.op.Where(_mask(ctx, m, n, lambda a, b, j=j: a == j and b == j), beta,
                         ctx.op.Where(_mask(ctx, m, n, lambda a, b, j=j: a > j and b == j), v, M))
        taus.append(tau)
    return M, taus


def _householder_product(
    ctx: Ctx, V: ir.Value, taus: list[ir.Value], m: int, cols: int, r: int,
) -> ir.Value:
    """The first ``cols`` columns of H_0 H_1 ⋯ H_{k-1}, H_j = I - τ_j v_j v_jᵀ with v_j = column j of
    V below the diagonal and 1 on it (LAPACK orgqr/org2r: backward accumulation, Golub & Van Loan
    §5.1.6)."""
    rows_col = _rows_col(ctx, m)
    zero, one = ctx.const(0.0, _F64), ctx.const(1.0, _F64)
    Q = ctx.op.Expand(_eye(ctx, m, cols), ctx.op.Concat(_batch(ctx, V), ctx.const([m, cols]), axis=0))
    for j in reversed(range(len(taus))):
        v = ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(j)), _col(ctx, V, j), zero)
        v = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(j)), one, v)
        Q = ctx.op.Sub(Q, ctx.op.Mul(ctx.op.Mul(v, taus[j]), ctx.op.MatMul(_mT(ctx, v, r), Q)))
    return Q


@translates(aten.geqrf.default)
def aten_geqrf(ctx: Ctx, self: ir.Value) -> tuple[ir.Value, ir.Value]:
    """geqrf(Tensor self) -> (Tensor a, Tensor tau)

    LAPACK geqrf's compact QR: R on and above the diagonal, the Householder vectors below, and the
    scalars τ (torch.geqrf docs; :func:`_geqrf`).
    """
    m, n = _static_mn(ctx, self, "geqrf")
    a, taus = _geqrf(ctx, _f64(ctx, self), m, n, rank(self))
    if taus:
        tau = ctx.op.Squeeze(ctx.op.Concat(*taus, axis=-1), ctx.const([-2]))
    else:
        tau = ctx.op.Expand(ctx.const(torch.zeros(0), _F64), ctx.op.Concat(_batch(ctx, self), ctx.const([0]), axis=0))
    return _back(ctx, a, dtype_of(self)), _back(ctx, tau, dtype_of(self))


@translates(aten.linalg_qr.default)
def aten_linalg_qr(ctx: Ctx, A: ir.Value, mode: str = "reduced") -> tuple[ir.Value, ir.Value]:
    """linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)

    A = Q R by Householder reflections (torch.linalg.qr docs; LAPACK geqrf + orgqr, so R's diagonal
    has LAPACK's signs, as eager). ``mode`` 'reduced': Q m×k, R k×n; 'complete': Q m×m, R m×n;
    'r': Q empty.
    """
    m, n = _static_mn(ctx, A, "qr")
    r = rank(A)
    k = min(m, n)
    a, taus = _geqrf(ctx, _f64(ctx, A), m, n, r)
    r_rows = m if mode == "complete" else k
    R = ctx.op.Slice(a, ctx.const([0]), ctx.const([r_rows]), ctx.const([-2]))
    R = ctx.op.Where(_mask(ctx, r_rows, n, lambda i, j: i <= j), R, ctx.const(0.0, _F64))
    if mode == "r":
        Q = ctx.const(torch.zeros(0), A.dtype)
    else:
        Q = _back(ctx, _householder_product(ctx, a, taus, m, m if mode == "complete" else k, r), dtype_of(A))
    return Q, _back(ctx, R, dtype_of(A))


@translates(aten.linalg_householder_product.default)
def aten_linalg_householder_product(ctx: Ctx, input: ir.Value, tau: ir.Value) -> ir.Value:
    """linalg_householder_product(Tensor input, Tensor tau) -> Tensor

    The first n columns of H_0 ⋯ H_{k-1} from Householder vectors stored below the diagonal of
    ``input`` (m×n) and the scalars ``tau`` (k) (torch.linalg.householder_product docs, LAPACK orgqr).
    """
    m, n = _static_mn(ctx, input, "householder_product")
    k = shape_of(tau)[-1]
    if not isinstance(k, int):
        ctx.unsupported("householder_product with a dynamic number of reflectors: the product is unrolled")
    r = rank(input)
    t = _f64(ctx, tau)
    taus = [ctx.op.Unsqueeze(ctx.op.Gather(t, ctx.const([j]), axis=-1), ctx.const([-1])) for j in range(k)]
    Q = _householder_product(ctx, _f64(ctx, input), taus, m, n, r)
    return _back(ctx, Q, dtype_of(input))


@translates(aten.ormqr.default)
def aten_ormqr(
    ctx: Ctx, self: ir.Value, input2: ir.Value, input3: ir.Value, left: bool = True, transpose: bool = False,
) -> ir.Value:
    """ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor

    op(Q)·C (C·op(Q) when not ``left``), op(Q) = Qᵀ when ``transpose``, for Q = H_0 ⋯ H_{k-1} of
    geqrf's reflectors: H_j = I - τ_j v_j v_jᵀ, v_j = column j of ``self`` below the diagonal with
    1 on it, τ = ``input2`` (torch.ormqr docs; LAPACK ormqr/orm2r, each reflector applied as larf:
    w = Cᵀv, C -= τ v wᵀ). Q C and C Qᵀ apply H_{k-1} first, Qᵀ C and C Q apply H_0 first.
    """
    mn, _ = _static_mn(ctx, self, "ormqr")
    k = static_dim(input2, -1)
    if k is None:
        ctx.unsupported("ormqr with a dynamic number of reflectors: the product is unrolled")
    r = rank(input3)
    C = _f64(ctx, input3)
    if k == 0 or mn == 0:
        return ctx.op.Identity(input3)
    if not left:  # C op(Q) = (op(Q)ᵀ Cᵀ)ᵀ
        C = _mT(ctx, C, r)
    V, t = _f64(ctx, self), _f64(ctx, input2)
    rows_col = _rows_col(ctx, mn)
    zero, one = ctx.const(0.0, _F64), ctx.const(1.0, _F64)
    order = range(k) if transpose == left else reversed(range(k))
    for j in order:
        v = ctx.op.Where(ctx.op.Greater(rows_col, ctx.const(j)), _col(ctx, V, j), zero)
        v = ctx.op.Where(ctx.op.Equal(rows_col, ctx.const(j)), one, v)  # (..., mn, 1)
        tau = ctx.op.Unsqueeze(ctx.op.Gather(t, ctx.const([j]), axis=-1), ctx.const([-1]))  # (..., 1, 1)
        w = ctx.op.MatMul(_mT(ctx, v, rank(self)), C)  # (..., 1, n)
        C = ctx.op.Sub(C, ctx.op.Mul(v, ctx.op.Mul(tau, w)))
    if not left:
        C = _mT(ctx, C, r)
    return _back(ctx, C, dtype_of(input3))
