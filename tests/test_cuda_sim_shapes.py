"""The kernel templates under the simulator at the launch shapes cuSolverDx really uses.

For small matrices libmathdx puts 16-64 of them in one block of 32-64
threads; ``tests/data/cusolverdx_launch_shapes.json`` records its choices per
libmathdx version and call pattern (written by ``tools/offline_codegen.py
shapes``, checked against the installed library by the ``codegen`` tests).
Each case here runs the template at every shape a recorded version chose, on
``2 * bpb + 1`` matrices -- the last block holds one
real matrix and ``bpb - 1`` identity pads -- and compares everything it
returns (outputs and ``info``, with one failing matrix where the op can fail)
with the CPU backend on the same call pattern, which the CPU tests compare
with NumPy/SciPy.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from _helpers import (
    canonical_svd,
    random_general,
    random_matrix,
    random_spd,
    tol,
    tool_module,
)

_RECORDED = json.loads(
    (Path(__file__).resolve().parent / "data" / "cusolverdx_launch_shapes.json").read_text()
)
# (case, batches per block, block shape): every distinct shape some libmathdx chose.
SHAPES = sorted(
    {
        (name, shape["batches_per_block"], tuple(shape["block_dim"]))
        for shapes in _RECORDED.values()
        for name, shape in shapes.items()
    }
)

pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="needs NUMBA_ENABLE_CUDASIM=1 in the environment of pytest (numba's CUDA simulator)",
    ),
]


def _case(name):
    return tool_module("offline_codegen").CASES[name]


def _small(name):
    dims = _case(name).dims
    return max(dims.get("m", 0), dims["n"]) <= 8


def _layout(a, layout):
    if layout == "C":
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def _operands(rng, pattern, batch):
    """Well-posed inputs for the pattern's routine; matrix 1 fails where the op can fail."""
    dims, dtype, routine = dict(pattern.dims), pattern.np_dtype, pattern.routine
    n, k, m = dims.get("n"), dims.get("k"), dims.get("m")
    rhs = random_matrix(rng, (batch, n if m is None else m, k), dtype) if k else None
    if routine == "potrf":
        a = random_spd(rng, (batch,), n, dtype)
        a[1, n - 1, n - 1] = -1  # not positive definite at the last minor
        return [a]
    if routine == "potrs":
        c = np.linalg.cholesky(random_spd(rng, (batch,), n, dtype))
        if not pattern.option("lower"):
            c = np.conj(np.swapaxes(c, -1, -2))
        c[1, 0, 0] = 0
        return [c, rhs]
    if routine == "getrf":  # M x N
        a = random_matrix(rng, (batch, n if m is None else m, n), dtype)
        a[1, :, 1] = 0  # rank deficient: a zero pivot
        return [a]
    if routine == "gesv":
        a = random_general(rng, (batch,), n, dtype)
        a[1, :, 1] = 0  # exactly singular
        return [a, rhs]
    if routine == "getrs":
        import scipy.linalg

        factors = [scipy.linalg.lu_factor(x) for x in random_general(rng, (batch,), n, dtype)]
        lu = np.stack([f[0] for f in factors])
        lu[1, n - 1, n - 1] = 0
        return [lu, np.stack([f[1] for f in factors]).astype(np.int32), rhs]
    if routine == "trsm":
        a = random_general(rng, (batch,), n, dtype)
        a[1, 1, 1] = 0  # read only with a non-unit diagonal
        return [a, rhs]
    if routine == "geqrf":
        return [random_matrix(rng, (batch, m, n), dtype)]
    if routine == "gels":
        return [random_matrix(rng, (batch, m, n), dtype), rhs]
    if routine in ("getri", "getrf_det"):
        a = random_general(rng, (batch,), n, dtype)
        a[1, :, 1] = 0  # exactly singular: inv fails, det is 0
        return [a]
    if routine == "posv":
        a = random_spd(rng, (batch,), n, dtype)
        a[1, n - 1, n - 1] = -1  # not positive definite at the last minor
        return [a, rhs]
    if routine == "gesvd":
        a = random_matrix(rng, (batch, m, n), dtype)
        a[1, 0, 0] = np.nan  # an inf or NaN is svd's failure
        return [a]
    if routine == "heev":  # Hermitian; heev has no failure to provoke
        x = random_matrix(rng, (batch, n, n), dtype)
        return [(x + np.conj(np.swapaxes(x, -1, -2))).astype(dtype)]
    raise AssertionError(f"no inputs for {routine}")


def _comparable(pattern, outputs):
    """Outputs with what is unique only up to a choice made canonical: each eigenvector
    (column) scaled by the phase that makes its largest entry real and positive; each pair
    of singular vectors likewise by ``u_j``'s, the columns of ``U`` (rows of ``Vh``)
    beyond the singular values' as the projector onto their span."""
    if pattern.routine not in ("heev", "gesvd") or not pattern.option("vectors"):
        return outputs
    if pattern.routine == "gesvd":
        u, s, vh = outputs
        return [s, *canonical_svd(u, s, vh)]
    w, v = outputs
    largest = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
    return [w, v * (np.conj(largest) / np.abs(largest))]


@pytest.mark.parametrize(
    ("name", "bpb", "block_dim"),
    [
        pytest.param(*shape, id=f"{shape[0]}-{shape[1]}x{shape[2][0]}")
        for shape in SHAPES
        if _small(shape[0])
    ],
)
def test_template_at_the_real_launch_shape_matches_the_cpu_backend(rng, name, bpb, block_dim):
    import _cuda_simulated as _simulated

    from blocksolve._backends import backend
    from blocksolve.cuda import _plan

    pattern = _case(name).pattern()
    assert bpb > 1, "small matrices share a block"
    batch = 2 * bpb + 1  # the last block: one real matrix, bpb - 1 pads
    plan = _plan.build(pattern, _simulated, batches_per_block=bpb, block_dim=block_dim)
    assert plan.fallback is None and plan.kernel.block_dim == block_dim
    operands = [
        _layout(x, layout) for x, layout in zip(_operands(rng, pattern, batch), pattern.layouts)
    ]
    runtime = {"rcond": None} if pattern.routine == "gels" else {}
    before = [x.copy() for x in operands]
    got = plan.run(tuple(operands), np, runtime)
    for x, x0 in zip(operands, before):
        np.testing.assert_array_equal(x, x0)  # inputs untouched

    cpu_pattern = dataclasses.replace(pattern, target="cpu", layouts=("C",) * len(operands))
    want = backend("cpu").execute(
        cpu_pattern, [np.ascontiguousarray(x) for x in operands], **runtime
    )
    info, want_info = got[-1], want[-1]
    np.testing.assert_array_equal(info, want_info)
    ok = info == 0
    size = max(d for _, d in pattern.dims)
    for out, ref in zip(_comparable(pattern, got[:-1]), _comparable(pattern, want[:-1])):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if out.dtype.kind in "iu":
            np.testing.assert_array_equal(out[ok], ref[ok])
        else:
            finite = ref[ok][np.isfinite(ref[ok])]  # slogdet's -inf must not widen the tolerance
            scale = max(1.0, float(np.abs(finite).max(initial=0)))
            np.testing.assert_allclose(
                out[ok],
                ref[ok],
                rtol=tol(out.dtype, 10, size),
                atol=tol(out.dtype, 10, size) * scale,
            )

    calls = plan.descriptors[next(iter(plan.descriptors))].calls
    assert {block for _, block, _ in calls} == {0, 1, 2}, "one device call per block"
