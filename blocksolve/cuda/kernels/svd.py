"""Singular value decomposition on the GPU: ``gesvd`` (svd, svdvals; pinv, matrix_rank,
cond and polar through them).

cuSolverDx has no SVD.  The kernel is the CPU's algorithm
(:mod:`blocksolve.cpu.svd`) with cuSolverDx doing the orthogonal part: a
Householder QR (``geqrf``, QRFactorize) of ``G``, which is ``A`` when M >= N
and ``A^H`` when M < N, then one-sided Jacobi on the columns of the
``p x p`` triangle ``R`` (``p = min(M, N)``) in shared memory
(:mod:`blocksolve.cuda._jacobi`): rotations ``V`` make ``R V = W`` with
orthogonal columns, whose norms are the singular values; ``Q [W / s, 0; 0,
I]`` (QRMultiply) gives the left singular vectors of ``G`` (all ``max(M,
N)`` of them for ``full_matrices``).  For M < N the two sides swap (``A =
V S (Q W / s)^H``).  Square matrices take the same path: one code path (and
cuSolverDx's launch shape for its geqrf) covers every shape, and the QR is
one step of the order of a single sweep.  Unlike
an eigensolver on ``A^H A`` (whose rounding swamps singular values below
``sqrt(eps) s[0]``), one-sided Jacobi keeps each singular value to a few
``p eps`` relative to ``s[0]`` and ``U``, ``V`` orthonormal to a few ``p eps``.

The accuracy rules are the CPU kernel's, with its constants: each matrix is
scaled by a power of two (exactly, undone on the singular values) into the
range where no product of the rotations under- or overflows; columns whose
squared norm ends below the column floor (zero and negligible singular
values) get left singular vectors completed to an orthonormal basis; a
matrix with an inf or NaN gets NaN results and ``info = 1`` (it is replaced
by the identity inside, so nothing non-finite reaches the solver); one
whose rotations have not settled after :data:`MAX_SWEEPS` sweeps gets
``info`` = its pairs left non-orthogonal.  Singular values come largest
first; the singular vectors follow the CPU kernels' convention (those the
rotations give from ``V = I``, not normalised), which agrees with LAPACK's
up to a sign (a phase for complex matrices) per pair ``u_j, v_j``.

Shared memory of a block, by the skeleton's buffer names: ``a`` and ``tau``
the QR; ``b`` the Jacobi matrices ``G`` and ``V``; ``c`` QRMultiply's
``[W / s, 0; 0, I]``, then the left vectors; ``eigenvalues`` each matrix's
largest entry, later the squared column norms; ``ipiv`` each matrix's
scaling exponent; ``info`` its failure flag, its count of unorthogonal pairs
and the sweeps' two flags.
"""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import MAX_SWEEPS, column_floor, scale_target, tolerance
from ..._op import op_for, resolve_dims
from ._descriptors import arrangement
from ._host import no_failures, real_dtype


def _shape(pattern):
    """``(rows, p, wide)``: the factored ``G`` is ``rows x p``; ``wide`` when ``G = A^H``."""
    m, n = pattern.dim("m"), pattern.dim("n")
    return max(m, n), min(m, n), m < n


def _vector_columns(pattern):
    """Columns of ``Q C``: all ``rows`` for full_matrices, else ``p``."""
    rows, p, _ = _shape(pattern)
    return rows if pattern.option("full") else p


def least_shared_bytes(pattern):
    """Dynamic shared memory the kernel of ``pattern`` takes at least, from the pattern
    alone: its matrix buffers for one matrix per block at the smallest leading
    dimensions (``a`` and ``tau``, ``b``, and ``c`` with vectors), without building
    descriptors (which needs nvmath) to learn that a kernel cannot fit a device."""
    rows, p, _ = _shape(pattern)
    vectors = pattern.option("vectors")
    values = rows * p + p + p * p * (2 if vectors else 1)
    if vectors:
        values += rows * _vector_columns(pattern)
    return values * pattern.np_dtype.itemsize


def gesvd_descriptors(api, pattern, common):
    """QR factors of ``G``; with vectors also ``Q C`` by unmqr (side 'left').

    ``A^H`` is read element by element, so its shared copy takes the
    arrangement in which consecutive threads read consecutive addresses of
    ``A``.  The multiplier reads the factored ``G`` in place: same ``lda``,
    batches per block and block shape; ``C`` is row-major.
    """
    rows, p, wide = _shape(pattern)
    arr_a = arrangement(pattern.layouts[0])
    if wide:
        arr_a = "row_major" if arr_a == "col_major" else "col_major"
    factorize = api.QRFactorize(size=(rows, p), arrangement=arr_a, **common)
    descriptors = {"factorize": factorize}
    if pattern.option("vectors"):
        cols = _vector_columns(pattern)
        pinned = {
            **common,
            "batches_per_block": factorize.batches_per_block,
            "block_dim": factorize.block_dim,
        }
        descriptors["multiply"] = api.QRMultiply(
            size=(rows, cols, p),
            side="left",
            transpose_mode="non_transposed",
            arrangement=(arr_a, "row_major"),
            leading_dimensions=(factorize.lda, cols),
            **pinned,
        )
    return descriptors


