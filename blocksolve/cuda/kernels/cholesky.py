"""Cholesky on the GPU: ``potrf`` (cholesky, cho_factor), ``potrs`` (cho_solve) and ``posv``
(solve with ``assume_a='pos'``, both in one kernel)."""

from __future__ import annotations

from ._descriptors import arrangement, fill_mode
from ._host import no_failures, unsolved
from .lu import make_fused_solve_kernel
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


def potrf_descriptors(api, pattern, common):
    return {"solver": potrf_solver(api, pattern, common)}


def potrs_descriptors(api, pattern, common):
    return {"solver": potrs_solver(api, pattern, common)}


def make_potrf_kernel(descriptors, pattern):
    """The factor in one triangle; the other is zeroed (``clean``) or A's."""
    from . import _skeleton as kernel

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


def make_potrs_kernel(descriptors, pattern):
    """The two triangular solves with the factor; ``info`` from its diagonal."""
    return make_triangular_solve_kernel(descriptors, pattern, check_diagonal=True)


def potrf_empty(pattern, operands, xp, runtime):
    (a,) = operands
    return a.copy(), no_failures(a, xp)


def potrs_empty(pattern, operands, xp, runtime):
    c, b = operands
    return unsolved(c, b, xp, check_diagonal=True)


def posv_descriptors(api, pattern, common):
    """``cho_factor``'s factorisation and ``cho_solve``'s solve, described as they are."""
    return {
        "factor": potrf_solver(api, pattern, common),
        "solver": potrs_solver(api, pattern, common),
    }


def make_posv_kernel(descriptors, pattern):
    """potrf + potrs in one kernel (see :func:`.lu.make_fused_solve_kernel`)."""
    from . import _skeleton as kernel

    f, d = descriptors["factor"], descriptors["solver"]

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.info)

    @kernel.device
    def solve(shared):
        d.solve(shared.a, shared.b)

    return make_fused_solve_kernel(descriptors, pattern, [factorize, solve])


def posv_empty(pattern, operands, xp, runtime):
    a, b = operands  # SciPy does not factor for empty right-hand sides
    return unsolved(a, b, xp, check_diagonal=False)
