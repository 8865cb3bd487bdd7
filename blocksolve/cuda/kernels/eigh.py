"""Hermitian eigenproblems on the GPU: ``heev`` (eigh, and eigvalsh without ``vectors``),
cuSolverDx's QR algorithm through nvmath's generic ``Solver``."""

from __future__ import annotations

from ._descriptors import GenericSolver, arrangement, fill_mode
from ._host import no_failures, real_dtype


def heev_descriptors(api, pattern, common):
    """Eigenvectors overwrite A when ``vectors``."""
    n = pattern.dim("n")
    return {
        "solver": GenericSolver(
            api.Solver(
                function="heev",
                size=(n, n),
                fill_mode=fill_mode(pattern),
                job="overwrite_vectors" if pattern.option("vectors") else "no_vectors",
                arrangement=(arrangement(pattern.layouts[0]),),
                **common,
            )
        )
    }


def make_heev_kernel(descriptors, pattern):
    """Eigenvalues (real, ascending) from heev's ``lambda`` buffer, eigenvectors from A."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    solver = d.solver  # what numba types; d adds the layout helpers
    n, real = d.n, real_dtype(dtype)
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    lambda_shape, lambda_strides = d.lambda_shape, d.lambda_strides

    @kernel.device
    def load(shared, first, count, a, *results):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)

    @kernel.device
    def execute(shared):
        solver.execute(shared.a, shared.eigenvalues, shared.workspace, shared.info)

    @kernel.device
    def store_values(shared, first, count, a, w, info):
        kernel.store_vectors(shared.eigenvalues, w, first, count, lambda_shape, lambda_strides)
        kernel.store_info(shared.info, info, first, count)

    @kernel.device
    def store_values_and_vectors(shared, first, count, a, w, v, info):
        store_values(shared, first, count, a, w, info)
        kernel.store_matrix(shared.a, v, first, count, a_layout)

    sizes = {
        "a": d.a_size(),
        "workspace": d.workspace_size,
        "eigenvalues": d.lambda_size,
        "info": d.info_shape[0],
    }
    if not pattern.option("vectors"):
        program = kernel.block_program(d, dtype, load, [execute], store_values, **sizes)
        run = program.run

        def heev_values_kernel(a, w, info, batch):
            run(batch, a, w, info)

        return program.spec(heev_values_kernel, [((n,), real)])

    program = kernel.block_program(d, dtype, load, [execute], store_values_and_vectors, **sizes)
    run = program.run

    def heev_kernel(a, w, v, info, batch):
        run(batch, a, w, v, info)

    return program.spec(heev_kernel, [((n,), real), ((n, n), dtype)])


def heev_empty(pattern, operands, xp, runtime):
    """0 x 0 matrices: no eigenvalues, empty eigenvectors."""
    (a,) = operands
    w = xp.zeros((a.shape[0], 0), real_dtype(a.dtype))
    results = (w, a.copy()) if pattern.option("vectors") else (w,)
    return (*results, no_failures(a, xp))
