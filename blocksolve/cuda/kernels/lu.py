"""LU with partial pivoting on the GPU: ``getrf`` (lu_factor), ``getrs`` (lu_solve) and
``gesv`` (solve).

``solve`` factors with the very descriptor ``lu_factor`` uses and solves with a
second one of size ``(n, n, k)``, so that the factorisation is generated once
for every number of right-hand sides; ``inv`` and ``det`` build on the same
(:mod:`blocksolve.cuda.inverse`, :mod:`blocksolve.cuda.determinant`).
"""

from __future__ import annotations

import numpy as np

from ..._pattern import CallPattern
from ._descriptors import arrangement, solves_conjugated, transpose_mode
from ._host import no_failures, unsolved


def getrf_descriptors(api, pattern, common):
    """``lu_factor``'s descriptor (M x N; square for ``det``, whose pattern has no M)."""
    n = pattern.dim("n")
    m = dict(pattern.dims).get("m", n)
    arr_a = arrangement(pattern.layouts[0])
    return {"solver": api.LUPivotSolver(size=(m, n), arrangement=(arr_a, arr_a), **common)}


def lu_factor_and_solve(api, n, k, arr_a, arr_b, common):
    """getrf as :func:`getrf_descriptors` describes it for an ``n x n`` ``lu_factor``
    (role ``'factor'``), then getrs for ``k`` right-hand sides (``'solver'``)."""
    return {
        "factor": api.LUPivotSolver(size=(n, n), arrangement=(arr_a, arr_a), **common),
        "solver": api.LUPivotSolver(size=(n, n, k), arrangement=(arr_a, arr_b), **common),
    }


def getrs_descriptors(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[2]))  # lu, piv, b
    mode = transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c")
    return {
        "solver": api.LUPivotSolver(size=(n, n, k), transpose_mode=mode, arrangement=arr, **common)
    }


def gesv_descriptors(api, pattern, common):
    arr_a, arr_b = arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1])
    return lu_factor_and_solve(api, pattern.dim("n"), pattern.dim("k"), arr_a, arr_b, common)


def make_getrf_kernel(descriptors, pattern):
    """``lu`` and ``min(m, n)`` 0-based pivots of ``m x n`` matrices."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    m, n = d.m, d.n
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    ipiv_shape, ipiv_strides = d.ipiv_shape, d.ipiv_strides

    @kernel.device
    def load(shared, first, count, a, lu, piv, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, m)

    @kernel.device
    def factorize(shared):
        d.factorize(shared.a, shared.ipiv, shared.info)

    @kernel.device
    def store(shared, first, count, a, lu, piv, info):
        kernel.store_matrix(shared.a, lu, first, count, a_layout)
        kernel.store_pivots(shared.ipiv, piv, first, count, ipiv_shape, ipiv_strides)
        kernel.store_info(shared.info, info, first, count)

    sizes = {"a": d.a_size(), "ipiv": d.ipiv_size, "info": d.info_shape[0]}
    program = kernel.block_program(d, dtype, load, [factorize], store, **sizes)
    run = program.run

    def getrf_kernel(a, lu, piv, info, batch):
        run(batch, a, lu, piv, info)

    return program.spec(getrf_kernel, [((m, n), dtype), ((min(m, n),), np.int32)])


def make_getrs_kernel(descriptors, pattern):
    """``x = op(A)^-1 b`` from ``lu_factor``'s factors; ``info`` from U's diagonal, and a
    failed matrix's ``b`` as its solution."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    b_layout = kernel.layout(d.b_shape, d.b_strides(), d.b_arrangement, dtype)
    ipiv_shape, ipiv_strides = d.ipiv_shape, d.ipiv_strides
    n, k = d.b_shape[1:]
    conjugate = solves_conjugated(pattern)

    @kernel.device
    def load(shared, first, count, lu, piv, b, x, info):
        kernel.load_matrix(lu, first, count, shared.a, a_layout, n)
        kernel.load_conjugated_if(b, first, count, shared.b, b_layout, n, conjugate)
        kernel.load_pivots(piv, first, count, shared.ipiv, ipiv_shape, ipiv_strides)
        kernel.zero_diagonal_info(lu, info, first, count, n)

    @kernel.device
    def solve(shared):
        d.solve(shared.a, shared.ipiv, shared.b)

    @kernel.device
    def store(shared, first, count, lu, piv, b, x, info):
        kernel.store_solution(shared.b, b, x, first, count, b_layout, info, first, conjugate)

    sizes = {"a": d.a_size(), "b": d.b_size(), "ipiv": d.ipiv_size}
    program = kernel.block_program(d, dtype, load, [solve], store, **sizes)
    run = program.run

    def getrs_kernel(lu, piv, b, x, info, batch):
        run(batch, lu, piv, b, x, info)

    return program.spec(getrs_kernel, [((n, k), dtype)])


