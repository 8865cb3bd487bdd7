"""Call pattern -> cuSolverDx descriptors (nvmath.device solver objects).

This is the only module of blocksolve that imports :mod:`nvmath.device`, and
it does so only when real descriptors are asked for (``api=None``): that
import needs a CUDA driver.  The CUDA simulator tests pass
stand-ins (``tests/_cuda_simulated.py``) as ``api`` instead; they offer the same
classes and constructor arguments, so both go through the same recipes
below.

One recipe per routine turns the pattern's core sizes, dtype, options and
operand layouts into constructor arguments:

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
block shape.  The first descriptor a recipe returns is the one whose advice
is taken.

Where two kernels use the same cuSolverDx function, the recipes describe it
identically so that its generated code is shared through the LTO-IR cache:
``solve`` factors with the very LU descriptor ``lu_factor`` uses (size
``(n, n)``, no right-hand sides) and solves with a second one of size
``(n, n, k)``, so the factorisation is generated once for every ``k``;
``inv`` is that pair with ``k = n``, ``det``/``slogdet`` use ``lu_factor``'s
descriptor as it is, and ``solve(assume_a='pos')`` factors with
``cho_factor``'s Cholesky descriptor and solves with ``cho_solve``'s.

Functions the named solver classes lack (``heev`` for ``eigh``) come from
nvmath's generic ``Solver(function=...)``, wrapped in :class:`GenericSolver`
for the shared-memory layout helpers the named classes have.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "build",
    "resolve_traits",
    "Traits",
    "real_api",
    "install_code_cache",
    "solves_conjugated",
    "arrangement",
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


def _transpose_mode(trans, is_complex):
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
    def real_type(self):
        """numba type of the real buffers (``heev``'s eigenvalues), as kernels and the
        simulator both take it for ``cuda.shared.array``."""
        from numba.np.numpy_support import from_dtype

        return from_dtype(np.dtype(self.solver.precision))

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


def _potrf(api, pattern, common):
    n = pattern.dim("n")
    fill = "lower" if pattern.option("lower") else "upper"
    arr_a = arrangement(pattern.layouts[0])
    return {
        "solver": api.CholeskySolver(
            size=(n, n), fill_mode=fill, arrangement=(arr_a, arr_a), **common
        )
    }


def _potrs(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    fill = "lower" if pattern.option("lower") else "upper"
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {"solver": api.CholeskySolver(size=(n, n, k), fill_mode=fill, arrangement=arr, **common)}


def _getrf(api, pattern, common):
    n = pattern.dim("n")
    m = dict(pattern.dims).get("m", n)  # cuSolverDx getrf takes M x N; getrf_det is square
    arr_a = arrangement(pattern.layouts[0])
    return {"solver": api.LUPivotSolver(size=(m, n), arrangement=(arr_a, arr_a), **common)}


def _getrs(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[2]))  # lu, piv, b
    mode = _transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c")
    return {
        "solver": api.LUPivotSolver(size=(n, n, k), transpose_mode=mode, arrangement=arr, **common)
    }


def _lu_factor_and_solve(api, n, k, arr_a, arr_b, common):
    """getrf exactly as :func:`_getrf` describes it for ``lu_factor``, then getrs for ``k``."""
    return {
        "factor": api.LUPivotSolver(size=(n, n), arrangement=(arr_a, arr_a), **common),
        "solver": api.LUPivotSolver(size=(n, n, k), arrangement=(arr_a, arr_b), **common),
    }


def _gesv(api, pattern, common):
    return _lu_factor_and_solve(
        api,
        pattern.dim("n"),
        pattern.dim("k"),
        arrangement(pattern.layouts[0]),
        arrangement(pattern.layouts[1]),
        common,
    )


def _getri(api, pattern, common):
    """``inv``: solve against an identity built in shared memory, row-major like the output."""
    n = pattern.dim("n")
    return _lu_factor_and_solve(api, n, n, arrangement(pattern.layouts[0]), "row_major", common)


def _posv(api, pattern, common):
    """``cho_factor``'s potrf (as :func:`_potrf`), then ``cho_solve``'s potrs (as
    :func:`_potrs`)."""
    n, k = pattern.dim("n"), pattern.dim("k")
    fill = "lower" if pattern.option("lower") else "upper"
    arr_a, arr_b = arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1])
    return {
        "factor": api.CholeskySolver(
            size=(n, n), fill_mode=fill, arrangement=(arr_a, arr_a), **common
        ),
        "solver": api.CholeskySolver(
            size=(n, n, k), fill_mode=fill, arrangement=(arr_a, arr_b), **common
        ),
    }


def _heev(api, pattern, common):
    """cuSolverDx ``heev`` (QR algorithm), eigenvectors overwriting A when ``vectors``."""
    n = pattern.dim("n")
    return {
        "solver": GenericSolver(
            api.Solver(
                function="heev",
                size=(n, n),
                fill_mode="lower" if pattern.option("lower") else "upper",
                job="overwrite_vectors" if pattern.option("vectors") else "no_vectors",
                arrangement=(arrangement(pattern.layouts[0]),),
                **common,
            )
        )
    }


def _trsm(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {
        "solver": api.TriangularSolver(
            size=(n, k),
            side="left",
            fill_mode="lower" if pattern.option("lower") else "upper",
            diag="unit" if pattern.option("unit_diagonal") else "non_unit",
            transpose_mode=_transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c"),
            arrangement=arr,
            **common,
        )
    }


def _geqrf(api, pattern, common):
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


def _gels(api, pattern, common):
    """QR factors of ``A`` (M >= N) or ``A^H`` (M < N), and a multiplier applying ``Q``.

    M >= N: ``Q^H`` applied to ``b`` (in ``b``'s arrangement).  M < N: ``Q``
    applied to an N x M identity block (row-major), which gives the first M
    columns of ``Q``.  ``A^H`` is read element by element, so its shared copy
    takes the arrangement in which consecutive threads read consecutive
    addresses of ``A``.  As in :func:`_geqrf`, the multiplier reads the
    factored matrix in place: same ``lda``, batches per block and block shape.
    """
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    wide = m < n
    arr_a = arrangement(pattern.layouts[0])
    if wide:
        arr_a = "row_major" if arr_a == "col_major" else "col_major"
    factorize = api.QRFactorize(size=(max(m, n), min(m, n)), arrangement=arr_a, **common)
    pinned = {
        **common,
        "batches_per_block": factorize.batches_per_block,
        "block_dim": factorize.block_dim,
    }
    if wide:
        multiply = api.QRMultiply(
            size=(n, m, m),
            side="left",
            transpose_mode="non_transposed",
            arrangement=(arr_a, "row_major"),
            leading_dimensions=(factorize.lda, m),
            **pinned,
        )
    else:
        arr_b = arrangement(pattern.layouts[1])
        multiply = api.QRMultiply(
            size=(m, k, n),
            side="left",
            transpose_mode=_transpose_mode(2, pattern.np_dtype.kind == "c"),
            arrangement=(arr_a, arr_b),
            leading_dimensions=(factorize.lda, m if arr_b == "col_major" else k),
            **pinned,
        )
    return {"factorize": factorize, "multiply": multiply}


_RECIPES = {
    "potrf": _potrf,
    "potrs": _potrs,
    "getrf": _getrf,
    "getrs": _getrs,
    "gesv": _gesv,
    "trsm": _trsm,
    "geqrf": _geqrf,
    "gels": _gels,
    "getri": _getri,
    "getrf_det": _getrf,
    "posv": _posv,
    "heev": _heev,
}


def _largest(pattern):
    """Largest dimension of A: cuSolverDx's criterion for several matrices per block."""
    dims = dict(pattern.dims)
    return max(dims.get("m", 0), dims.get("n", 0))


def resolve_traits(pattern, api=None, batches_per_block=None, block_dim=None):
    """cuSolverDx's batches per block and block shape for ``pattern``.

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
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
    descriptors = _RECIPES[pattern.routine](
        api, pattern, _common(pattern, batches_per_block, block_dim)
    )
    advice = next(iter(descriptors.values()))
    return Traits(int(advice.batches_per_block), tuple(int(x) for x in advice.block_dim))


def build(pattern, traits, api=None):
    """Descriptors for ``pattern``, by role (``'solver'``, ``'factor'``, ``'multiply'``...).

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
        Its ``target`` (``'sm_90'``) selects the architecture.
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
    KeyError
        ``pattern.routine`` has no recipe.
    ValueError, RuntimeError
        nvmath/libmathdx reject the configuration.
    """
    api = real_api() if api is None else api
    return _RECIPES[pattern.routine](
        api, pattern, _common(pattern, traits.batches_per_block, traits.block_dim)
    )


def install_code_cache(cache):
    """Route nvmath's cuSolverDx code generation through ``cache``.

    nvmath's numba glue calls ``compile_solver_execute(solver, code_type,
    execution_api)`` (libmathdx + NVRTC, about 15 s) each time a kernel that
    uses a descriptor is typed; ``cache.wrap`` returns a drop-in replacement
    that stores the resulting LTO-IR on disk.  Idempotent.
    """
    import sys

    from nvmath.device.common_cuda import Code, ISAVersion  # loads nvmath's numba glue

    def make_code(code_type, isa_version, data):
        return Code(code_type, ISAVersion(*isa_version), data)

    # The numba-cuda glue, and the numba-cuda-mlir one when nvmath loaded it.
    for name in ("nvmath.device.cusolverdx_numba", "nvmath.device.cusolverdx_numba_cuda_mlir"):
        glue = sys.modules.get(name)
        current = getattr(glue, "compile_solver_execute", None)
        if current is None or getattr(current, "__wrapped_by_blocksolve__", False):
            continue
        wrapped = cache.wrap(current, make_code)
        wrapped.__wrapped_by_blocksolve__ = True
        glue.compile_solver_execute = wrapped
