"""Call pattern -> cuSolverDx descriptors (nvmath.device solver objects).

This is the only module of blocksolve that imports :mod:`nvmath.device`, and
it does so only when real descriptors are asked for (``api=None``): that
import needs a CUDA driver.  The CUDA simulator tests pass stand-ins
(``tests/_cuda_simulated.py``) as ``api`` instead; they offer the same
classes and constructor arguments, so both go through the same recipes.

Each routine's recipe (the ``descriptors`` its family registers)
turns the pattern's core sizes, options and operand layouts into
constructor arguments with the helpers here; what every descriptor shares
comes from :func:`build`:

- dtype: ``precision=float32|float64`` and ``data_type='real'|'complex'``;
- layout of each operand: ``'F'`` -> ``'col_major'``, anything else ->
  ``'row_major'`` (the backend makes ``'A'`` operands C-contiguous first);
- ``batches_per_block='suggested'`` below :data:`SUGGEST_BELOW` (cuSolverDx's
  own advice), 1 above; ``block_dim`` is the descriptor's default.

Building descriptors is two steps.  :func:`resolve_traits` asks libmathdx
once for those two choices (seconds per query: the CUDA backend caches the
answer on disk per call pattern); :func:`build` then constructs every
descriptor with both pinned explicitly (milliseconds), so every cuSolverDx
function a kernel calls is generated for the same batches per block and
block shape.

Where two kernels use the same cuSolverDx function, their recipes describe
it identically, so that its generated code is shared through the LTO-IR
cache (``solve`` factors with ``lu_factor``'s very descriptor, for every
number of right-hand sides).  Functions the named solver classes lack
(``heev`` for ``eigh``) come from nvmath's generic ``Solver(function=...)``,
wrapped in :class:`GenericSolver` for the shared-memory layout helpers the
named classes have.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "build",
    "resolve_traits",
    "Traits",
    "real_api",
    "solves_conjugated",
    "arrangement",
    "fill_mode",
    "transpose_mode",
    "SUGGEST_BELOW",
    "GenericSolver",
]

# cuSolverDx recommends several matrices per block below 16 x 16, one above.
SUGGEST_BELOW = 16

_TRANSPOSE = ("non_transposed", "transposed", "conj_transposed")


def real_api():
    """The :mod:`nvmath.device` module (needs a CUDA driver)."""
    import nvmath.device

    return nvmath.device


def arrangement(layout):
    """cuSolverDx arrangement for an operand layout (``'C'``, ``'F'`` or ``'A'``)."""
    return "col_major" if layout == "F" else "row_major"


def fill_mode(pattern):
    """cuSolverDx's fill mode for the pattern's ``lower`` option."""
    return "lower" if pattern.option("lower") else "upper"


def transpose_mode(trans, is_complex):
    """cuSolverDx's transpose mode for LAPACK's ``trans`` (0: A, 1: A^T, 2: A^H).

    For real matrices A^H = A^T, which cuSolverDx names 'transposed'.  For complex
    ones it has only 'conj_transposed': A^T x = b is solved as A^H conj(x) = conj(b)
    (see :func:`solves_conjugated`).
    """
    if is_complex:
        return _TRANSPOSE[2 if trans else 0]
    return _TRANSPOSE[1 if trans else 0]


def solves_conjugated(pattern):
    """Whether the kernel of ``pattern`` (getrs, trsm) solves A^T x = b of complex A as
    A^H y = conj(b), x = conj(y): conjugating the right-hand side as it loads it and the
    solution as it stores it."""
    return pattern.np_dtype.kind == "c" and pattern.option("trans") == 1


def _sm(target):
    """``'sm_90'`` -> 90, the integer form nvmath accepts for ``sm``."""
    return int(target.removeprefix("sm_").rstrip("af"))


@dataclass(frozen=True)
class Traits:
    """The launch shape every descriptor of a kernel is pinned to.

    Attributes
    ----------
    batches_per_block : int
    block_dim : tuple of int
    """

    batches_per_block: int
    block_dim: tuple

    def as_dict(self):
        return {"batches_per_block": self.batches_per_block, "block_dim": list(self.block_dim)}

    @classmethod
    def from_dict(cls, fields):
        return cls(int(fields["batches_per_block"]), tuple(int(x) for x in fields["block_dim"]))


def _calculate_strides(shape, ld, arrangement):
    """Element strides of a ``(batches, rows, cols)`` buffer, as nvmath documents them."""
    rows, cols = shape
    return (ld * cols, 1, ld) if arrangement == "col_major" else (ld * rows, ld, 1)


class GenericSolver:
    """Layout helpers for nvmath's generic ``Solver(function=...)``.

    The named classes (``CholeskySolver``, ...) offer ``a_shape``,
    ``a_strides()``, ``a_size()`` ...; the generic ``Solver`` offers only
    the leading dimensions, arrangements and batches per block.  This
    wrapper derives the rest with the formulas nvmath's ``Solver`` docstring
    gives (column-major ``(batches, rows, cols)`` strides ``(ld * cols, 1,
    ld)``, row-major ``(ld * rows, ld, 1)``), so kernels keep taking every
    layout from a descriptor.  The kernel calls ``solver.execute(...)`` on
    :attr:`solver` itself, the object numba types.

    Parameters
    ----------
    solver : nvmath.device.Solver or its simulator stand-in
    """

    def __init__(self, solver):
        self.solver = solver

    @property
    def _execute(self):
        """The nvmath ``Solver`` behind ``execute`` (what code generation sees)."""
        return self.solver

    def __getattr__(self, name):  # function, lda, block_dim, value_type, workspace_size, ...
        if name == "solver":
            raise AttributeError(name)
        return getattr(self.solver, name)

    @property
    def a_shape(self):
        return (self.batches_per_block, self.m, self.n)

    def a_strides(self):
        return _calculate_strides(self.a_shape[1:], self.lda, self.a_arrangement)

    def a_size(self):
        return self.a_strides()[0] * self.batches_per_block

    @property
    def info_shape(self):
        return (self.batches_per_block,)

    @property
    def lambda_shape(self):
        """``heev``'s eigenvalues: ``m`` per matrix, packed."""
        return (self.batches_per_block, self.m)

    @property
    def lambda_strides(self):
        return (self.m, 1)

    @property
    def lambda_size(self):
        return self.batches_per_block * self.m


