"""The inverse on the GPU: ``getri`` (inv), as LU's factor-and-solve against the identity."""

from __future__ import annotations

from ._descriptors import arrangement
from ._host import no_failures
from .lu import lu_factor_and_solve, lu_steps


def getri_descriptors(api, pattern, common):
    """``solve``'s descriptors with ``k = n``, the identity row-major like the output."""
    n = pattern.dim("n")
    return lu_factor_and_solve(api, n, n, arrangement(pattern.layouts[0]), "row_major", common)


def make_getri_kernel(descriptors, pattern):
    """A^-1 from getrs against an identity built in shared memory; ``info`` getrf's."""
    from . import _skeleton as kernel

    d, dtype = descriptors["solver"], pattern.np_dtype
    a_layout = kernel.layout(d.a_shape, d.a_strides(), d.a_arrangement, dtype)
    b_layout = kernel.layout(d.b_shape, d.b_strides(), d.b_arrangement, dtype)
    n = d.n

    @kernel.device
    def load(shared, first, count, a, ainv, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, n)
        kernel.fill_identity(shared.b, b_layout)

    @kernel.device
    def store(shared, first, count, a, ainv, info):
        kernel.store_matrix(shared.b, ainv, first, count, b_layout)
        kernel.store_info(shared.info, info, first, count)

    sizes = {"a": d.a_size(), "b": d.b_size(), "ipiv": d.ipiv_size, "info": d.info_shape[0]}
    program = kernel.block_program(d, dtype, load, lu_steps(descriptors), store, **sizes)
    run = program.run

    def getri_kernel(a, ainv, info, batch):
        run(batch, a, ainv, info)

    return program.spec(getri_kernel, [((n, n), dtype)])


def getri_empty(pattern, operands, xp, runtime):
    (a,) = operands  # 0 x 0 matrices: their inverse is empty
    return a.copy(), no_failures(a, xp)
