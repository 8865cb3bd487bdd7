"""Shared test helpers: dtype-scaled checks, layouts, and the random well-conditioned inputs
of :mod:`blocksolve.cli.workloads` (the ones the benchmarks time)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import numpy as np

from blocksolve._op import call_example, examples
from blocksolve.cli.workloads import (  # noqa: F401 - the tests import them from here
    identity_pivots,
    random_general,
    random_hermitian,
    random_matrix,
    random_spd,
    random_triangular,
    well_conditioned,
    with_good_triangles,
)

TOOLS = Path(__file__).resolve().parents[1] / "tools"

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


@functools.cache
def gpu_available():
    try:
        import cupy
        import numba
        from numba import cuda

        return bool(
            cupy.cuda.is_available() and cuda.is_available() and not numba.config.ENABLE_CUDASIM
        )  # the simulator is no GPU
    except Exception:
        return False


def to_numpy(x):
    """Host numpy copy of a numpy/cupy/DLPack array (or a scalar)."""
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)


def tol(dtype, factor=1.0, n=1):
    """Relative tolerance for results of an O(n^3) factorisation in ``dtype``."""
    eps = np.finfo(np.dtype(dtype)).eps
    return factor * eps * max(n, 1) * 50


def assert_close(actual, desired, dtype, factor=1.0, n=1):
    """``allclose`` with a dtype- and size-scaled tolerance, scaled by ``desired``'s norm."""
    actual, desired = to_numpy(actual), np.asarray(desired)
    assert actual.shape == desired.shape, (actual.shape, desired.shape)
    finite = np.abs(desired[np.isfinite(desired)])  # an inf must not widen the tolerance
    scale = max(float(np.max(finite, initial=0.0)), 1.0)
    np.testing.assert_allclose(
        actual, desired, rtol=tol(dtype, factor, n), atol=tol(dtype, factor, n) * scale
    )


def canonical_svd(u, s, vh):
    """The singular vectors of each singular value with the phase that makes the largest
    entry of ``u_j`` real and positive (``u_j s_j v_j^H`` unchanged), and the columns of
    ``U`` (rows of ``Vh``) beyond ``p`` as the projector onto their span."""
    p = s.shape[-1]
    left, right = u[..., :p], vh[..., :p, :]
    largest = np.take_along_axis(left, np.abs(left).argmax(axis=-2)[..., None, :], axis=-2)
    with np.errstate(invalid="ignore"):
        phase = np.conj(largest) / np.abs(largest)
    extra_u, extra_vh = u[..., p:], vh[..., p:, :]
    return [
        left * phase,
        right * np.swapaxes(np.conj(phase), -1, -2),
        extra_u @ np.conj(np.swapaxes(extra_u, -1, -2)),
        np.conj(np.swapaxes(extra_vh, -1, -2)) @ extra_vh,
    ]


def layouts(a):
    """The same matrices as C-order, F-order, strided and negative-stride views."""
    a = np.asarray(a)
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    readonly = a.copy()
    readonly.flags.writeable = False
    return {
        "C": np.ascontiguousarray(a),
        "F": np.asfortranarray(a),
        "strided": big[..., ::2],
        "negative": np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1],
        "readonly": readonly,
    }


# Rectangular shapes for QR-based ops, per dtype: few enough to keep the
# number of compiled kernels small; (40, 33) and (33, 40) take the
# runtime-size kernels.
RECT_GRID = (
    [(dtype, m, n) for dtype in DTYPES for m, n in [(6, 3), (40, 33), (33, 40)]]
    + [(dtype, 3, 5) for dtype in (np.float64, np.complex128)]
    + [(dtype, m, n) for dtype in (np.float64, np.complex64) for m, n in [(1, 1), (4, 4)]]
)


@functools.cache
def tool_module(name):
    """``tools/<name>.py`` imported as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


# The op each public function runs when called with its defaults (qr's reduced mode, svd's
# full matrices, solve's general structure), by name: the declarations' examples.
OPS = {op.name: op for op in examples() if op.example.name is None}
# How to call each public function with its operands in signature order, as its example
# does (the cross-op contract tests of test_api.py and test_fast_path.py).
CALLS = {
    name: (lambda *args, op=op, **kw: call_example(op, args, **kw)) for name, op in OPS.items()
}
SIZES = {"n": 3, "m": 4, "k": 2}
OP_NAMES = sorted(OPS)


def operands(op, batch=(2,), dtype=np.float64, rng=None, sizes=None):
    """Valid operands for ``op``: SPD matrices (they suit every op) and identity pivots.
    ``sizes``: core dimension sizes by symbol (default :data:`SIZES`)."""
    rng = rng or np.random.default_rng(0)
    sizes = sizes or SIZES
    sizes = dict(sizes, m=sizes["n"] + 1) if "m" in op.signature else sizes
    args = []
    for spec in op.inputs:
        shape = tuple(batch) + tuple(sizes[s] for s in spec.core)
        if spec.kind == "index":
            args.append(identity_pivots(batch, shape[-1]))
        elif len(spec.core) == 2 and spec.core[0] == spec.core[1]:
            args.append(random_spd(rng, batch, shape[-1], dtype))
        else:
            args.append((rng.standard_normal(shape) + 3 * np.eye(*shape[-2:])).astype(dtype))
    return args


def call(op, args, **kw):
    return call_example(op, args, **kw)


def first_array(result):
    while isinstance(result, tuple):
        result = result[0]
    return result
