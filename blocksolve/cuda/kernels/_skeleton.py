"""The one kernel skeleton of the CUDA backend, and the device helpers routines build on.

Every cuSolverDx kernel blocksolve generates has the same shape, written once
in :func:`block_program`:

1. block ``b`` owns matrices ``[b * bpb, b * bpb + count)``; ``count`` is
   below ``bpb`` (batches per block) only in the last block, whose spare slots
   the loads fill with identity matrices (no NaN or failure noise) and the
   stores never write back;
2. one dynamic shared-memory allocation is carved into the routine's named
   buffers (:class:`Shared`), each on a 16-byte boundary
   (:data:`SHARED_ALIGNMENT`), so the same kernel runs above 48 KB once the
   launcher opts in;
3. ``load`` copies the block's matrices from global to shared memory, laid
   out as the descriptor says; ``syncthreads``;
4. each solver step (the descriptors' ``factorize``, ``solve``, ``multiply``,
   ``execute``), each followed by ``syncthreads``;
5. ``store`` copies the real slots' results and ``info`` back.

Every thread runs every step: there is no early return, so all threads reach
every solver call and every ``syncthreads``.  A routine's kernel factory (in
its family module, :mod:`blocksolve.cuda.cholesky` ...) supplies only what
differs -- buffer sizes, ``load``, steps and ``store`` as device functions --
and its entry point, whose argument list is the routine's
(``kernel(*inputs, *outputs, info, batch)``, see :mod:`blocksolve.cuda._abi`).

The helpers move data between global memory and shared buffers whose layout
(shape, strides, arrangement) comes from the descriptor's own helpers
(``a_shape``, ``a_strides()``, ...; no hand-written leading-dimension
arithmetic), consecutive threads on consecutive addresses of the
arrangement.  cuSolverDx reports ``info`` for potrf, getrf and heev only: the
zero-diagonal check of the triangular solves is made on the input in global
memory (:func:`zero_diagonal_info`); least squares and the SVD find infs and
NaNs as they measure each matrix's largest entry before scaling it.

Importing this module imports numba.cuda: only kernel factories do, when a
kernel must be compiled.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import config, cuda

__all__ = [
    "KernelSpec",
    "BlockProgram",
    "Shared",
    "SHARED_ALIGNMENT",
    "block_program",
    "carve",
    "device",
    "layout",
]

# The simulator's cuda.jit has no forceinline; on the GPU the helpers are
# inlined at the NVVM level so their tuple arguments become constants.
device = cuda.jit(device=True) if config.ENABLE_CUDASIM else cuda.jit(device=True, forceinline=True)

# A block's shared buffers: the matrix values (cuSolverDx's value type), the real
# eigenvalues of heev, then the int32 pivots and info.  A routine sizes the ones it uses;
# the others are empty.
Shared = namedtuple("Shared", ["a", "b", "tau", "c", "workspace", "eigenvalues", "ipiv", "info"])
_VALUES, _REALS, _INDICES = Shared._fields[:5], Shared._fields[5:6], Shared._fields[6:]
_INDEX = np.dtype(np.int32)

SHARED_ALIGNMENT = 16
"""Bytes every shared buffer is aligned to.