def lu_steps(descriptors):
    """getrf then getrs as solver steps, on :func:`lu_factor_and_solve`'s descriptors."""
    from . import _skeleton as kernel

    f, d = descriptors["factor"], descriptors["solver"]

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.ipiv, shared.info)

    @kernel.device
    def solve(shared):
        d.solve(shared.a, shared.ipiv, shared.b)

    return [factorize, solve]


def make_fused_solve_kernel(descriptors, pattern, steps, **sizes):
    """``x = A^-1 b`` by a factorisation and a solve in one kernel, A and b read once: a
    matrix whose factorisation failed gets its ``b`` back as solution, and the
    factorisation's ``info`` (``solve`` with LU's steps, and with Cholesky's for
    ``assume_a='pos'``).  ``sizes``: shared buffers beyond ``a``, ``b`` and ``info``."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    b_layout = kernel.layout(d.b_shape, d.b_strides(), d.b_arrangement, dtype)
    n, k = d.b_shape[1:]

    @kernel.device
    def load(shared, first, count, a, b, x, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)
        kernel.load_matrix(b, first, count, shared.b, b_layout, n)

    @kernel.device
    def store(shared, first, count, a, b, x, info):
        kernel.store_solution(shared.b, b, x, first, count, b_layout, shared.info, 0, False)
        kernel.store_info(shared.info, info, first, count)

    sizes.update(a=d.a_size(), b=d.b_size(), info=d.info_shape[0])
    program = kernel.block_program(d, dtype, load, steps, store, **sizes)
    run = program.run

    def fused_solve_kernel(a, b, x, info, batch):
        run(batch, a, b, x, info)

    return program.spec(fused_solve_kernel, [((n, k), dtype)])


def make_gesv_kernel(descriptors, pattern):
    steps = lu_steps(descriptors)
    return make_fused_solve_kernel(
        descriptors, pattern, steps, ipiv=descriptors["solver"].ipiv_size
    )


def getrf_empty(pattern, operands, xp, runtime):
    (a,) = operands
    return a.copy(), xp.zeros((a.shape[0], 0), np.int32), no_failures(a, xp)


def getrs_empty(pattern, operands, xp, runtime):
    lu, piv, b = operands
    return unsolved(lu, b, xp, check_diagonal=True)


def gesv_empty(pattern, operands, xp, runtime):
    a, b = operands
    return unsolved(a, b, xp, check_diagonal=False)


class FactorInfoPlan:
    """``solve`` with no right-hand sides: ``x`` is the empty ``b``, ``info`` the LU
    factorisation's (NumPy still reports a singular matrix)."""

    fallback = None

    def __init__(self, pattern, factor_plan):
        self.pattern = pattern
        self.factor_plan = factor_plan
        self.timings = factor_plan.timings

    def run(self, operands, xp, runtime):
        a, b = operands
        *_, info = self.factor_plan.run((a,), xp, runtime)
        return b.copy(), info


def gesv_plan(pattern, build):
    """:class:`FactorInfoPlan` on ``lu_factor``'s kernel where ``k == 0 < n``."""
    n = pattern.dim("n")
    if pattern.dim("k") or not n:
        return None
    factor = CallPattern.make(
        "getrf", {"m": n, "n": n, "p": n}, pattern.dtype, {}, pattern.layouts[:1], pattern.target
    )
    return FactorInfoPlan(pattern, build(factor))
