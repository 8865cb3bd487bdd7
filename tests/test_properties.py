"""Property-based tests: random shapes, dtypes, layouts and batch broadcasting.

Sizes are drawn from a small set so the number of compiled kernels stays
bounded on a cold CI cache.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_spd

sizes = st.sampled_from([1, 2, 3, 4])
batches = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
dtypes = st.sampled_from(DTYPES)
layout_names = st.sampled_from(["C", "F", "strided", "negative", "readonly"])


@given(n=sizes, batch=batches, dtype=dtypes, layout=layout_names, seed=st.integers(0, 2**32 - 1))
def test_cholesky_reconstructs_and_matches_numpy(n, batch, dtype, layout, seed):
    a = layouts(random_spd(np.random.default_rng(seed), batch, n, dtype))[layout]
    before = a.copy()
    L = blocksolve.cholesky(a)
    np.testing.assert_array_equal(a, before)
    assert L.shape == a.shape and L.dtype == dtype
    assert_close(L @ np.conj(np.swapaxes(L, -1, -2)), before, dtype, n=n)
    assert_close(L, np.linalg.cholesky(before), dtype, n=n)


@given(
    n=sizes,
    batch_a=batches,
    batch_b=batches,
    k=st.integers(0, 3),
    dtype=dtypes,
    seed=st.integers(0, 2**32 - 1),
)
def test_cho_solve_broadcasts_like_a_gufunc(n, batch_a, batch_b, k, dtype, seed):
    rng = np.random.default_rng(seed)
    try:
        batch = np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        batch = None
    a = random_spd(rng, batch_a, n, dtype)
    b = rng.standard_normal(batch_b + (n, k)).astype(dtype)
    if batch is None:
        with pytest.raises(ValueError, match="cho_solve: batch dimensions do not broadcast"):
            blocksolve.cho_solve(blocksolve.cho_factor(a), b)
        return
    x = blocksolve.cho_solve(blocksolve.cho_factor(a), b)
    assert x.shape == batch + (n, k)
    assert_close(a @ x, np.broadcast_to(b, x.shape), dtype, factor=10, n=n)