def _common(pattern, batches_per_block, block_dim=None):
    dtype = pattern.np_dtype
    common = dict(
        precision=np.finfo(dtype).dtype.type,
        data_type="complex" if dtype.kind == "c" else "real",
        execution="Block",
        sm=_sm(pattern.target),
        batches_per_block=batches_per_block,
    )
    if block_dim is not None:
        common["block_dim"] = tuple(block_dim)
    return common


def _largest(pattern):
    """Largest dimension of A: cuSolverDx's criterion for several matrices per block."""
    dims = dict(pattern.dims)
    return max(dims.get("m", 0), dims.get("n", 0))


def resolve_traits(pattern, recipe, api=None, batches_per_block=None, block_dim=None):
    """cuSolverDx's batches per block and block shape for ``pattern``.

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
    recipe : callable
        ``recipe(api, pattern, common) -> {role: descriptor}``: the routine's
        descriptors (its registration's ``descriptors``).
    api : module, optional
        :mod:`nvmath.device` (default) or the simulator's stand-ins.
    batches_per_block, block_dim : optional
        Overrides of the ``'suggested'``/1 rule and of the default block
        shape (tests, tuning); with both given nothing is asked.

    Returns
    -------
    Traits

    Raises
    ------
    ValueError, RuntimeError
        nvmath/libmathdx reject the configuration (e.g. too large).
    """
    if batches_per_block is None:
        batches_per_block = "suggested" if _largest(pattern) < SUGGEST_BELOW else 1
    if isinstance(batches_per_block, int) and block_dim is not None:
        return Traits(batches_per_block, tuple(block_dim))
    api = real_api() if api is None else api
    descriptors = recipe(api, pattern, _common(pattern, batches_per_block, block_dim))
    advice = next(iter(descriptors.values()))
    return Traits(int(advice.batches_per_block), tuple(int(x) for x in advice.block_dim))


def build(pattern, recipe, traits, api=None):
    """Descriptors for ``pattern``, by role (``'solver'``, ``'factor'``, ``'multiply'``...).

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
        Its ``target`` (``'sm_90'``) selects the architecture.
    recipe : callable
        The routine's descriptors (see :func:`resolve_traits`).
    traits : Traits
        Batches per block and block shape, pinned in every descriptor.
    api : module, optional
        Provides the solver classes: :mod:`nvmath.device` (default) or
        the simulator's stand-ins.

    Returns
    -------
    dict of str to descriptor

    Raises
    ------
    ValueError, RuntimeError
        nvmath/libmathdx reject the configuration.
    """
    api = real_api() if api is None else api
    return recipe(api, pattern, _common(pattern, traits.batches_per_block, traits.block_dim))
