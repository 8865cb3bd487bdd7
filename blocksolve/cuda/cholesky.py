"""Cholesky on the GPU: ``potrf`` (cholesky, cho_factor) and ``potrs`` (cho_solve)."""

from __future__ import annotations

from ._descriptors import arrangement, fill_mode
from ._host import no_failures, unsolved
from ._routine import CudaRoutine
from .triangular import make_triangular_solve_kernel


def potrf_solver(api, pattern, common):
    """The factorisation's descriptor (``solve(assume_a='pos')`` factors with it too)."""
    n, arr_a = pattern.dim("n"), arrangement(pattern.layouts[0])
    return api.CholeskySolver(
        size=(n, n), fill_mode=fill_mode(pattern), arrangement=(arr_a, arr_a), **common
    )


def potrs_solver(api, pattern, common):
    """The solve's descriptor (``solve(assume_a='pos')`` solves with it too)."""
    n, k = pattern.dim("n"), pattern.dim("k")
    return api.CholeskySolver(
        size=(n, n, k),
        fill_mode=fill_mode(pattern),
        arrangement=(arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1])),
        **common,
    )


def _potrf_kernel(descriptors, pattern):
    """The factor in one triangle; the other is zeroed (``clean``) or A's."""
    from . import _kernels as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    n, lower, clean = d.n, pattern.option("lower"), pattern.option("clean")
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)

    @kernel.device
    def load(shared, first, count, a, c, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)

    @kernel.device
    def factorize(shared):
        d.factorize(shared.a, shared.info)

    @kernel.device
    def store(shared, first, count, a, c, info):
        kernel.store_triangle(shared.a, a, c, first, count, a_layout, lower, clean)
        kernel.store_info(shared.info, info, first, count)

    sizes = {"a": d.a_size(), "info": d.info_shape[0]}
    program = kernel.block_program(d, dtype, load, [factorize], store, **sizes)
    run = program.run

    def potrf_kernel(a, c, info, batch):
        run(batch, a, c, info)

    return program.spec(potrf_kernel, [((n, n), dtype)])


def _potrs_kernel(descriptors, pattern):
    """The two triangular solves with the factor; ``info`` from its diagonal."""
    return make_triangular_solve_kernel(descriptors, pattern, check_diagonal=True)


def _potrf_empty(pattern, operands, xp, runtime):
    (a,) = operands
    return a.copy(), no_failures(a, xp)


def _potrs_empty(pattern, operands, xp, runtime):
    c, b = operands
    return unsolved(c, b, xp, check_diagonal=True)


ROUTINES = {
    "potrf": CudaRoutine(
        descriptors=lambda api, pattern, common: {"solver": potrf_solver(api, pattern, common)},
        kernel=_potrf_kernel,
        empty=_potrf_empty,
    ),
    "potrs": CudaRoutine(
        descriptors=lambda api, pattern, common: {"solver": potrs_solver(api, pattern, common)},
        kernel=_potrs_kernel,
        empty=_potrs_empty,
    ),
}