def make_gesvd_kernel(descriptors, pattern):
    """``(U, S, Vh)`` (or ``S``) as ``numpy.linalg.svd``, and ``info``."""
    from . import _jacobi
    from . import _skeleton as kernel

    f, dtype = descriptors["factorize"], pattern.np_dtype
    m, n = pattern.dim("m"), pattern.dim("n")
    rows, p, wide = _shape(pattern)
    vectors, bpb = pattern.option("vectors"), f.batches_per_block
    real, value = real_dtype(dtype).type, np.dtype(dtype).type
    zero, one = value(0), value(1)
    nan = value(complex(math.nan, math.nan) if dtype.kind == "c" else math.nan)
    real_zero, real_one, real_nan = real(0), real(1), real(math.nan)
    tol = tolerance(dtype, p)
    target = scale_target(dtype, rows, p)
    col_floor = real(column_floor(real_dtype(dtype), tol))
    size = p * p

    a_layout = kernel.layout(f.a_shape, f.a_strides(), f.a_arrangement, dtype)
    a0, a1, a2 = f.a_strides()
    sizes = {
        "a": f.a_size(),
        "tau": f.tau_size,
        "b": bpb * size * (2 if vectors else 1),
        "eigenvalues": bpb * p,
        "ipiv": bpb,
        "info": 2 * bpb + 2,
    }
    q = descriptors.get("multiply")
    cols = _vector_columns(pattern)
    if vectors:
        sizes["c"] = q.c_size()
        c0, c1, c2 = q.c_strides()
    else:
        c0 = c1 = c2 = 0
    sweeps = _jacobi.jacobi_sweeps(
        dtype, p, bpb, vectors, MAX_SWEEPS, tol, float(np.finfo(real).tiny)
    )
    largest = _jacobi.largest_entries(dtype, bpb, (rows, p), (a0, a1, a2))
    norms = _jacobi.column_norms(dtype, p, bpb)
    complete = _jacobi.complete_columns(dtype, p, bpb, col_floor)

    # info: [failed per matrix | unorthogonal pairs per matrix | the sweeps' two flags]
    counted, flagged = bpb, 2 * bpb

    @kernel.device
    def load(shared, first, count, a, *results):
        if wide:
            kernel.load_adjoint(a, first, count, shared.a, a_layout)
        else:
            kernel.load_matrix(a, first, count, shared.a, a_layout, m)
        tid, threads = kernel.thread_rank(), kernel.block_threads()
        for s in range(tid, bpb, threads):
            shared.info[s] = 0
            shared.info[counted + s] = 0
            shared.eigenvalues[s] = real_zero  # the largest entry, until the norms
        if tid == 0:
            shared.info[flagged] = 0
            shared.info[flagged + 1] = 0

    @kernel.device
    def measure(shared):
        largest(shared.a, shared.eigenvalues, shared.info)

    @kernel.device
    def scale(shared):
        """``G *= 2**k`` per matrix with ``k`` (kept in ``ipiv``) scaling its largest entry
        into ``[2**(target - 1), 2**target)``, exactly (two factors: ``2**k`` may be out of
        range); a matrix with an inf or NaN becomes the identity."""
        tid, threads = kernel.thread_rank(), kernel.block_threads()
        for idx in range(tid, bpb * rows * p, threads):
            s, i, j = idx // (rows * p), (idx // p) % rows, idx % p
            at = s * a0 + i * a1 + j * a2
            peak = shared.eigenvalues[s]
            if shared.info[s]:
                shared.a[at] = one if i == j else zero
            elif peak > 0:
                k = target - math.frexp(peak)[1]
                half = k // 2
                low = math.ldexp(real_one, int(half))
                high = math.ldexp(real_one, int(k - half))
                shared.a[at] = value(shared.a[at]) * low * high
        for s in range(tid, bpb, threads):
            peak = shared.eigenvalues[s]
            usable = shared.info[s] == 0 and peak > 0
            shared.ipiv[s] = target - math.frexp(peak)[1] if usable else 0

    @kernel.device
    def factorize(shared):
        f.factorize(shared.a, shared.tau)

    @kernel.device
    def triangle(shared):
        """``G = R`` (the upper triangle of the factored block), ``V = I``."""
        for idx in range(kernel.thread_rank(), bpb * size, kernel.block_threads()):
            s, j, i = idx // size, (idx % size) // p, idx % p
            shared.b[idx] = value(shared.a[s * a0 + i * a1 + j * a2]) if i <= j else zero
            if vectors:
                shared.b[bpb * size + idx] = one if i == j else zero

    @kernel.device
    def rotate(shared):
        sweeps(shared.b, shared.info[flagged : flagged + 2], shared.info[counted:flagged])

    @kernel.device
    def squared_norms(shared):
        norms(shared.b, shared.eigenvalues)

    @kernel.device
    def complete_basis(shared):
        complete(shared.b, shared.eigenvalues, shared.info[0:bpb])

    @kernel.device
    def fill(shared):
        """``C = [W / s, 0; 0, I]``: ``W``'s columns normalised (completed ones are)."""
        squares = shared.eigenvalues
        for idx in range(kernel.thread_rank(), bpb * rows * cols, kernel.block_threads()):
            s, i, j = idx // (rows * cols), (idx // cols) % rows, idx % cols
            at = s * c0 + i * c1 + j * c2
            if i < p and j < p:
                square = squares[s * p + j]
                inverse = real_one / math.sqrt(square) if square >= col_floor else real_one
                shared.c[at] = value(shared.b[s * size + j * p + i]) * inverse
            else:
                shared.c[at] = one if i == j else zero

    @kernel.device
    def multiply(shared):
        q.multiply(shared.a, shared.tau, shared.c)

    @kernel.device
    def rank(squares, s, j):
        """Position of column ``j`` of matrix ``s`` when sorted by descending norm (ties in
        column order)."""
        mine, r = squares[s * p + j], 0
        for k in range(p):
            other = squares[s * p + k]
            if other > mine or (other == mine and k < j):
                r += 1
        return r

    @kernel.device
    def store_values(shared, first, count, s_out, info):
        squares = shared.eigenvalues
        tid, threads = kernel.thread_rank(), kernel.block_threads()
        for idx in range(tid, count * p, threads):
            s, j = idx // p, idx % p
            scaled = math.ldexp(math.sqrt(squares[idx]), int(-shared.ipiv[s]))
            s_out[first + s, rank(squares, s, j)] = real_nan if shared.info[s] else scaled
        for s in range(tid, count, threads):
            info[first + s] = 1 if shared.info[s] else shared.info[counted + s]

    @kernel.device
    def store_vectors(shared, first, count, u, vh):
        """``Q C`` (sorted) to ``U`` (``Vh``, adjoint, when wide); ``V`` to the other."""
        squares = shared.eigenvalues
        tid, threads = kernel.thread_rank(), kernel.block_threads()
        for idx in range(tid, count * rows * cols, threads):
            s, i, j = idx // (rows * cols), (idx // cols) % rows, idx % cols
            at = j if j >= p else rank(squares, s, j)
            x = nan if shared.info[s] else value(shared.c[s * c0 + i * c1 + j * c2])
            if wide:
                vh[first + s, at, i] = x.conjugate()
            else:
                u[first + s, i, at] = x
        for idx in range(tid, count * size, threads):
            s, j, i = idx // size, (idx % size) // p, idx % p
            at = rank(squares, s, j)
            x = nan if shared.info[s] else value(shared.b[bpb * size + idx])
            if wide:
                u[first + s, i, at] = x
            else:
                vh[first + s, at, i] = x.conjugate()

    steps = [measure, scale, factorize, triangle, rotate, squared_norms]
    if not vectors:

        @kernel.device
        def store(shared, first, count, a, s_out, info):
            store_values(shared, first, count, s_out, info)

        program = kernel.block_program(f, dtype, load, steps, store, **sizes)
        run = program.run

        def gesvd_values_kernel(a, s_out, info, batch):
            run(batch, a, s_out, info)

        return program.spec(gesvd_values_kernel, [((p,), real_dtype(dtype))])

    @kernel.device
    def store_all(shared, first, count, a, u, s_out, vh, info):
        store_values(shared, first, count, s_out, info)
        store_vectors(shared, first, count, u, vh)

    steps += [complete_basis, fill, multiply]
    program = kernel.block_program(f, dtype, load, steps, store_all, **sizes)
    run = program.run

    def gesvd_kernel(a, u, s_out, vh, info, batch):
        run(batch, a, u, s_out, vh, info)

    u_core = (m, m if pattern.option("full") else p)
    vh_core = (n if pattern.option("full") else p, n)
    return program.spec(
        gesvd_kernel, [(u_core, dtype), ((p,), real_dtype(dtype)), (vh_core, dtype)]
    )


def gesvd_empty(pattern, operands, xp, runtime):
    """An empty core dimension: no singular values; ``U`` or ``Vh`` the identity where
    full_matrices makes it square (NumPy's results)."""
    (a,) = operands
    op = op_for(pattern.routine, dict(pattern.options))
    dims = resolve_dims(op, dict(pattern.dims))
    outputs = []
    for spec in op.outputs:
        core = tuple(dims[symbol] for symbol in spec.core)
        out = xp.zeros(
            (a.shape[0], *core), real_dtype(a.dtype) if spec.dtype == "real" else a.dtype
        )
        if len(core) == 2 and core[0] == core[1]:
            out[...] = xp.eye(core[0], dtype=a.dtype)
        outputs.append(out)
    return (*outputs, no_failures(a, xp))
