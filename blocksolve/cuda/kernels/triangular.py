"""Triangular solves on the GPU: ``trsm`` (solve_triangular)."""

from __future__ import annotations

from ._descriptors import arrangement, fill_mode, solves_conjugated, transpose_mode
from ._host import unsolved


def trsm_descriptors(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    return {
        "solver": api.TriangularSolver(
            size=(n, k),
            side="left",
            fill_mode=fill_mode(pattern),
            diag="unit" if pattern.option("unit_diagonal") else "non_unit",
            transpose_mode=transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c"),
            arrangement=(arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1])),
            **common,
        )
    }


def make_triangular_solve_kernel(descriptors, pattern, check_diagonal, conjugate=False):
    """``x = op(A)^-1 b`` with the descriptor's ``solve(a, b)`` (trsm, and potrs with the
    Cholesky factor); ``info`` from A's diagonal where ``check_diagonal``, and a failed
    matrix's ``b`` as its solution (``conjugate``: see
    :func:`~blocksolve.cuda._descriptors.solves_conjugated`)."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    b_layout = kernel.layout(d.b_shape, d.b_strides(), d.b_arrangement, dtype)
    n, k = d.b_shape[1:]

    @kernel.device
    def load(shared, first, count, a, b, x, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)
        kernel.load_conjugated_if(b, first, count, shared.b, b_layout, n, conjugate)
        if check_diagonal:
            kernel.zero_diagonal_info(a, info, first, count, n)

    @kernel.device
    def solve(shared):
        d.solve(shared.a, shared.b)

    @kernel.device
    def store(shared, first, count, a, b, x, info):
        kernel.store_solution(shared.b, b, x, first, count, b_layout, info, first, conjugate)

    program = kernel.block_program(d, dtype, load, [solve], store, a=d.a_size(), b=d.b_size())
    run = program.run

    def triangular_solve_kernel(a, b, x, info, batch):
        run(batch, a, b, x, info)

    return program.spec(triangular_solve_kernel, [((n, k), dtype)])


def make_trsm_kernel(descriptors, pattern):
    return make_triangular_solve_kernel(
        descriptors, pattern, not pattern.option("unit_diagonal"), solves_conjugated(pattern)
    )


def trsm_empty(pattern, operands, xp, runtime):
    a, b = operands
    return unsolved(a, b, xp, check_diagonal=not pattern.option("unit_diagonal"))
