"""The call pattern: everything a generated kernel is specialised on."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CallPattern", "layout_of"]


def layout_of(array):
    """``'C'``, ``'F'`` or ``'A'`` (strided) for the core of a flattened operand."""
    flags = array.flags
    if flags.c_contiguous:
        return "C"
    # A (batch, rows, cols) stack whose every matrix is column-major.
    if (
        array.ndim >= 3
        and array.strides[-2] == array.itemsize
        and (array.shape[-1] <= 1 or array.strides[-1] == array.itemsize * array.shape[-2])
    ):
        return "F"
    return "A"


@dataclass(frozen=True)
class CallPattern:
    """Frozen, hashable key of one generated kernel.

    Attributes
    ----------
    routine : str
        LAPACK-style routine name (``'potrf'``, ``'getrs'``, ...).
    dims : tuple of (str, int)
        Core dimension sizes, sorted by symbol.
    dtype : numpy.dtype
        Computation dtype.
    options : tuple of (str, object)
        Kernel-shaping options, sorted by name.
    layouts : tuple of str
        Memory layout of each operand's matrices (``'C'``, ``'F'``, ``'A'``).
    target : str
        ``'cpu'`` or a CUDA architecture such as ``'sm_90'``.
    """

    routine: str
    dims: tuple
    dtype: np.dtype
    options: tuple
    layouts: tuple
    target: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # Patterns key every kernel lookup: hash the fields once, not per call.
        object.__setattr__(
            self,
            "_hash",
            hash((self.routine, self.dims, self.dtype, self.options, self.layouts, self.target)),
        )

    def __hash__(self):
        return self._hash

    @classmethod
    def make(cls, routine, dims, dtype, options, layouts, target):
        return cls(
            routine,
            tuple(sorted(dims.items())),
            np.dtype(dtype),
            tuple(sorted(options.items())),
            tuple(layouts),
            target,
        )

    def with_run_time_sizes(self):
        """This pattern with every size 0: the kernels that read their sizes at run time."""
        return CallPattern(
            self.routine,
            tuple((symbol, 0) for symbol, _ in self.dims),
            self.dtype,
            self.options,
            self.layouts,
            self.target,
        )

    def dim(self, symbol):
        return dict(self.dims)[symbol]

    def option(self, name):
        return dict(self.options)[name]

    @property
    def np_dtype(self):
        return self.dtype
