"""Matrix inverse on the CPU: ``getri``, by LU factorisation of ``[a | I]``.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a) -> (ainv, info)`` over flattened, C-contiguous
``(batch, n, n)`` operands.  The kernel is the LU family's solve
(:mod:`blocksolve.cpu.lu`) with the identity as right-hand side, as NumPy's
``inv`` calls LAPACK ``gesv``: factoring ``[a | I]`` leaves ``L^-1 P^T`` in
the right-hand block, and one upper-triangular solve gives ``a^-1``.  An
exactly zero pivot sets ``info`` (and leaves infs/NaNs in that inverse).
"""

from __future__ import annotations

import numpy as np

from ..._cache import memo
from ..._compat.numpy import numpy_linalg
from .._compiled import Kernel, batch_kernel
from .._jit import launch
from ._blocks import block_width, identity, load, store
from ._reference import lapack_function
from ._unrolled import (
    Source,
    compile_kernel,
    emit_first_zero,
    emit_stash,
    emit_unstash,
    matrix_indices,
)
from .lu import (
    emit_lu_kernel,
    emit_row_swaps,
    emit_upper_solve,
    getrf_block,
    getrf_work,
    straight_line,
    straight_line_names,
)
from .triangular import trsm_block

__all__ = ["getri"]


@batch_kernel
def _getri_kernel(start, stop, n, a, ainv, info):
    capacity = block_width(n, stop - start)
    block = np.empty((n, n, capacity), a.dtype)
    rhs = np.empty((n, n, capacity), a.dtype)
    piv_block = np.empty((n, capacity), np.int32)
    work = getrf_work(block)
    for first in range(start, stop, capacity):
        width = min(capacity, stop - first)
        load(a, first, width, block)
        identity(rhs, width)
        getrf_block(block, rhs, n, n, width, piv_block, info[first : first + width], work)
        trsm_block(block, rhs, n, width, False, False)
        store(rhs, ainv, first, width)


# From this size on the straight-line inverse leaves the identity in place through the row
# swaps and puts each inverse's columns in their places as it stores it: that saves n^2 (n - 1)
# selects and the products with the identity's zeros (a fifth of an 8x8 inverse's code and
# compile time) for n^2 stores to computed addresses, which cost more than they save up to 6x6.
IDENTITY_IN_PLACE_FROM = 7


@memo("cpu-straight-line-getri", maxsize=256)
def _unrolled_getri_kernel(n, dtype, identity_in_place):
    """:func:`_getri_kernel` as straight-line code for real ``n x n`` matrices: the same
    operations in the same order, so the same inverses to the bit (with finite factors).

    With ``identity_in_place`` the right-hand block ends as ``U^-1 L^-1``, whose column
    ``j`` is the looped kernel's column ``rows[j]`` of ``a^-1 = U^-1 L^-1 P`` (``rows[j]``:
    the row of ``a`` the swaps brought to row ``j``), stored there.
    """
    columns_at = n * n
    info_at = columns_at + (n if identity_in_place else 0)
    src = Source(complex_values=False)

    def lane(e, pivots, zero_pivots):
        emit_upper_solve(src, e, n, 2 * n)
        emit_stash(src, [e[i, n + j] for i in range(n) for j in range(n)], 0)
        if identity_in_place:
            rows = {(i, 0): f"{i}" for i in range(n)}
            emit_row_swaps(src, rows, pivots, n, [0], reverse=False)
            emit_stash(src, [rows[j, 0] for j in range(n)], columns_at)
        emit_stash(src, [emit_first_zero(src, zero_pivots)], info_at)

    def finish():
        if identity_in_place:  # unsigned: no wraparound for negative indices
            for j in range(n):
                src(f"column{j} = np.uint64(work[{columns_at + j}, l])")
            indices = [f"{i}, column{j}" for i in range(n) for j in range(n)]
        else:
            indices = matrix_indices(n, n)
        emit_unstash(src, "ainv", indices, 0)
        emit_unstash(src, "info", [""], info_at, "int")

    emit_lu_kernel(
        src,
        dtype,
        "a, ainv, info",
        n,
        n,
        info_at + 1,
        lane,
        finish,
        identity=True,
        swap_identity=not identity_in_place,
    )
    return compile_kernel(f"getri_{n}_{dtype.name}", src.text(), dtype, straight_line_names(dtype))


def getri(pattern):
    """Inverse of every matrix (LU with partial pivoting)."""
    n, dtype = pattern.dim("n"), pattern.np_dtype
    if straight_line(pattern, n):  # up to 8x8: the identity costs little (above)
        kernel = Kernel(_unrolled_getri_kernel, (n, dtype, n >= IDENTITY_IN_PLACE_FROM))
    else:
        kernel = _getri_kernel.sized(n)

    def run(a):
        ainv = np.empty(a.shape, dtype)
        info = np.empty(a.shape[0], np.int32)
        launch(kernel, a.shape[0], 2 * a.shape[1] ** 3, a, ainv, info)
        return ainv, info

    return run


# --- NumPy's LAPACK -------------------------------------------------------------------


def getri_per_matrix(pattern):
    """LAPACK ``xGETRF`` and ``xGETRI``; ``info`` as ``xGETRF``'s."""
    dtype = pattern.np_dtype

    def run(a):
        lu, piv, info = lapack_function("getrf", dtype)(a)
        return (lapack_function("getri", dtype)(lu, piv)[0] if info == 0 else lu), info

    return run


def getri_numpy(pattern):
    """``numpy.linalg.inv``."""
    return numpy_linalg("inv", pattern.np_dtype)
