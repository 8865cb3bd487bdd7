"""Interleaved blocks: the layout the LU-family kernels compute in.

A kernel copies up to ``block_width(n, count)`` consecutive matrices of its
batch slice into one ``(rows, cols, width)`` array, so that ``block[i, j]`` holds
entry ``(i, j)`` of every matrix of the block side by side, computes there,
and copies the results back.  Every innermost loop then runs across the
matrices of the block: its iterations are independent, so LLVM vectorises
them and the division and pivot-search chains of different matrices
overlap, where a loop over one small matrix at a time waits on each chain.

The width a kernel passes to the helpers must stay a runtime value: with a
constant trip count LLVM fully unrolls the loops across matrices, and then
cannot vectorise them because it cannot prove that two rows of a block do
not overlap (a runtime trip count gets a vector loop behind a cheap overlap
check instead).
"""

from __future__ import annotations

import numba

__all__ = ["block_width", "load", "store", "identity"]

MAX_WIDTH = 32
# Most entries of one (n, n, width) block (2 MiB of float64), so that blocks of
# large matrices stay in cache.  Below that, wider is faster (measured for
# n = 4..32): each loop across matrices pays a fixed set-up.
_BLOCK_ENTRIES = 1 << 18


@numba.njit(inline="always")
def block_width(n, count, most=MAX_WIDTH, entries=_BLOCK_ENTRIES):
    """Matrices per block for ``n x n`` matrices, in a kernel given ``count`` of them:
    at most ``most``, and no more than a block of ``entries`` entries holds.

    Never wider than ``count``: a block with room for 32 matrices holding one
    spreads that matrix's entries a cache line apart (one 32x32 solve took
    13x the time per matrix of a full block).
    """
    return max(1, min(most, count, entries // max(n * n, 1)))


@numba.njit(inline="always")
def load(src, start, width, block):
    """``block[i, j, m] = src[start + m, i, j]`` for the first ``width`` matrices.

    ``src`` and ``block`` are C-contiguous.  Each matrix is copied as one run
    of ``rows * cols`` entries: a loop per row would cost more than it moves
    for a right-hand side with one column.
    """
    entries = block.shape[0] * block.shape[1]
    flat_src = src.reshape((src.shape[0], entries))
    flat_block = block.reshape((entries, block.shape[2]))
    for m in range(width):
        for e in range(entries):
            flat_block[e, m] = flat_src[start + m, e]


@numba.njit(inline="always")
def store(block, dst, start, width):
    """``dst[start + m, i, j] = block[i, j, m]`` for the first ``width`` matrices.

    See :func:`load`.
    """
    entries = block.shape[0] * block.shape[1]
    flat_dst = dst.reshape((dst.shape[0], entries))
    flat_block = block.reshape((entries, block.shape[2]))
    for m in range(width):
        for e in range(entries):
            flat_dst[start + m, e] = flat_block[e, m]


@numba.njit(inline="always")
def identity(block, width):
    """The first ``width`` matrices of the square block ``block`` become identities."""
    n = block.shape[0]
    for i in range(n):
        for j in range(n):
            for m in range(width):
                block[i, j, m] = 1 if i == j else 0
