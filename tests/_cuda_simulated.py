"""Stand-in cuSolverDx descriptors for numba's CUDA simulator.

Same classes, constructor arguments, attributes and device methods as the
:mod:`nvmath.device` solvers blocksolve uses (``CholeskySolver``,
``LUPivotSolver``, ``TriangularSolver``, ``QRFactorize``, ``QRMultiply``, and
the generic ``Solver`` for ``heev``), with the shared-memory layouts computed by
the same formulas as nvmath-python 1.0 (``_calculate_strides`` and
``Solver._calculate_default_leading_dimensions`` in
``nvmath/device/cusolverdx.py``).  The device methods do the work with
numpy on thread 0 of the block, once every thread has arrived; like the
real ones they do not synchronise when done, so the kernel's own
``syncthreads`` is what makes the results visible.

They also check what the real library cannot report: every thread of the
block reaches every device call (the simulator does not deadlock on a
divergent ``syncthreads``), no thread still writes the buffers when thread 0
calls (a ``syncthreads`` precedes the call), the block has the descriptor's
``block_dim``, and the shared buffers have the descriptor's value type and
sizes and start on a 16-byte boundary of shared memory (:data:`ALIGNMENT`).
Each call is recorded in :attr:`calls` (method, block index, copies
of the matrices it was given) so tests can inspect e.g. the padding of the
last block.

The device methods only run with ``NUMBA_ENABLE_CUDASIM=1``; the layout
properties work anywhere (the offline compilation tests use them).
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import config, cuda

__all__ = [
    "CholeskySolver",
    "LUPivotSolver",
    "TriangularSolver",
    "QRFactorize",
    "QRMultiply",
    "Solver",
    "suggested_batches_per_block",
    "DEFAULT_BLOCK_DIM",
]

# What the stand-ins answer where libmathdx would choose: kept small because
# each simulated thread costs about 0.16 ms.
DEFAULT_BLOCK_DIM = (32, 1, 1)

# The boundary every shared buffer handed to a device function must start on: cuSolverDx's
# shared-memory calculations (and its examples) align each buffer to 16 bytes, and its
# vectorised accesses fault on less.  Stated here, not taken from blocksolve, so that the
# kernels are checked against the library's requirement rather than against themselves.
ALIGNMENT = 16


def suggested_batches_per_block(largest):
    """Stand-in for libmathdx's suggestion: up to 4 small matrices per block."""
    return max(1, min(4, 64 // max(1, largest * largest)))


# --- layout formulas, as in nvmath/device/cusolverdx.py ---------------------


def _calculate_strides(shape, ld, arrangement):
    return (ld * shape[1], 1, ld) if arrangement == "col_major" else (ld * shape[0], ld, 1)


def _default_leading_dimensions(function, size, arrangement, side):
    def ld(rows, cols, arr):
        return rows if arr == "col_major" else cols

    arr_a, arr_b = arrangement
    m, n, k = size
    if function in ("potrf", "potrs", "getrf_partial_pivot", "getrs_partial_pivot"):
        return ld(m, n, arr_a), ld(n, k, arr_b)
    if function == "trsm":
        return (m if side == "left" else n), ld(m, n, arr_b)
    if function in ("geqrf", "heev"):
        return ld(m, n, arr_a), 0
    if function == "unmqr":
        return ld(m if side == "left" else n, k, arr_a), ld(m, n, arr_b)
    raise NotImplementedError(function)


# --- the device-call protocol ----------------------------------------------


@cuda.jit(device=True)
def _serial_section(descriptor, method, work, buffers):
    """All threads arrive; thread 0 checks, then does ``work``.

    No barrier after ``work``: like the real device functions, results are
    only safe to read after the kernel's own ``syncthreads``, so a kernel
    that forgets it reads stale shared memory here too.
    """
    first = cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0
    if first:
        before = descriptor._snapshot(buffers)
    descriptor._arrive()
    cuda.syncthreads()
    if first:
        block = (cuda.blockDim.x, cuda.blockDim.y, cuda.blockDim.z)
        descriptor._run(method, block, cuda.blockIdx.x, work, buffers, before)


def _view(buffer, shape, strides):
    """The ``shape`` view with element ``strides`` into a 1-D shared buffer."""
    needed = 1 + sum((extent - 1) * stride for extent, stride in zip(shape, strides))
    if math.prod(shape) and buffer.size < needed:
        raise AssertionError(
            f"shared buffer of {buffer.size} elements is too small for "
            f"shape {shape} with strides {strides}"
        )
    return np.lib.stride_tricks.as_strided(
        buffer, shape, tuple(s * buffer.itemsize for s in strides), writeable=True
    )


def _shared_offset(buffer):
    """Byte offset of ``buffer`` in the shared allocation it is a view of (the simulator's
    dynamic shared memory: the array made from its buffer, the root of the views)."""
    root = buffer
    while isinstance(root.base, np.ndarray):
        root = root.base
    return buffer.ctypes.data - root.ctypes.data


def _normalized_size(size):
    size = tuple(size)
    return {1: (size[0], size[0], 1), 2: (size[0], size[1], 1), 3: size}[len(size)]


class _Descriptor:
    """Parameters, layout properties and the device-call protocol."""

    function = None  # the cuSolverDx function deciding the default leading dimensions

    def __init__(
        self,
        size,
        precision,
        execution,
        *,
        sm=None,
        arrangement=None,
        transpose_mode=None,
        side=None,
        diag=None,
        fill_mode=None,
        batches_per_block=None,
        data_type=None,
        leading_dimensions=None,
        block_dim=None,
    ):
        if precision not in (np.float32, np.float64):
            raise ValueError(f"precision must be numpy.float32 or numpy.float64; got {precision}")
        if execution != "Block":
            raise ValueError(f"execution must be 'Block'; got {execution!r}")
        self.size = _normalized_size(size)
        self.precision = precision
        self.execution = execution
        self.sm = sm
        if arrangement is None:
            arrangement = ("col_major", "col_major")
        elif isinstance(arrangement, str) or len(arrangement) == 1:
            arrangement = (
                (arrangement if isinstance(arrangement, str) else arrangement[0]),
                "col_major",
            )
        self.arrangement = tuple(arrangement)
        self.transpose_mode = transpose_mode
        self.side = side
        self.diag = diag
        self.fill_mode = fill_mode
        self.data_type = data_type or "real"
        if transpose_mode == "transposed" and self.data_type == "complex":
            # What libmathdx answers (nvmath documents 'transposed' for real data only).
            raise ValueError(
                "transpose_mode 'transposed' is for real data; complex data "
                "takes 'non_transposed' or 'conj_transposed'"
            )
        largest = max(self.size[:2])
        if batches_per_block == "suggested":
            batches_per_block = suggested_batches_per_block(largest)
        self.batches_per_block = batches_per_block or 1
        if block_dim in (None, "suggested"):
            block_dim = DEFAULT_BLOCK_DIM
        self.block_dim = tuple(block_dim) + (1,) * (3 - len(block_dim))
        default_ld = _default_leading_dimensions(self.function, self.size, self.arrangement, side)
        if leading_dimensions is None:
            leading_dimensions = default_ld
        elif len(leading_dimensions) == 1:
            leading_dimensions = (leading_dimensions[0], default_ld[1])
        if any(ld < need for ld, need in zip(leading_dimensions, default_ld)):
            raise ValueError(
                f"leading_dimensions {tuple(leading_dimensions)} are smaller than "
                f"the minimum {default_ld}"
            )
        self.leading_dimensions = tuple(leading_dimensions)
        self.calls = []
        self._arrivals = 0
        self._lock = threading.Lock()

    # -- properties shared by all solvers --
    m = property(lambda self: self.size[0])
    n = property(lambda self: self.size[1])
    k = property(lambda self: self.size[2])
    a_arrangement = property(lambda self: self.arrangement[0])
    b_arrangement = property(lambda self: self.arrangement[1])
    lda = property(lambda self: self.leading_dimensions[0])
    ldb = property(lambda self: self.leading_dimensions[1])
    block_size = property(lambda self: math.prod(self.block_dim))

    @property
    def value_type(self):
        real = np.dtype(self.precision)
        return np.result_type(real, np.complex64) if self.data_type == "complex" else real

    info_type = ipiv_type = property(lambda self: np.dtype(np.int32))
    tau_type = property(lambda self: self.value_type)

    @property
    def a_shape(self):
        return (self.batches_per_block, self.m, self.n)

    def a_strides(self, *, lda=None):
        return _calculate_strides(
            self.a_shape[1:], self.lda if lda is None else lda, self.a_arrangement
        )

    def a_size(self, *, lda=None):
        return self.a_strides(lda=lda)[0] * self.a_shape[0]

    # -- protocol --
    def _arrive(self):
        with self._lock:
            self._arrivals += 1

    def _snapshot(self, buffers):
        return {name: buffer.tobytes() for name, (buffer, *_) in buffers.items()}

    def _run(self, method, block, block_index, work, buffers, before):
        with self._lock:
            arrivals, self._arrivals = self._arrivals, 0
        name = f"{type(self).__name__}.{method}"
        if block != self.block_dim:
            raise AssertionError(
                f"{name}: launched with block {block}, descriptor block_dim is {self.block_dim}"
            )
        if arrivals < math.prod(block):
            raise AssertionError(
                f"{name}: only {arrivals} of {math.prod(block)} threads reached the call"
            )
        if arrivals > math.prod(block):
            raise AssertionError(
                f"{name}: {arrivals} arrivals for {math.prod(block)} threads: "
                f"syncthreads missing between two device calls"
            )
        if self._snapshot(buffers) != before:
            raise AssertionError(
                f"{name}: shared memory changed after thread 0 called it: "
                f"syncthreads missing before the call"
            )
        views = {}
        for key, (buffer, shape, strides, dtype) in buffers.items():
            if buffer.dtype != dtype:
                raise AssertionError(f"{name}: {key} has dtype {buffer.dtype}, expected {dtype}")
            offset = _shared_offset(buffer)
            if offset % ALIGNMENT:
                raise AssertionError(
                    f"{name}: {key} starts at byte {offset} of shared memory, "
                    f"not on a {ALIGNMENT}-byte boundary"
                )
            views[key] = _view(buffer, shape, strides)
        self.calls.append((method, block_index, {k: v.copy() for k, v in views.items()}))
        with np.errstate(all="ignore"):  # a device computes infs and NaNs silently
            work(**views)

    def _call(self, method, work, **buffers):
        if not config.ENABLE_CUDASIM:
            raise RuntimeError(
                "the stand-in device methods only run under "
                "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
            )
        _serial_section(self, method, work, buffers)

    def _a(self, a):
        return (a, self.a_shape, self.a_strides(), self.value_type)


class _LinearSolver(_Descriptor):
    @property
    def info_shape(self):
        return (self.batches_per_block,)

    info_strides = property(lambda self: (1,))

    @property
    def b_shape(self):
        return (self.batches_per_block, self.n, self.k)

    def b_strides(self, *, ldb=None):
        return _calculate_strides(
            self.b_shape[1:], self.ldb if ldb is None else ldb, self.b_arrangement
        )

    def b_size(self, *, ldb=None):
        return self.b_strides(ldb=ldb)[0] * self.b_shape[0]

    def _b(self, b):
        return (b, self.b_shape, self.b_strides(), self.value_type)

    def _info(self, info):
        return (info, self.info_shape, self.info_strides, self.info_type)


class CholeskySolver(_LinearSolver):
    """Stand-in for :class:`nvmath.device.CholeskySolver`."""

    function = "potrf"

    def __init__(self, size, precision, execution, fill_mode, **kwargs):
        if fill_mode not in ("lower", "upper"):
            raise ValueError(f"fill_mode must be 'lower' or 'upper'; got {fill_mode!r}")
        super().__init__(size, precision, execution, fill_mode=fill_mode, **kwargs)
        if self.m != self.n:
            raise ValueError("A must be a square matrix for CholeskySolver.")

    def factorize(self, a, info, lda=None):
        lower = self.fill_mode == "lower"

        def work(a, info):
            for s in range(a.shape[0]):
                info[s] = _potrf(a[s], lower)

        self._call("factorize", work, a=self._a(a), info=self._info(info))

    def solve(self, a, b, lda=None, ldb=None):
        lower = self.fill_mode == "lower"

        def work(a, b):
            for s in range(a.shape[0]):
                t = np.tril(a[s]) if lower else np.conj(np.triu(a[s])).T  # A = T T^H
                b[s] = _solve(np.conj(t).T, _solve(t, b[s]))

        self._call("solve", work, a=self._a(a), b=self._b(b))


class LUPivotSolver(_LinearSolver):
    """Stand-in for :class:`nvmath.device.LUPivotSolver`."""

    function = "getrf_partial_pivot"

    def __init__(self, size, precision, execution, *, transpose_mode="non_transposed", **kwargs):
        super().__init__(size, precision, execution, transpose_mode=transpose_mode, **kwargs)

    @property
    def ipiv_shape(self):
        return (self.batches_per_block, min(self.m, self.n))

    ipiv_strides = property(lambda self: (self.ipiv_shape[1], 1))
    ipiv_size = property(lambda self: self.ipiv_shape[0] * self.ipiv_shape[1])

    def _ipiv(self, ipiv):
        return (ipiv, self.ipiv_shape, self.ipiv_strides, self.ipiv_type)

    def factorize(self, a, ipiv, info, lda=None):
        def work(a, ipiv, info):
            for s in range(a.shape[0]):
                info[s] = _getrf(a[s], ipiv[s])

        self._call("factorize", work, a=self._a(a), ipiv=self._ipiv(ipiv), info=self._info(info))

    def solve(self, a, ipiv, b, lda=None, ldb=None):
        if self.m != self.n:
            raise RuntimeError("solve is only available for square matrices")
        mode = self.transpose_mode

        def work(a, ipiv, b):
            for s in range(a.shape[0]):
                b[s] = _getrs(a[s], ipiv[s], b[s], mode)

        self._call("solve", work, a=self._a(a), ipiv=self._ipiv(ipiv), b=self._b(b))


class TriangularSolver(_Descriptor):
    """Stand-in for :class:`nvmath.device.TriangularSolver` (``side='left'`` only)."""

    function = "trsm"

    def __init__(
        self,
        size,
        precision,
        execution,
        side,
        fill_mode,
        diag,
        transpose_mode="non_transposed",
        **kwargs,
    ):
        if side != "left":
            raise NotImplementedError("the stand-in TriangularSolver supports side='left' only")
        super().__init__(
            size,
            precision,
            execution,
            side=side,
            fill_mode=fill_mode,
            diag=diag,
            transpose_mode=transpose_mode,
            **kwargs,
        )

    @property
    def a_shape(self):
        return (self.batches_per_block, self.m, self.m)

    @property
    def b_shape(self):
        return (self.batches_per_block, self.m, self.n)

    def b_strides(self, *, ldb=None):
        return _calculate_strides(
            self.b_shape[1:], self.ldb if ldb is None else ldb, self.b_arrangement
        )

    def b_size(self, *, ldb=None):
        return self.b_strides(ldb=ldb)[0] * self.b_shape[0]

    def solve(self, a, b, lda=None, ldb=None):
        lower, unit, mode = self.fill_mode == "lower", self.diag == "unit", self.transpose_mode

        def work(a, b):
            for s in range(a.shape[0]):
                t = np.tril(a[s]) if lower else np.triu(a[s])
                if unit:
                    np.fill_diagonal(t, 1)
                b[s] = _solve(_op(t, mode), b[s])

        self._call(
            "solve", work, a=self._a(a), b=(b, self.b_shape, self.b_strides(), self.value_type)
        )


class _Orthogonal(_Descriptor):
    @property
    def tau_shape(self):
        return (self.batches_per_block, min(self.m, self.n))

    tau_strides = property(lambda self: (self.tau_shape[1], 1))
    tau_size = property(lambda self: self.tau_shape[0] * self.tau_shape[1])

    def _tau(self, tau):
        return (tau, self.tau_shape, self.tau_strides, self.tau_type)


class QRFactorize(_Orthogonal):
    """Stand-in for :class:`nvmath.device.QRFactorize`."""

    function = "geqrf"

    def __init__(
        self, size, precision, execution, *, arrangement=None, leading_dimension=None, **kwargs
    ):
        super().__init__(
            size,
            precision,
            execution,
            arrangement=(arrangement,) if arrangement is not None else None,
            leading_dimensions=((leading_dimension,) if leading_dimension is not None else None),
            **kwargs,
        )

    def factorize(self, a, tau, lda=None):
        def work(a, tau):
            for s in range(a.shape[0]):
                _geqrf(a[s], tau[s])

        self._call("factorize", work, a=self._a(a), tau=self._tau(tau))


class QRMultiply(_Orthogonal):
    """Stand-in for :class:`nvmath.device.QRMultiply` (``side='left'`` only)."""

    function = "unmqr"

    def __init__(
        self, size, precision, execution, side, *, transpose_mode="non_transposed", **kwargs
    ):
        if side != "left":
            raise NotImplementedError("the stand-in QRMultiply supports side='left' only")
        super().__init__(
            size, precision, execution, side=side, transpose_mode=transpose_mode, **kwargs
        )

    @property
    def tau_shape(self):
        return (self.batches_per_block, self.k)

    @property
    def a_shape(self):
        return (self.batches_per_block, self.m, self.k)

    @property
    def c_shape(self):
        return (self.batches_per_block, self.m, self.n)

    def c_strides(self, *, ldc=None):
        return _calculate_strides(
            self.c_shape[1:], self.ldb if ldc is None else ldc, self.b_arrangement
        )

    def c_size(self, *, ldc=None):
        return self.c_strides(ldc=ldc)[0] * self.c_shape[0]

    def multiply(self, a, tau, c, lda=None, ldc=None):
        adjoint = self.transpose_mode != "non_transposed"

        def work(a, tau, c):
            for s in range(a.shape[0]):
                _apply_q(a[s], tau[s], c[s], adjoint)

        self._call(
            "multiply",
            work,
            a=self._a(a),
            tau=self._tau(tau),
            c=(c, self.c_shape, self.c_strides(), self.value_type),
        )


class Solver(_Descriptor):
    """Stand-in for nvmath's generic :class:`nvmath.device.Solver`; ``function='heev'`` only.

    ``execute(a, lambda, workspace, info)``: the eigenvalues of the Hermitian
    matrix in the triangle ``fill_mode`` selects, ascending, into ``lambda``
    (real, ``m`` per matrix); with ``job='overwrite_vectors'`` the
    eigenvectors replace ``a`` (columns), with ``'no_vectors'`` the triangle
    read is destroyed (NaN here, so a kernel that reads it shows).
    ``workspace_size`` is libmathdx 0.3.2's answer for heev (measured:
    ``(m - 1)`` elements per matrix, twice that with vectors).
    """

    def __init__(self, function, size, precision, execution, *, job=None, **kwargs):
        if function != "heev":
            raise NotImplementedError(
                f"the stand-in Solver supports function='heev' only; got {function!r}"
            )
        if job not in ("no_vectors", "overwrite_vectors"):
            raise ValueError(f"job must be 'no_vectors' or 'overwrite_vectors'; got {job!r}")
        self.function = function
        self.job = job
        super().__init__(size, precision, execution, **kwargs)
        if kwargs.get("fill_mode") not in ("lower", "upper"):
            raise ValueError("heev needs fill_mode 'lower' or 'upper'")

    info_shape = property(lambda self: (self.batches_per_block,))

    @property
    def workspace_size(self):
        per_matrix = (self.m - 1) * (2 if self.job == "overwrite_vectors" else 1)
        return self.batches_per_block * per_matrix

    def execute(self, a, lam, workspace, info, lda=None):
        lower, vectors = self.fill_mode == "lower", self.job == "overwrite_vectors"
        bpb, m = self.batches_per_block, self.m
        real = np.dtype(self.precision)

        def work(a, lam, workspace, info):
            for s in range(bpb):
                tri = np.tril(a[s]) if lower else np.triu(a[s])
                h = tri + np.conj(tri.T) - np.diag(np.diagonal(tri))
                h[np.diag_indices(m)] = np.diagonal(tri).real
                w, v = np.linalg.eigh(h)
                lam[s] = w
                info[s] = 0
                if vectors:
                    a[s] = v
                else:
                    a[s][np.tril_indices(m) if lower else np.triu_indices(m)] = np.nan

        self._call(
            "execute",
            work,
            a=self._a(a),
            lam=(lam, (bpb, m), (m, 1), real),
            workspace=(workspace, (self.workspace_size,), (1,), self.value_type),
            info=(info, (bpb,), (1,), self.info_type),
        )


# --- numpy reference implementations (LAPACK conventions) -------------------


def _solve(t, b):
    """``t^-1 b``, NaN when ``t`` is singular (the caller checks info)."""
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        return np.full_like(b, np.nan)


def _op(t, mode):
    return {"non_transposed": t, "transposed": t.T, "conj_transposed": np.conj(t).T}[mode]


def _potrf(a, lower):
    """Factor the Hermitian matrix held in one triangle of ``a`` in place; LAPACK info."""
    n = a.shape[0]
    h = np.tril(a) if lower else np.conj(np.triu(a)).T  # the lower triangle of A
    factor = np.zeros_like(h)
    for j in range(n):
        d = h[j, j].real - np.sum(np.abs(factor[j, :j]) ** 2)
        if not d > 0:
            return j + 1
        factor[j, j] = np.sqrt(d)
        below = h[j + 1 :, j] - factor[j + 1 :, :j] @ np.conj(factor[j, :j])
        factor[j + 1 :, j] = below / factor[j, j]
    rows, cols = np.tril_indices(n)
    if lower:
        a[rows, cols] = factor[rows, cols]
    else:
        a[cols, rows] = np.conj(factor[rows, cols])
    return 0


def _getrf(a, ipiv):
    """LAPACK getf2: partial pivoting on ``|re| + |im|``; 1-based ``ipiv``; info."""
    m, n = a.shape
    info = 0
    for k in range(min(m, n)):
        p = k + int(np.argmax(np.abs(a[k:, k].real) + np.abs(a[k:, k].imag)))
        ipiv[k] = p + 1
        if a[p, k] == 0:
            info = info or k + 1
            continue
        if p != k:
            a[[k, p]] = a[[p, k]]
        a[k + 1 :, k] /= a[k, k]
        a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
    return info


def _getrs(a, ipiv, b, mode):
    n = a.shape[0]
    lower = np.tril(a, -1) + np.eye(n, dtype=a.dtype)
    upper = np.triu(a)
    x = b.copy()
    if mode == "non_transposed":
        for i in range(n):
            x[[i, ipiv[i] - 1]] = x[[ipiv[i] - 1, i]]
        return _solve(upper, _solve(lower, x))
    x = _solve(_op(lower, mode), _solve(_op(upper, mode), x))
    for i in reversed(range(n)):
        x[[i, ipiv[i] - 1]] = x[[ipiv[i] - 1, i]]
    return x


def _scaled_norm(values):
    """2-norm without underflow or overflow of the squares (as LAPACK ``xNRM2``)."""
    values = np.asarray(values)
    big = np.max(np.abs(values), initial=0.0)
    if big == 0 or not np.isfinite(big):
        return big
    return big * np.sqrt(np.sum(np.abs(values / big) ** 2))


def _larfg(alpha, x):
    """LAPACK ?larfg: ``(beta, tau, v)`` with ``H^H [alpha; x] = [beta; 0]``, norms scaled."""
    xnorm = _scaled_norm(x)
    if xnorm == 0 and alpha.imag == 0:
        return alpha, 0 * alpha, x
    beta = -np.copysign(_scaled_norm([alpha.real, alpha.imag, xnorm]), alpha.real)
    tau = (beta - alpha) / beta
    return beta, tau, x / (alpha - beta)


def _geqrf(a, tau):
    """LAPACK geqr2 in place: R above the diagonal, reflectors below."""
    m, n = a.shape
    for j in range(min(m, n)):
        beta, tau[j], a[j + 1 :, j] = _larfg(a[j, j], a[j + 1 :, j].copy())
        a[j, j] = beta
        v = np.concatenate(([1], a[j + 1 :, j])).astype(a.dtype)
        a[j:, j + 1 :] -= np.conj(tau[j]) * np.outer(v, np.conj(v) @ a[j:, j + 1 :])


def _apply_q(a, tau, c, adjoint):
    """``c = Q c`` (or ``Q^H c``) with ``Q = H(0) ... H(k-1)`` from geqrf's reflectors."""
    order = range(len(tau)) if adjoint else reversed(range(len(tau)))
    for i in order:
        v = np.concatenate(([1], a[i + 1 :, i])).astype(a.dtype)
        t = np.conj(tau[i]) if adjoint else tau[i]
        c[i:] -= t * np.outer(v, np.conj(v) @ c[i:])
