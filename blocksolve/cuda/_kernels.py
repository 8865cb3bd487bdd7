"""Kernel templates, one per op family, written against the cuSolverDx user API.

Each factory takes the descriptors of one call pattern (from
:mod:`blocksolve.cuda._descriptors`, or the stand-ins of
the simulator's stand-ins) and returns a :class:`KernelSpec`: a
numba-cuda kernel ``kernel(*inputs, *outputs, info, batch)`` and its launch
configuration.  Every kernel has the same shape:

1. block ``b`` owns matrices ``[b * bpb, b * bpb + count)``; ``count`` is
   below ``bpb`` only in the last block, whose spare slots are filled with
   identity matrices (no NaN or failure noise) and never stored;
2. all threads copy their matrices from global to shared memory, laid out as
   the descriptor says (``a_shape``, ``a_strides()``, ``b_shape``, ...; no
   hand-written leading-dimension arithmetic), consecutive threads on
   consecutive addresses of the arrangement; ``syncthreads``;
3. every thread calls the solver's device methods, each followed by
   ``syncthreads`` -- there is no early return anywhere;
4. all threads store the real matrices and ``info``.

Shared memory is one dynamic allocation carved into the descriptor's buffers
(:func:`carve`), so the same kernel runs above 48 KB once the launcher opts
in.  cuSolverDx reports ``info`` for potrf and getrf only: the zero-diagonal
checks of potrs/getrs/trsm are made here on the input in global memory, and
a failing matrix gets its right-hand side back as solution (the CPU
backend's solves give infs or NaNs there, as LAPACK's potrs and getrs do;
the results of a failed matrix are unspecified either way).  The gels kernel
only factors (QR of ``A``, or of ``A^H`` for under-determined systems) and
applies ``Q``; the rest of lstsq -- the SVD of the small triangular factor
that gives the minimum-norm solution for every rank -- is done on the host
side (:mod:`blocksolve.cuda._host`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import config, cuda

from ._descriptors import solves_conjugated

__all__ = ["KernelSpec", "FACTORIES", "carve"]

# The simulator's cuda.jit has no forceinline; on the GPU the helpers are
# inlined at the NVVM level so their tuple arguments become constants.
_device = (
    cuda.jit(device=True) if config.ENABLE_CUDASIM else cuda.jit(device=True, forceinline=True)
)


@dataclass(frozen=True)
class KernelSpec:
    """A kernel and how to launch it.

    Attributes
    ----------
    kernel : numba-cuda dispatcher
        ``kernel(*inputs, *outputs, info, batch)``.
    block_dim : tuple of int
    batches_per_block : int
    shared_bytes : int
        Dynamic shared memory per block.
    outputs : tuple of (tuple of int, numpy.dtype)
        Core shape and dtype of each output the kernel writes, in argument
        order.
    """

    kernel: object
    block_dim: tuple
    batches_per_block: int
    shared_bytes: int
    outputs: tuple


def _kernel_spec(body, block_dim, batches_per_block, shared_bytes, outputs):
    """The :class:`KernelSpec` of the kernel function ``body``, compiled for blocks of
    ``block_dim`` threads.

    On the GPU the block size is the kernel's launch bounds (``.maxntid``): ptxas then
    keeps its registers within what a block that size may have (64 K), spilling if it
    must.  Without them it may give a thread up to 255, and some of cuSolverDx's larger
    kernels took more than a block has (complex128 least squares of 128 x 64 matrices:
    512 threads x 204 registers), which cannot launch.  The simulator's ``cuda.jit`` has
    no launch bounds.
    """
    jit = cuda.jit if config.ENABLE_CUDASIM else cuda.jit(launch_bounds=math.prod(block_dim))
    return KernelSpec(jit(body), tuple(block_dim), batches_per_block, shared_bytes, outputs)


def carve(value_dtype, values, indices=(), reals=()):
    """Place named buffers in one dynamic shared-memory allocation.

    Parameters
    ----------
    value_dtype : numpy.dtype
        Element type of the ``values`` buffers; the ``reals`` buffers (its
        real counterpart, e.g. ``heev``'s eigenvalues) follow them, then the
        int32 ``indices`` buffers (every value type is a multiple of its
        real type's size, and that of 4 bytes).
    values, indices, reals : sequence of (str, int)
        Buffer names and element counts.

    Returns
    -------
    bounds : dict of str to (int, int)
        ``[start, stop)`` of each buffer, in elements of its own type.
    nbytes : int
    """
    bounds, at = {}, 0
    for name, count in values:
        bounds[name] = (at, at + count)
        at += count
    value_size = np.dtype(value_dtype).itemsize
    real_size = np.finfo(value_dtype).dtype.itemsize
    at = at * value_size // real_size
    for name, count in reals:
        bounds[name] = (at, at + count)
        at += count
    at = at * real_size // 4
    for name, count in indices:
        bounds[name] = (at, at + count)
        at += count
    return bounds, at * 4


# --- device helpers ---------------------------------------------------------


@_device
def _thread_rank():
    return cuda.threadIdx.x + cuda.blockDim.x * (
        cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z
    )


@_device
def _block_threads():
    return cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z


@_device
def _coords(idx, rows, cols, rows_fastest):
    """``(slot, row, col)`` of the ``idx``-th element in arrangement order."""
    if rows_fastest:
        rest = idx // rows
        return rest // cols, idx % rows, rest % cols
    rest = idx // cols
    return rest // rows, rest % rows, idx % cols


@_device
def _load(src, first, count, dst, shape, strides, rows_fastest, src_rows, one, zero):
    """``dst[slot] = src[first + slot]``; rows from ``src_rows`` on and spare slots padded.

    Spare slots (``slot >= count``) get the identity pattern, rows at or
    beyond ``src_rows`` of real slots get zeros.
    """
    _load_conjugated_if(
        src, first, count, dst, shape, strides, rows_fastest, src_rows, one, zero, False
    )


@_device
def _load_conjugated_if(
    src, first, count, dst, shape, strides, rows_fastest, src_rows, one, zero, conjugate
):
    """:func:`_load`, the values conjugated when ``conjugate``."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), slots * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        at = s * strides[0] + r * strides[1] + c * strides[2]
        if s < count and r < src_rows:
            value = src[first + s, r, c]
            dst[at] = value.conjugate() if conjugate else value
        elif s >= count and r == c:
            dst[at] = one
        else:
            dst[at] = zero


@_device
def _load_adjoint(src, first, count, dst, shape, strides, rows_fastest, one, zero):
    """``dst[slot] = src[first + slot]^H``; spare slots get the identity pattern."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), slots * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        at = s * strides[0] + r * strides[1] + c * strides[2]
        if s < count:
            dst[at] = src[first + s, c, r].conjugate()
        elif r == c:
            dst[at] = one
        else:
            dst[at] = zero


@_device
def _fill_identity(dst, shape, strides, rows_fastest, one, zero):
    slots, rows, cols = shape
    for idx in range(_thread_rank(), slots * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[s * strides[0] + r * strides[1] + c * strides[2]] = one if r == c else zero


@_device
def _store(src, dst, first, count, shape, strides, rows_fastest):
    """``dst[first + slot] = src[slot]`` for the real slots."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), count * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]


@_device
def _store_transposed(src, dst, first, count, shape, strides, rows_fastest):
    """``dst[first + slot] = src[slot]^T`` (NumPy's 'raw' QR layout)."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), count * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[first + s, c, r] = src[s * strides[0] + r * strides[1] + c * strides[2]]


@_device
def _store_triangle(
    src, other, dst, first, count, shape, strides, rows_fastest, lower, clean, zero
):
    """Store one triangle of ``src``; the other from ``other`` or zero (``clean``)."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), count * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        if (r >= c) if lower else (r <= c):
            dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]
        elif clean:
            dst[first + s, r, c] = zero
        else:
            dst[first + s, r, c] = other[first + s, r, c]


@_device
def _store_solution(
    src, b, dst, first, count, shape, strides, rows_fastest, status, status_first, conjugate
):
    """Store the solution of each real slot (conjugated when ``conjugate``), or its
    right-hand side where it failed."""
    slots, rows, cols = shape
    for idx in range(_thread_rank(), count * rows * cols, _block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        if status[status_first + s] != 0:
            dst[first + s, r, c] = b[first + s, r, c]
        else:
            dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]
            if conjugate:  # in global memory: numba's complex type, not the solver's
                dst[first + s, r, c] = dst[first + s, r, c].conjugate()


@_device
def _store_vectors(src, dst, first, count, shape, strides):
    """``dst[first + slot, i] = src[slot, i]`` (tau)."""
    slots, length = shape
    for idx in range(_thread_rank(), count * length, _block_threads()):
        s, i = idx // length, idx % length
        dst[first + s, i] = src[s * strides[0] + i * strides[1]]


@_device
def _store_pivots(src, piv, first, count, shape, strides):
    """cuSolverDx's 1-based pivots -> SciPy's 0-based ones."""
    slots, length = shape
    for idx in range(_thread_rank(), count * length, _block_threads()):
        s, i = idx // length, idx % length
        piv[first + s, i] = src[s * strides[0] + i * strides[1]] - 1


@_device
def _load_pivots(piv, first, count, dst, shape, strides):
    """SciPy's 0-based pivots -> cuSolverDx's 1-based ones; identity for spare slots."""
    slots, length = shape
    for idx in range(_thread_rank(), slots * length, _block_threads()):
        s, i = idx // length, idx % length
        dst[s * strides[0] + i * strides[1]] = piv[first + s, i] + 1 if s < count else i + 1


@_device
def _store_info(src, info, first, count):
    for s in range(_thread_rank(), count, _block_threads()):
        info[first + s] = src[s]


@_device
def _times_real_sign(sign, u, size):
    """``sign`` times the sign of a real pivot: ±1, also when ``u`` overflowed to ±inf
    (where ``u/|u|`` is NaN and NumPy's sign is ±1)."""
    return -sign if u < 0 else sign


@_device
def _times_complex_phase(sign, u, size):
    """``sign`` times the phase ``u/|u|`` of a complex pivot (NaN when ``u`` is infinite or
    NaN, as in NumPy); a zero pivot leaves it (the matrix is singular: info > 0)."""
    return sign * (u / size) if size != 0 else sign


def _slogdet_device(times_pivot_sign):
    """The device function ``slogdet_of`` for one kind of pivot (real or complex).

    A factory because shared memory holds complex numbers as nvmath's vector
    type, on which the real kind's comparison does not type: each kind gets
    its own function, chosen when the kernel is built.
    """

    @_device
    def slogdet_of(sa, sipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf):
        """``(sign, logabsdet)`` of slot ``s`` from getrf's factors, by NumPy's rule: the
        parity of the row interchanges (1-based ``ipiv``) times the signs (phases) of
        ``U``'s diagonal, and the sum of the logs of their magnitudes (NaN from a NaN
        pivot; a zero pivot means info > 0, which the caller reports itself)."""
        sign = one
        total = real_zero
        for i in range(n):
            u = sa[s * a_strides[0] + i * a_strides[1] + i * a_strides[2]]
            size = abs(u)
            sign = times_pivot_sign(sign, u, size)
            # The simulator's math.log(0) raises where CUDA's returns -inf.
            total += math.log(size) if size != 0 else minus_inf
            if sipiv[s * ipiv_strides[0] + i * ipiv_strides[1]] != i + 1:
                sign = -sign
        return sign, total

    return slogdet_of


_SLOGDET_OF = {
    "real": _slogdet_device(_times_real_sign),
    "complex": _slogdet_device(_times_complex_phase),
}


@_device
def _zero_diagonal_info(a, info, first, count, n):
    """``info = 1 + index`` of the first exactly zero diagonal entry of ``a``, else 0."""
    for s in range(_thread_rank(), count, _block_threads()):
        failed = 0
        for i in range(n):
            if a[first + s, i, i] == 0:
                failed = i + 1
                break
        info[first + s] = failed


@_device
def _nonfinite_info(a, info, first, count, m, n):
    """``info = 1`` for each real slot whose matrix holds an inf or NaN, else 0."""
    for s in range(_thread_rank(), count, _block_threads()):
        failed = 0
        for i in range(m):
            for j in range(n):
                x = a[first + s, i, j]
                if not (abs(x.real) < math.inf and abs(x.imag) < math.inf):
                    failed = 1
        info[first + s] = failed


# --- kernel factories ---------------------------------------------------------


def _constants(dtype):
    dtype = np.dtype(dtype)
    return dtype.type(1), dtype.type(0)


def _col_major(arrangement):
    return arrangement == "col_major"


def _potrf(descriptors, pattern):
    d = descriptors["solver"]
    n, bpb, dtype = d.n, d.batches_per_block, pattern.np_dtype
    lower, clean = pattern.option("lower"), pattern.option("clean")
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    bounds, nbytes = carve(dtype, [("a", d.a_size())], [("info", d.info_shape[0])])
    (a0, a1), (i0, i1) = bounds["a"], bounds["info"]
    value_type, info_type = d.value_type, d.info_type
    one, zero = _constants(dtype)

    def potrf_kernel(a, c, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=info_type)
        sa, sinfo = values[a0:a1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        cuda.syncthreads()
        d.factorize(sa, sinfo)
        cuda.syncthreads()
        _store_triangle(sa, a, c, first, count, a_shape, a_strides, a_cols, lower, clean, zero)
        _store_info(sinfo, info, first, count)

    return _kernel_spec(potrf_kernel, d.block_dim, bpb, nbytes, (((n, n), dtype),))


def _triangular_solve(descriptors, pattern, check_diagonal, conjugate=False):
    """potrs and trsm: ``x = op(A)^-1 b``, info from A's diagonal (``conjugate``: see
    :func:`~blocksolve.cuda._descriptors.solves_conjugated`)."""
    d = descriptors["solver"]
    bpb, dtype = d.batches_per_block, pattern.np_dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    b_shape, b_strides, b_cols = d.b_shape, d.b_strides(), _col_major(d.b_arrangement)
    n, k = b_shape[1], b_shape[2]
    bounds, nbytes = carve(dtype, [("a", d.a_size()), ("b", d.b_size())])
    (a0, a1), (b0, b1) = bounds["a"], bounds["b"]
    value_type = d.value_type
    one, zero = _constants(dtype)

    def triangular_solve_kernel(a, b, x, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        sa, sb = values[a0:a1], values[b0:b1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        _load_conjugated_if(
            b, first, count, sb, b_shape, b_strides, b_cols, n, one, zero, conjugate
        )
        if check_diagonal:
            _zero_diagonal_info(a, info, first, count, n)
        cuda.syncthreads()
        d.solve(sa, sb)
        cuda.syncthreads()
        _store_solution(sb, b, x, first, count, b_shape, b_strides, b_cols, info, first, conjugate)

    return _kernel_spec(triangular_solve_kernel, d.block_dim, bpb, nbytes, (((n, k), dtype),))


def _potrs(descriptors, pattern):
    return _triangular_solve(descriptors, pattern, True)


def _trsm(descriptors, pattern):
    return _triangular_solve(
        descriptors, pattern, not pattern.option("unit_diagonal"), solves_conjugated(pattern)
    )


def _getrf(descriptors, pattern):
    """LU with partial pivoting of ``m x n`` matrices: ``lu`` and ``min(m, n)`` pivots."""
    d = descriptors["solver"]
    m, n, bpb, dtype = d.m, d.n, d.batches_per_block, pattern.np_dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    ipiv_shape, ipiv_strides = d.ipiv_shape, d.ipiv_strides
    bounds, nbytes = carve(
        dtype, [("a", d.a_size())], [("ipiv", d.ipiv_size), ("info", d.info_shape[0])]
    )
    (a0, a1), (p0, p1), (i0, i1) = bounds["a"], bounds["ipiv"], bounds["info"]
    value_type, index_type = d.value_type, d.ipiv_type
    one, zero = _constants(dtype)

    def getrf_kernel(a, lu, piv, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=index_type)
        sa, sipiv, sinfo = values[a0:a1], indices[p0:p1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, m, one, zero)
        cuda.syncthreads()
        d.factorize(sa, sipiv, sinfo)
        cuda.syncthreads()
        _store(sa, lu, first, count, a_shape, a_strides, a_cols)
        _store_pivots(sipiv, piv, first, count, ipiv_shape, ipiv_strides)
        _store_info(sinfo, info, first, count)

    return _kernel_spec(
        getrf_kernel,
        d.block_dim,
        bpb,
        nbytes,
        (((m, n), dtype), ((min(m, n),), np.dtype(np.int32))),
    )


def _getrs(descriptors, pattern):
    d = descriptors["solver"]
    n, bpb, dtype = d.n, d.batches_per_block, pattern.np_dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    b_shape, b_strides, b_cols = d.b_shape, d.b_strides(), _col_major(d.b_arrangement)
    ipiv_shape, ipiv_strides = d.ipiv_shape, d.ipiv_strides
    bounds, nbytes = carve(dtype, [("a", d.a_size()), ("b", d.b_size())], [("ipiv", d.ipiv_size)])
    (a0, a1), (b0, b1), (p0, p1) = bounds["a"], bounds["b"], bounds["ipiv"]
    value_type, index_type = d.value_type, d.ipiv_type
    one, zero = _constants(dtype)
    conjugate = solves_conjugated(pattern)

    def getrs_kernel(lu, piv, b, x, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=index_type)
        sa, sb, sipiv = values[a0:a1], values[b0:b1], indices[p0:p1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(lu, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        _load_conjugated_if(
            b, first, count, sb, b_shape, b_strides, b_cols, n, one, zero, conjugate
        )
        _load_pivots(piv, first, count, sipiv, ipiv_shape, ipiv_strides)
        _zero_diagonal_info(lu, info, first, count, n)
        cuda.syncthreads()
        d.solve(sa, sipiv, sb)
        cuda.syncthreads()
        _store_solution(sb, b, x, first, count, b_shape, b_strides, b_cols, info, first, conjugate)

    return _kernel_spec(getrs_kernel, d.block_dim, bpb, nbytes, (((n, b_shape[2]), dtype),))


def _lu_then_getrs(descriptors, pattern, against_identity):
    """getrf + getrs in one kernel, the factorisation being ``lu_factor``'s descriptor:
    ``solve`` (gesv) against ``b``, or ``inv`` (getri) against an identity built in
    shared memory."""
    f, d = descriptors["factor"], descriptors["solver"]
    n, bpb, dtype = d.n, d.batches_per_block, pattern.np_dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    b_shape, b_strides, b_cols = d.b_shape, d.b_strides(), _col_major(d.b_arrangement)
    bounds, nbytes = carve(
        dtype,
        [("a", d.a_size()), ("b", d.b_size())],
        [("ipiv", d.ipiv_size), ("info", d.info_shape[0])],
    )
    (a0, a1), (b0, b1) = bounds["a"], bounds["b"]
    (p0, p1), (i0, i1) = bounds["ipiv"], bounds["info"]
    value_type, index_type = d.value_type, d.ipiv_type
    one, zero = _constants(dtype)

    @_device
    def factor_and_solve(sa, sb, sipiv, sinfo):
        cuda.syncthreads()
        f.factorize(sa, sipiv, sinfo)
        cuda.syncthreads()
        d.solve(sa, sipiv, sb)
        cuda.syncthreads()

    if against_identity:

        def getri_kernel(a, ainv, info, batch):
            values = cuda.shared.array(0, dtype=value_type)
            indices = cuda.shared.array(0, dtype=index_type)
            sa, sb = values[a0:a1], values[b0:b1]
            sipiv, sinfo = indices[p0:p1], indices[i0:i1]
            first = cuda.blockIdx.x * bpb
            count = min(bpb, batch - first)
            _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
            _fill_identity(sb, b_shape, b_strides, b_cols, one, zero)
            factor_and_solve(sa, sb, sipiv, sinfo)
            _store(sb, ainv, first, count, b_shape, b_strides, b_cols)
            _store_info(sinfo, info, first, count)

        return _kernel_spec(getri_kernel, d.block_dim, bpb, nbytes, (((n, n), dtype),))

    def gesv_kernel(a, b, x, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=index_type)
        sa, sb = values[a0:a1], values[b0:b1]
        sipiv, sinfo = indices[p0:p1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        _load(b, first, count, sb, b_shape, b_strides, b_cols, n, one, zero)
        factor_and_solve(sa, sb, sipiv, sinfo)
        _store_solution(sb, b, x, first, count, b_shape, b_strides, b_cols, sinfo, 0, False)
        _store_info(sinfo, info, first, count)

    return _kernel_spec(gesv_kernel, d.block_dim, bpb, nbytes, (((n, b_shape[2]), dtype),))


def _gesv(descriptors, pattern):
    return _lu_then_getrs(descriptors, pattern, against_identity=False)


def _getri(descriptors, pattern):
    return _lu_then_getrs(descriptors, pattern, against_identity=True)


def _geqrf(descriptors, pattern):
    """QR in every NumPy mode; Q (reduced/complete) is ``Q I`` through the multiplier."""
    f = descriptors["factorize"]
    m, n, bpb, dtype = f.m, f.n, f.batches_per_block, pattern.np_dtype
    p = min(m, n)
    mode = pattern.option("mode")
    a_shape, a_strides, a_cols = f.a_shape, f.a_strides(), _col_major(f.a_arrangement)
    tau_shape, tau_strides = f.tau_shape, f.tau_strides
    r_rows = m if mode == "complete" else p
    r_shape = (bpb, r_rows, n)
    value_type = f.value_type
    one, zero = _constants(dtype)

    if mode == "r":
        bounds, nbytes = carve(dtype, [("a", f.a_size()), ("tau", f.tau_size)])
        (a0, a1), (t0, t1) = bounds["a"], bounds["tau"]

        def geqrf_r_kernel(a, r_out, info, batch):
            values = cuda.shared.array(0, dtype=value_type)
            sa, stau = values[a0:a1], values[t0:t1]
            first = cuda.blockIdx.x * bpb
            count = min(bpb, batch - first)
            _load(a, first, count, sa, a_shape, a_strides, a_cols, m, one, zero)
            cuda.syncthreads()
            f.factorize(sa, stau)
            cuda.syncthreads()
            _store_triangle(
                sa, r_out, r_out, first, count, r_shape, a_strides, a_cols, False, True, zero
            )

        return _kernel_spec(geqrf_r_kernel, f.block_dim, bpb, nbytes, (((p, n), dtype),))

    if mode == "raw":
        bounds, nbytes = carve(dtype, [("a", f.a_size()), ("tau", f.tau_size)])
        (a0, a1), (t0, t1) = bounds["a"], bounds["tau"]

        def geqrf_raw_kernel(a, h, tau, info, batch):
            values = cuda.shared.array(0, dtype=value_type)
            sa, stau = values[a0:a1], values[t0:t1]
            first = cuda.blockIdx.x * bpb
            count = min(bpb, batch - first)
            _load(a, first, count, sa, a_shape, a_strides, a_cols, m, one, zero)
            cuda.syncthreads()
            f.factorize(sa, stau)
            cuda.syncthreads()
            _store_transposed(sa, h, first, count, a_shape, a_strides, a_cols)
            _store_vectors(stau, tau, first, count, tau_shape, tau_strides)

        return _kernel_spec(
            geqrf_raw_kernel, f.block_dim, bpb, nbytes, (((n, m), dtype), ((p,), dtype))
        )

    q = descriptors["multiply"]
    c_shape, c_strides, c_cols = q.c_shape, q.c_strides(), _col_major(q.b_arrangement)
    bounds, nbytes = carve(dtype, [("a", f.a_size()), ("tau", f.tau_size), ("c", q.c_size())])
    (a0, a1), (t0, t1), (c0, c1) = bounds["a"], bounds["tau"], bounds["c"]

    def geqrf_q_kernel(a, q_out, r_out, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        sa, stau, sc = values[a0:a1], values[t0:t1], values[c0:c1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, m, one, zero)
        _fill_identity(sc, c_shape, c_strides, c_cols, one, zero)
        cuda.syncthreads()
        f.factorize(sa, stau)
        cuda.syncthreads()
        q.multiply(sa, stau, sc)
        cuda.syncthreads()
        _store(sc, q_out, first, count, c_shape, c_strides, c_cols)
        _store_triangle(
            sa, r_out, r_out, first, count, r_shape, a_strides, a_cols, False, True, zero
        )

    return _kernel_spec(
        geqrf_q_kernel, f.block_dim, bpb, nbytes, (((m, c_shape[2]), dtype), ((r_rows, n), dtype))
    )


def _gels(descriptors, pattern):
    """lstsq's device part: QR of ``A`` (M >= N) or of ``A^H`` (M < N), then ``Q`` applied.

    Stores the ``p x p`` triangular factor (``p = min(M, N)``) and ``Q^H b``
    (M >= N; M x K) or the first M columns of ``Q`` (M < N; N x M, by ``Q``
    applied to an identity block), and ``info = 1`` where ``A`` holds an inf
    or NaN.  :func:`blocksolve.cuda._host.finish_gels` does the rest.
    """
    f, q = descriptors["factorize"], descriptors["multiply"]
    m, n, bpb, dtype = pattern.dim("m"), pattern.dim("n"), f.batches_per_block, pattern.np_dtype
    wide = m < n
    p = min(m, n)
    a_shape, a_strides, a_cols = f.a_shape, f.a_strides(), _col_major(f.a_arrangement)
    c_shape, c_strides, c_cols = q.c_shape, q.c_strides(), _col_major(q.b_arrangement)
    tri_shape = (bpb, p, p)
    bounds, nbytes = carve(dtype, [("a", f.a_size()), ("tau", f.tau_size), ("c", q.c_size())])
    (a0, a1), (t0, t1), (c0, c1) = bounds["a"], bounds["tau"], bounds["c"]
    value_type = f.value_type
    one, zero = _constants(dtype)

    def gels_kernel(a, b, triangle, second, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        sa, stau, sc = values[a0:a1], values[t0:t1], values[c0:c1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        if wide:  # A^H = QR; the first M columns of Q from Q applied to I
            _load_adjoint(a, first, count, sa, a_shape, a_strides, a_cols, one, zero)
            _fill_identity(sc, c_shape, c_strides, c_cols, one, zero)
        else:  # A = QR; Q^H b
            _load(a, first, count, sa, a_shape, a_strides, a_cols, m, one, zero)
            _load(b, first, count, sc, c_shape, c_strides, c_cols, m, one, zero)
        _nonfinite_info(a, info, first, count, m, n)
        cuda.syncthreads()
        f.factorize(sa, stau)
        cuda.syncthreads()
        q.multiply(sa, stau, sc)
        cuda.syncthreads()
        _store_triangle(
            sa, triangle, triangle, first, count, tri_shape, a_strides, a_cols, False, True, zero
        )
        _store(sc, second, first, count, c_shape, c_strides, c_cols)

    return _kernel_spec(
        gels_kernel, f.block_dim, bpb, nbytes, (((p, p), dtype), (tuple(c_shape[1:]), dtype))
    )


def _getrf_det(descriptors, pattern):
    """``det`` / ``slogdet`` (option ``log``) from getrf's diagonal and pivots; info stays 0."""
    d = descriptors["solver"]
    n, bpb, dtype = d.n, d.batches_per_block, pattern.np_dtype
    real = np.finfo(dtype).dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    ipiv_strides = d.ipiv_strides
    bounds, nbytes = carve(
        dtype, [("a", d.a_size())], [("ipiv", d.ipiv_size), ("info", d.info_shape[0])]
    )
    (a0, a1), (p0, p1), (i0, i1) = bounds["a"], bounds["ipiv"], bounds["info"]
    value_type, index_type = d.value_type, d.ipiv_type
    one, zero = _constants(dtype)
    real_zero, minus_inf = real.type(0), real.type(-np.inf)
    slogdet_of = _SLOGDET_OF["complex" if np.dtype(dtype).kind == "c" else "real"]

    if pattern.option("log"):

        def slogdet_kernel(a, sign, logabsdet, info, batch):
            values = cuda.shared.array(0, dtype=value_type)
            indices = cuda.shared.array(0, dtype=index_type)
            sa, sipiv, sinfo = values[a0:a1], indices[p0:p1], indices[i0:i1]
            first = cuda.blockIdx.x * bpb
            count = min(bpb, batch - first)
            _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
            cuda.syncthreads()
            d.factorize(sa, sipiv, sinfo)
            cuda.syncthreads()
            for s in range(_thread_rank(), count, _block_threads()):
                sign_s, log_s = slogdet_of(
                    sa, sipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf
                )
                singular = sinfo[s] != 0  # exactly singular: NumPy's (0, -inf)
                sign[first + s] = zero if singular else sign_s
                logabsdet[first + s] = minus_inf if singular else log_s

        return _kernel_spec(slogdet_kernel, d.block_dim, bpb, nbytes, (((), dtype), ((), real)))

    def det_kernel(a, det, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=index_type)
        sa, sipiv, sinfo = values[a0:a1], indices[p0:p1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        cuda.syncthreads()
        d.factorize(sa, sipiv, sinfo)
        cuda.syncthreads()
        for s in range(_thread_rank(), count, _block_threads()):
            sign_s, log_s = slogdet_of(
                sa, sipiv, s, n, a_strides, ipiv_strides, one, real_zero, minus_inf
            )
            det[first + s] = zero if sinfo[s] != 0 else sign_s * math.exp(log_s)

    return _kernel_spec(det_kernel, d.block_dim, bpb, nbytes, (((), dtype),))


def _posv(descriptors, pattern):
    """``solve(assume_a='pos')``: potrf + potrs in one kernel, A and B read once.

    A matrix that is not positive definite gets its right-hand side back as
    solution (like the CPU backend) and potrf's info.
    """
    f, d = descriptors["factor"], descriptors["solver"]
    bpb, dtype = d.batches_per_block, pattern.np_dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    b_shape, b_strides, b_cols = d.b_shape, d.b_strides(), _col_major(d.b_arrangement)
    n, k = b_shape[1], b_shape[2]
    bounds, nbytes = carve(
        dtype, [("a", d.a_size()), ("b", d.b_size())], [("info", d.info_shape[0])]
    )
    (a0, a1), (b0, b1), (i0, i1) = bounds["a"], bounds["b"], bounds["info"]
    value_type, info_type = d.value_type, d.info_type
    one, zero = _constants(dtype)

    def posv_kernel(a, b, x, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        indices = cuda.shared.array(0, dtype=info_type)
        sa, sb, sinfo = values[a0:a1], values[b0:b1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        _load(b, first, count, sb, b_shape, b_strides, b_cols, n, one, zero)
        cuda.syncthreads()
        f.factorize(sa, sinfo)
        cuda.syncthreads()
        d.solve(sa, sb)
        cuda.syncthreads()
        _store_solution(sb, b, x, first, count, b_shape, b_strides, b_cols, sinfo, 0, False)
        _store_info(sinfo, info, first, count)

    return _kernel_spec(posv_kernel, d.block_dim, bpb, nbytes, (((n, k), dtype),))


def _heev(descriptors, pattern):
    """``eigh`` / ``eigvalsh`` (option ``vectors``): cuSolverDx ``heev`` through nvmath's
    generic ``Solver``; eigenvalues (real, ascending) from its ``lambda`` buffer,
    eigenvectors from A, which ``overwrite_vectors`` replaces with them."""
    d = descriptors["solver"]
    solver = d.solver  # what numba types; d adds the layout helpers
    n, bpb, dtype = d.n, d.batches_per_block, pattern.np_dtype
    real = np.finfo(dtype).dtype
    a_shape, a_strides, a_cols = d.a_shape, d.a_strides(), _col_major(d.a_arrangement)
    lambda_shape, lambda_strides = d.lambda_shape, d.lambda_strides
    bounds, nbytes = carve(
        dtype,
        [("a", d.a_size()), ("work", d.workspace_size)],
        [("info", d.info_shape[0])],
        reals=[("lambda", d.lambda_size)],
    )
    (a0, a1), (w0, w1) = bounds["a"], bounds["work"]
    (l0, l1), (i0, i1) = bounds["lambda"], bounds["info"]
    value_type, real_type, info_type = d.value_type, d.real_type, d.info_type
    one, zero = _constants(dtype)

    if not pattern.option("vectors"):

        def heev_values_kernel(a, w, info, batch):
            values = cuda.shared.array(0, dtype=value_type)
            reals = cuda.shared.array(0, dtype=real_type)
            indices = cuda.shared.array(0, dtype=info_type)
            sa, swork = values[a0:a1], values[w0:w1]
            slambda, sinfo = reals[l0:l1], indices[i0:i1]
            first = cuda.blockIdx.x * bpb
            count = min(bpb, batch - first)
            _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
            cuda.syncthreads()
            solver.execute(sa, slambda, swork, sinfo)
            cuda.syncthreads()
            _store_vectors(slambda, w, first, count, lambda_shape, lambda_strides)
            _store_info(sinfo, info, first, count)

        return _kernel_spec(heev_values_kernel, d.block_dim, bpb, nbytes, (((n,), real),))

    def heev_kernel(a, w, v, info, batch):
        values = cuda.shared.array(0, dtype=value_type)
        reals = cuda.shared.array(0, dtype=real_type)
        indices = cuda.shared.array(0, dtype=info_type)
        sa, swork = values[a0:a1], values[w0:w1]
        slambda, sinfo = reals[l0:l1], indices[i0:i1]
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        _load(a, first, count, sa, a_shape, a_strides, a_cols, n, one, zero)
        cuda.syncthreads()
        solver.execute(sa, slambda, swork, sinfo)
        cuda.syncthreads()
        _store_vectors(slambda, w, first, count, lambda_shape, lambda_strides)
        _store(sa, v, first, count, a_shape, a_strides, a_cols)
        _store_info(sinfo, info, first, count)

    return _kernel_spec(heev_kernel, d.block_dim, bpb, nbytes, (((n,), real), ((n, n), dtype)))


# routine -> factory(descriptors, pattern) -> KernelSpec
FACTORIES = {
    "potrf": _potrf,
    "potrs": _potrs,
    "trsm": _trsm,
    "getrf": _getrf,
    "getrs": _getrs,
    "gesv": _gesv,
    "geqrf": _geqrf,
    "gels": _gels,
    "getri": _getri,
    "getrf_det": _getrf_det,
    "posv": _posv,
    "heev": _heev,
}
