"""Call pattern -> cuSolverDx descriptors (nvmath.device solver objects).

This is the only module of blocksolve that imports :mod:`nvmath.device`, and
it does so only when real descriptors are asked for (``api=None``): that
import needs a CUDA driver.  The CUDA simulator tests pass
:mod:`blocksolve.cuda._simulated` as ``api`` instead; it offers the same
classes and constructor arguments, so both go through the same recipes
below.

One recipe per routine turns the pattern's core sizes, dtype, options and
operand layouts into constructor arguments:

- dtype: ``precision=float32|float64`` and ``data_type='real'|'complex'``;
- layout of each operand: ``'F'`` -> ``'col_major'``, anything else ->
  ``'row_major'`` (the backend makes ``'A'`` operands C-contiguous first);
- ``batches_per_block='suggested'`` below :data:`SUGGEST_BELOW` (cuSolverDx's
  own advice), 1 above; ``block_dim`` is the descriptor's default.  Both are
  then pinned to explicit values, so every cuSolverDx function a kernel calls
  is generated for the same batches per block and block shape.
"""

from __future__ import annotations

import numpy as np

__all__ = ["build", "real_api", "install_code_cache", "arrangement", "SUGGEST_BELOW"]

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
    # For real matrices A^H = A^T; cuSolverDx names that 'transposed'.
    return _TRANSPOSE[1 if trans == 2 and not is_complex else trans]


def _sm(target):
    """``'sm_90'`` -> 90, the integer form nvmath accepts for ``sm``."""
    return int(target.removeprefix("sm_").rstrip("af"))


def _common(pattern, largest, batches_per_block, block_dim):
    dtype = pattern.np_dtype
    if batches_per_block is None:
        batches_per_block = "suggested" if largest < SUGGEST_BELOW else 1
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
    return {"solver": api.CholeskySolver(size=(n, n), fill_mode=fill,
                                         arrangement=(arr_a, arr_a), **common)}


def _potrs(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    fill = "lower" if pattern.option("lower") else "upper"
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {"solver": api.CholeskySolver(size=(n, n, k), fill_mode=fill, arrangement=arr,
                                         **common)}


def _getrf(api, pattern, common):
    n = pattern.dim("n")
    arr_a = arrangement(pattern.layouts[0])
    return {"solver": api.LUPivotSolver(size=(n, n), arrangement=(arr_a, arr_a), **common)}


def _getrs(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[2]))  # lu, piv, b
    mode = _transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c")
    return {"solver": api.LUPivotSolver(size=(n, n, k), transpose_mode=mode, arrangement=arr,
                                        **common)}


def _gesv(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {"solver": api.LUPivotSolver(size=(n, n, k), arrangement=arr, **common)}


def _trsm(api, pattern, common):
    n, k = pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {"solver": api.TriangularSolver(
        size=(n, k), side="left",
        fill_mode="lower" if pattern.option("lower") else "upper",
        diag="unit" if pattern.option("unit_diagonal") else "non_unit",
        transpose_mode=_transpose_mode(pattern.option("trans"), pattern.np_dtype.kind == "c"),
        arrangement=arr, **common)}


def _geqrf(api, pattern, common):
    """QR factors; for modes 'reduced'/'complete' also ``Q = Q I`` by unmqr.

    Q is formed by applying the reflectors to an identity block (QRMultiply,
    side 'left') in the same kernel, so one user API covers every mode.  The
    multiplier reads the factorised A in place, hence the same ``lda``,
    ``batches_per_block`` and ``block_dim`` as the factorizer.
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
            size=(m, q_cols, min(m, n)), side="left", transpose_mode="non_transposed",
            arrangement=(arr_a, "row_major"), leading_dimensions=(factorize.lda, ldc),
            **{**common, "batches_per_block": factorize.batches_per_block,
               "block_dim": factorize.block_dim})
    return descriptors


def _gels(api, pattern, common):
    m, n, k = pattern.dim("m"), pattern.dim("n"), pattern.dim("k")
    arr = (arrangement(pattern.layouts[0]), arrangement(pattern.layouts[1]))
    return {"solver": api.LeastSquaresSolver(size=(m, n, k), arrangement=arr, **common)}


_RECIPES = {
    "potrf": _potrf, "potrs": _potrs, "getrf": _getrf, "getrs": _getrs, "gesv": _gesv,
    "trsm": _trsm, "geqrf": _geqrf, "gels": _gels,
}


def build(pattern, api=None, batches_per_block=None, block_dim=None):
    """Descriptors for ``pattern``, by role (``'solver'``, or ``'factorize'``/``'multiply'``).

    Parameters
    ----------
    pattern : blocksolve._pattern.CallPattern
        Its ``target`` (``'sm_90'``) selects the architecture.
    api : module, optional
        Provides the solver classes: :mod:`nvmath.device` (default) or
        :mod:`blocksolve.cuda._simulated`.
    batches_per_block : int, optional
        Overrides the ``'suggested'``/1 rule (tests use it).
    block_dim : tuple of int, optional
        Overrides the descriptor's default block dimensions.

    Returns
    -------
    dict of str to descriptor

    Raises
    ------
    KeyError
        ``pattern.routine`` has no recipe.
    ValueError, RuntimeError
        nvmath/libmathdx reject the configuration (e.g. too large).
    """
    api = real_api() if api is None else api
    dims = dict(pattern.dims)
    largest = max(dims.get("m", 0), dims.get("n", 0))  # of A: cuSolverDx's criterion
    common = _common(pattern, largest, batches_per_block, block_dim)
    recipe = _RECIPES[pattern.routine]
    descriptors = recipe(api, pattern, common)
    if isinstance(batches_per_block, int) and block_dim is not None:
        return descriptors
    # A solver object holds one cuSolverDx function per device method
    # (potrf + potrs, getrf + getrs), each resolving 'suggested' and the
    # default block_dim on its own; the kernel lays out one shared memory and
    # launches one block shape for all of them, so pin both explicitly.
    first = next(iter(descriptors.values()))
    pinned = {**common, "batches_per_block": first.batches_per_block,
              "block_dim": tuple(first.block_dim)}
    return recipe(api, pattern, pinned)


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