cuSolverDx's device functions may access shared memory with vector
(up to 128-bit) loads and stores; its own shared-memory size calculations
take an explicit alignment, 16 bytes in its examples, and nvmath's
descriptors report none of their own.  A buffer aligned only to its element
size (a float32 ``tau`` after an odd-sized ``a``) would fault with a
misaligned address on the first such access.
"""

# The base of the dynamic allocation is declared with that alignment on the GPU; the
# simulator takes no alignment argument (its buffer is a NumPy allocation, 16-byte aligned).
_BASE_ALIGNMENT = None if config.ENABLE_CUDASIM else SHARED_ALIGNMENT


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


def carve(value_dtype, **sizes):
    """Place the named buffers of :class:`Shared` in one dynamic shared-memory allocation.

    Every buffer starts on a :data:`SHARED_ALIGNMENT`-byte boundary of the
    allocation (whose base is declared with that alignment), whatever the
    sizes of the buffers before it.

    Parameters
    ----------
    value_dtype : numpy.dtype
        Element type of the matrix buffers; the real buffer takes its real
        counterpart, the index buffers int32 (every element size divides
        :data:`SHARED_ALIGNMENT`).
    **sizes : int
        Element count of each buffer used, by its :class:`Shared` name.

    Returns
    -------
    bounds : Shared of (int, int)
        ``[start, stop)`` of each buffer, in elements of its own type.
    nbytes : int
        Bytes up to the end of the last buffer.
    """
    unknown = set(sizes) - set(Shared._fields)
    if unknown:
        raise TypeError(f"carve: no shared buffer named {sorted(unknown)}")
    itemsizes = (
        (_VALUES, np.dtype(value_dtype).itemsize),
        (_REALS, np.finfo(value_dtype).dtype.itemsize),
        (_INDICES, _INDEX.itemsize),
    )
    bounds, nbytes = {}, 0
    for names, itemsize in itemsizes:
        for name in names:
            start = -(-nbytes // SHARED_ALIGNMENT) * SHARED_ALIGNMENT
            at = start // itemsize
            bounds[name] = (at, at + sizes.get(name, 0))
            nbytes = max(nbytes, bounds[name][1] * itemsize)
    return Shared(**bounds), nbytes


def layout(shape, strides, arrangement, dtype):
    """A shared matrix buffer as the helpers take it.

    ``(shape, strides, rows_fastest, one, zero)``: the descriptor's ``(slots,
    rows, cols)`` shape and element strides, whether its arrangement is
    column-major, and the identity's entries for padding.
    """
    dtype = np.dtype(dtype)
    return (
        tuple(shape),
        tuple(strides),
        arrangement == "col_major",
        dtype.type(1),
        dtype.type(0),
    )


def _in_turn(steps):
    """One device function running ``steps(shared)`` in order, ``syncthreads`` between."""
    head, *rest = steps
    if not rest:
        return head
    tail = _in_turn(rest)

    @device
    def head_then_tail(shared):
        head(shared)
        cuda.syncthreads()
        tail(shared)

    return head_then_tail


@dataclass(frozen=True)
class BlockProgram:
    """What :func:`block_program` builds: the device function ``run(batch, *arrays)``
    a routine's kernel calls, and the launch shape."""

    run: object
    block_dim: tuple
    batches_per_block: int
    shared_bytes: int

    def spec(self, entry, outputs):
        """The :class:`KernelSpec` of the kernel function ``entry``.

        On the GPU the block size is the kernel's launch bounds (``.maxntid``):
        ptxas then keeps its registers within what a block that size may have
        (64 K), spilling if it must.  Without them it may give a thread up to
        255, more than a block of cuSolverDx's larger kernels has, and such a
        kernel cannot launch.  The simulator's ``cuda.jit`` has no launch bounds.
        """
        threads = math.prod(self.block_dim)
        jit = cuda.jit if config.ENABLE_CUDASIM else cuda.jit(launch_bounds=threads)
        return KernelSpec(
            jit(entry),
            self.block_dim,
            self.batches_per_block,
            self.shared_bytes,
            tuple((tuple(core), np.dtype(dtype)) for core, dtype in outputs),
        )


def block_program(descriptor, dtype, load, steps, store, **sizes):
    """The skeleton of every kernel, around a routine's ``load``, ``steps`` and ``store``.

    Parameters
    ----------
    descriptor
        The descriptor whose batches per block, block shape and value type
        the kernel takes (every descriptor of a kernel is pinned to the same).
    dtype : numpy.dtype
        The matrices' dtype.
    load, store : device functions ``(shared, first, count, *arrays)``
        ``arrays`` are the kernel's arguments but ``batch``; ``shared`` the
        :class:`Shared` buffers; the block's real matrices are ``[first, first
        + count)``.
    steps : sequence of device functions ``(shared)``
        The solver calls, in order.
    **sizes : int
        Element counts of the shared buffers used (see :func:`carve`).

    Returns
    -------
    BlockProgram
    """
    bpb = descriptor.batches_per_block
    value_type = descriptor.value_type
    real_type = np.finfo(dtype).dtype
    bounds, nbytes = carve(dtype, **sizes)
    (a0, a1), (b0, b1), (t0, t1), (c0, c1), (w0, w1), (e0, e1), (p0, p1), (i0, i1) = bounds
    compute = _in_turn(steps)

    @device
    def run(batch, *arrays):
        values = cuda.shared.array(0, dtype=value_type, alignment=_BASE_ALIGNMENT)
        reals = cuda.shared.array(0, dtype=real_type, alignment=_BASE_ALIGNMENT)
        indices = cuda.shared.array(0, dtype=_INDEX, alignment=_BASE_ALIGNMENT)
        shared = Shared(
            values[a0:a1],
            values[b0:b1],
            values[t0:t1],
            values[c0:c1],
            values[w0:w1],
            reals[e0:e1],
            indices[p0:p1],
            indices[i0:i1],
        )
        first = cuda.blockIdx.x * bpb
        count = min(bpb, batch - first)
        load(shared, first, count, *arrays)
        cuda.syncthreads()
        compute(shared)
        cuda.syncthreads()
        store(shared, first, count, *arrays)

    return BlockProgram(run, tuple(descriptor.block_dim), bpb, nbytes)


# --- device helpers -------------------------------------------------------------------


@device
def thread_rank():
    return cuda.threadIdx.x + cuda.blockDim.x * (
        cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z
    )


@device
def block_threads():
    return cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z


@device
def _coords(idx, rows, cols, rows_fastest):
    """``(slot, row, col)`` of the ``idx``-th element in arrangement order."""
    if rows_fastest:
        rest = idx // rows
        return rest // cols, idx % rows, rest % cols
    rest = idx // cols
    return rest // rows, rest % rows, idx % cols


