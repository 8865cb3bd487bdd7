"""Positive definite solves on the GPU: ``posv`` (solve with ``assume_a='pos'``)."""

from __future__ import annotations

from ._host import unsolved
from ._routine import CudaRoutine
from .cholesky import potrf_solver, potrs_solver
from .lu import make_fused_solve_kernel


def _posv_descriptors(api, pattern, common):
    """``cho_factor``'s factorisation and ``cho_solve``'s solve, described as they are."""
    return {
        "factor": potrf_solver(api, pattern, common),
        "solver": potrs_solver(api, pattern, common),
    }


def _posv_kernel(descriptors, pattern):
    """potrf + potrs in one kernel (see :func:`~blocksolve.cuda.lu.make_fused_solve_kernel`)."""
    from . import _kernels as kernel

    f, d = descriptors["factor"], descriptors["solver"]

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.info)

    @kernel.device
    def solve(shared):
        d.solve(shared.a, shared.b)

    return make_fused_solve_kernel(descriptors, pattern, [factorize, solve])


def _posv_empty(pattern, operands, xp, runtime):
    a, b = operands  # SciPy does not factor for empty right-hand sides
    return unsolved(a, b, xp, check_diagonal=False)


ROUTINES = {
    "posv": CudaRoutine(descriptors=_posv_descriptors, kernel=_posv_kernel, empty=_posv_empty),
}
