"""QR on the GPU: ``geqrf`` (qr, every NumPy mode)."""

from __future__ import annotations

from ..._op import op_for, resolve_dims
from ._descriptors import arrangement
from ._host import no_failures


def geqrf_descriptors(api, pattern, common):
    """QR factors; for modes 'reduced'/'complete' also ``Q = Q I`` by unmqr.

    Q is formed by applying the reflectors to an identity block (QRMultiply,
    side 'left') in the same kernel, so one user API covers every mode.  The
    multiplier reads the factorised A in place, hence the same ``lda`` as the
    factorizer (and, like every descriptor, the same pinned traits).
    """
    m, n = pattern.dim("m"), pattern.dim("n")
    mode = pattern.option("mode")
    wants_q = mode in ("reduced", "complete")
    arr_a = arrangement(pattern.layouts[0])
    if wants_q and m < n:
        # The multiplier sees A as m x min(m, n): its batch stride is lda * m
        # in row-major but lda * min(m, n) != lda * n in column-major, which
        # would misplace every matrix after the first of a block.
        arr_a = "row_major"
    factorize = api.QRFactorize(size=(m, n), arrangement=arr_a, **common)
    descriptors = {"factorize": factorize}
    if wants_q:
        q_cols = min(m, n) if mode == "reduced" else m
        ldc = q_cols  # Q is stored to a C-contiguous output: row_major
        descriptors["multiply"] = api.QRMultiply(
            size=(m, q_cols, min(m, n)),
            side="left",
            transpose_mode="non_transposed",
            arrangement=(arr_a, "row_major"),
            leading_dimensions=(factorize.lda, ldc),
            **common,
        )
    return descriptors


def make_geqrf_kernel(descriptors, pattern):
    """``(Q, R)``, ``R`` alone, or NumPy's raw ``(H, tau)`` (``H`` is the factored A
    transposed), as ``mode`` says."""
    from . import _skeleton as kernel

    f, dtype = descriptors["factorize"], pattern.np_dtype
    m, n, bpb = f.m, f.n, f.batches_per_block
    mode = pattern.option("mode")
    a_layout = kernel.layout(f.a_shape, f.a_strides(), f.a_arrangement, dtype)
    r_rows = m if mode == "complete" else min(m, n)
    r_layout = kernel.layout((bpb, r_rows, n), f.a_strides(), f.a_arrangement, dtype)
    tau_shape, tau_strides = f.tau_shape, f.tau_strides
    sizes = {"a": f.a_size(), "tau": f.tau_size}

    @kernel.device
    def load(shared, first, count, a, *results):
        kernel.load_matrix(a, first, count, shared.a, a_layout, m)

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.tau)

    if mode == "r":

        @kernel.device
        def store_r(shared, first, count, a, r, info):
            kernel.store_triangle(shared.a, r, r, first, count, r_layout, False, True)

        program = kernel.block_program(f, dtype, load, [factorize], store_r, **sizes)
        run = program.run

        def geqrf_r_kernel(a, r, info, batch):
            run(batch, a, r, info)

        return program.spec(geqrf_r_kernel, [((r_rows, n), dtype)])

    if mode == "raw":

        @kernel.device
        def store_raw(shared, first, count, a, h, tau, info):
            kernel.store_transposed(shared.a, h, first, count, a_layout)
            kernel.store_vectors(shared.tau, tau, first, count, tau_shape, tau_strides)

        program = kernel.block_program(f, dtype, load, [factorize], store_raw, **sizes)
        run = program.run

        def geqrf_raw_kernel(a, h, tau, info, batch):
            run(batch, a, h, tau, info)

        return program.spec(geqrf_raw_kernel, [((n, m), dtype), ((min(m, n),), dtype)])

    q = descriptors["multiply"]
    c_layout = kernel.layout(q.c_shape, q.c_strides(), q.b_arrangement, dtype)

    @kernel.device
    def load_with_identity(shared, first, count, a, q_out, r, info):
        kernel.load_matrix(a, first, count, shared.a, a_layout, m)
        kernel.fill_identity(shared.c, c_layout)

    @kernel.device
    def multiply(shared):
        q.multiply(shared.a, shared.tau, shared.c)

    @kernel.device
    def store_qr(shared, first, count, a, q_out, r, info):
        kernel.store_matrix(shared.c, q_out, first, count, c_layout)
        kernel.store_triangle(shared.a, r, r, first, count, r_layout, False, True)

    program = kernel.block_program(
        f, dtype, load_with_identity, [factorize, multiply], store_qr, c=q.c_size(), **sizes
    )
    run = program.run

    def geqrf_q_kernel(a, q_out, r, info, batch):
        run(batch, a, q_out, r, info)

    return program.spec(geqrf_q_kernel, [((m, q.c_shape[2]), dtype), ((r_rows, n), dtype)])


def geqrf_empty(pattern, operands, xp, runtime):
    """Empty factors; ``Q`` is the identity for a complete QR of an ``(m, 0)`` matrix."""
    (a,) = operands
    mode = op_for(pattern.routine, dict(pattern.options))
    dims = resolve_dims(mode, dict(pattern.dims))
    outputs = []
    for spec in mode.outputs:
        out = xp.zeros((a.shape[0], *(dims[s] for s in spec.core)), a.dtype)
        if spec.name == "Q":
            out[...] = xp.eye(out.shape[-2], out.shape[-1], dtype=a.dtype)
        outputs.append(out)
    return (*outputs, no_failures(a, xp))