@device
def load_matrix(src, first, count, dst, m, src_rows):
    """``dst[slot] = src[first + slot]`` in layout ``m``; spare slots get the identity,
    rows from ``src_rows`` on of real slots zeros."""
    load_conjugated_if(src, first, count, dst, m, src_rows, False)


@device
def load_conjugated_if(src, first, count, dst, m, src_rows, conjugate):
    """:func:`load_matrix`, the values conjugated when ``conjugate``."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), slots * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        at = s * strides[0] + r * strides[1] + c * strides[2]
        if s < count and r < src_rows:
            value = src[first + s, r, c]
            dst[at] = value.conjugate() if conjugate else value
        elif s >= count and r == c:
            dst[at] = one
        else:
            dst[at] = zero


@device
def load_adjoint(src, first, count, dst, m):
    """``dst[slot] = src[first + slot]^H``; spare slots get the identity."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), slots * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        at = s * strides[0] + r * strides[1] + c * strides[2]
        if s < count:
            dst[at] = src[first + s, c, r].conjugate()
        elif r == c:
            dst[at] = one
        else:
            dst[at] = zero


@device
def fill_identity(dst, m):
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), slots * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[s * strides[0] + r * strides[1] + c * strides[2]] = one if r == c else zero


@device
def store_matrix(src, dst, first, count, m):
    """``dst[first + slot] = src[slot]`` for the real slots."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), count * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]


@device
def store_transposed(src, dst, first, count, m):
    """``dst[first + slot] = src[slot]^T`` (NumPy's 'raw' QR layout)."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), count * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        dst[first + s, c, r] = src[s * strides[0] + r * strides[1] + c * strides[2]]


@device
def store_triangle(src, other, dst, first, count, m, lower, clean):
    """Store one triangle of ``src``; the other from ``other`` or zero (``clean``)."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), count * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        if (r >= c) if lower else (r <= c):
            dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]
        elif clean:
            dst[first + s, r, c] = zero
        else:
            dst[first + s, r, c] = other[first + s, r, c]


@device
def store_solution(src, b, dst, first, count, m, status, status_first, conjugate):
    """Store the solution of each real slot (conjugated when ``conjugate``), or its
    right-hand side where ``status[status_first + slot]`` says it failed."""
    (slots, rows, cols), strides, rows_fastest, one, zero = m
    for idx in range(thread_rank(), count * rows * cols, block_threads()):
        s, r, c = _coords(idx, rows, cols, rows_fastest)
        if status[status_first + s] != 0:
            dst[first + s, r, c] = b[first + s, r, c]
        else:
            dst[first + s, r, c] = src[s * strides[0] + r * strides[1] + c * strides[2]]
            if conjugate:  # in global memory: numba's complex type, not the solver's
                dst[first + s, r, c] = dst[first + s, r, c].conjugate()


@device
def store_vectors(src, dst, first, count, shape, strides):
    """``dst[first + slot, i] = src[slot, i]`` (tau, eigenvalues)."""
    slots, length = shape
    for idx in range(thread_rank(), count * length, block_threads()):
        s, i = idx // length, idx % length
        dst[first + s, i] = src[s * strides[0] + i * strides[1]]


@device
def store_pivots(src, piv, first, count, shape, strides):
    """cuSolverDx's 1-based pivots -> SciPy's 0-based ones."""
    slots, length = shape
    for idx in range(thread_rank(), count * length, block_threads()):
        s, i = idx // length, idx % length
        piv[first + s, i] = src[s * strides[0] + i * strides[1]] - 1


@device
def load_pivots(piv, first, count, dst, shape, strides):
    """SciPy's 0-based pivots -> cuSolverDx's 1-based ones; identity for spare slots."""
    slots, length = shape
    for idx in range(thread_rank(), slots * length, block_threads()):
        s, i = idx // length, idx % length
        dst[s * strides[0] + i * strides[1]] = piv[first + s, i] + 1 if s < count else i + 1


@device
def store_info(src, info, first, count):
    for s in range(thread_rank(), count, block_threads()):
        info[first + s] = src[s]


@device
def zero_diagonal_info(a, info, first, count, n):
    """``info = 1 + index`` of the first exactly zero diagonal entry of ``a``, else 0."""
    for s in range(thread_rank(), count, block_threads()):
        failed = 0
        for i in range(n):
            if a[first + s, i, i] == 0:
                failed = i + 1
                break
        info[first + s] = failed


@device
def peak_of(src, index, peak):
    """``peak`` or, if larger, the largest ``|Re|`` or ``|Im|`` of the finite entries of
    ``src[index]`` (one matrix of a stack in global memory, read by the calling thread)."""
    for i in range(src.shape[1]):
        for j in range(src.shape[2]):
            x = src[index, i, j]
            re, im = abs(x.real), abs(x.imag)
            if re < math.inf and im < math.inf:
                peak = max(peak, re, im)
    return peak
