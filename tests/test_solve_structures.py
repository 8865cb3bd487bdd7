"""solve(a, b, assume_a=...) against scipy.linalg.solve and blocksolve's own building blocks."""

import itertools

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import (
    DTYPES,
    assert_close,
    layouts,
    random_general,
    random_matrix,
    random_spd,
    to_numpy,
)

# (dtype, n): every dtype at n = 4 (the size test_bench compiles too), and 1 x 1.
GRID = [*((dtype, 4) for dtype in DTYPES), (np.float64, 1), (np.complex128, 1)]

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


@pytest.mark.parametrize("dtype, n", GRID)
@pytest.mark.parametrize("lower", [False, True])
def test_positive_definite_matches_scipy(xp, rng, dtype, n, lower):
    a = random_spd(rng, (6,), n, dtype)
    junk = (
        a + 7 * (np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1))
    ).astype(dtype)
    b = random_matrix(rng, (6, n, 2), dtype)
    x = blocksolve.solve(xp.asarray(junk), xp.asarray(b), assume_a="pos", lower=lower)
    assert type(x) is type(xp.asarray(b)) and x.dtype == dtype and x.shape == b.shape
    x = to_numpy(x)
    ref = np.stack(
        [scipy.linalg.solve(j, bb, assume_a="pos", lower=lower) for j, bb in zip(junk, b)]
    )
    assert_close(x, ref, dtype, factor=10, n=n)
    assert_close(a @ x, b, dtype, factor=10, n=n)


def test_positive_definite_is_cho_factor_then_cho_solve(rng):
    """Same kernels, same numbers: cho_solve-level accuracy, bit for bit."""
    for n in (4, 8):  # 8: the factorisation runs two matrices in lockstep
        a = random_spd(rng, (33,), n, np.float64)
        b = random_matrix(rng, (33, n, 3), np.float64)
        for lower in (False, True):
            x = blocksolve.solve(a, b, assume_a="positive definite", lower=lower)
            ref = blocksolve.cho_solve(blocksolve.cho_factor(a, lower=lower), b)
            np.testing.assert_array_equal(x, ref)


def test_not_positive_definite_is_a_per_matrix_failure(xp, rng):
    a = random_spd(rng, (2, 3), 4, np.float64)
    a[0, 2, 3, 3] = -1.0  # fails at the last leading minor
    a[1, 0] = -a[1, 0]  # at the first
    b = random_matrix(rng, (2, 3, 4), np.float64)
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"solve: 2 matrices of the batch failed, at batch indices \(0, 2\) "
        r"\(Matrix is not positive definite \(leading minor of order 4\)\), "
        r"\(1, 0\) \(Matrix is not positive definite \(leading minor of "
        r"order 1\)\)",
    ) as e:
        blocksolve.solve(xp.asarray(a), xp.asarray(b[..., None]), assume_a="pos")
    assert e.value.indices == [(0, 2), (1, 0)]
    x, info = blocksolve.solve(
        xp.asarray(a), xp.asarray(b[..., None]), assume_a="pos", return_info=True
    )
    np.testing.assert_array_equal(to_numpy(info), [[0, 0, 4], [1, 0, 0]])
    x = to_numpy(
        blocksolve.solve(xp.asarray(a), xp.asarray(b[..., None]), assume_a="pos", errors="nan")
    )
    assert np.isnan(x[0, 2]).all() and np.isnan(x[1, 0]).all()
    good = np.ones((2, 3), bool)
    good[0, 2] = good[1, 0] = False
    assert_close(x[good], np.linalg.solve(a[good], b[good][..., None]), np.float64, factor=10, n=4)


@pytest.mark.parametrize(
    "structure, lower", [("lower triangular", True), ("upper triangular", False)]
)
def test_triangular_structures_match_scipy(xp, rng, structure, lower):
    a = random_general(rng, (5,), 4, np.complex128)
    b = random_matrix(rng, (5, 4, 2), np.complex128)
    x = to_numpy(
        blocksolve.solve(xp.asarray(a), xp.asarray(b), assume_a=structure, lower=not lower)
    )  # lower is ignored here, as in SciPy
    ref = np.stack([scipy.linalg.solve(aa, bb, assume_a=structure) for aa, bb in zip(a, b)])
    assert_close(x, ref, np.complex128, factor=10, n=4)
    np.testing.assert_array_equal(x, blocksolve.solve_triangular(a, b, lower=lower))


def test_triangular_zero_diagonal_fails():
    a = np.triu(np.ones((2, 3, 3)))
    a[1, 1, 1] = 0
    with pytest.raises(blocksolve.LinAlgError, match=r"solve: 1 matrix .* at batch index \(1,\)"):
        blocksolve.solve(a, np.ones((2, 3, 1)), assume_a="upper triangular")


# Every dtype SciPy has a LAPACK type for.  scipy.linalg.solve promotes a and b first,
# then takes the LAPACK type of the result: int8 with int8 is float64 (where its
# cho_solve and solve_triangular, whose kernels the structures run, count int8 alone as
# float32), int8 with float32 is float32, float16 float32, long double float64.
_ANY_DTYPE = [
    np.bool_,
    np.int8,
    np.uint8,
    np.int16,
    np.uint16,
    np.int32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.longdouble,
    np.complex64,
    np.complex128,
    np.clongdouble,
]


def _any_dtype_system(structure, batch, n=4):
    """``(a, b)`` of ``structure`` whose entries every dtype holds (bool too): a diagonal
    of 2..n+1, ones in the lower triangle (read by 'lower triangular', junk for 'pos',
    which reads the upper one), its transpose for 'upper triangular'."""
    a = np.diag(np.arange(2.0, n + 2)) + np.tri(n, k=-1)
    if structure == "upper triangular":
        a = a.T
    if not batch:
        return a, np.arange(1.0, n + 1)
    b = np.arange(1.0, 2 * n + 1).reshape(2, n, 1)
    return np.broadcast_to(a, (*batch, n, n)), b


@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("structure", ["pos", "lower triangular", "upper triangular"])
def test_structures_promote_as_scipy_solve(structure, batch):
    a, b = _any_dtype_system(structure, batch)
    for a_dtype, b_dtype in itertools.product(_ANY_DTYPE, repeat=2):
        aa, bb = a.astype(a_dtype), b.astype(b_dtype)
        ref = scipy.linalg.solve(aa, bb, assume_a=structure)
        x = blocksolve.solve(aa, bb, assume_a=structure)
        assert x.dtype == ref.dtype, (a_dtype, b_dtype)
        assert_close(x, ref, ref.dtype, n=4)


def test_triangular_structures_and_solve_triangular_keep_their_dtype_rules():
    """One kernel, two rules, whichever call comes first: solve_triangular counts int8
    alone as float32, solve's structures promote a and b first (float64)."""
    a, b = np.tri(3, dtype=np.int8) + np.eye(3, dtype=np.int8), np.ones(3, np.int8)
    for _ in range(2):
        assert blocksolve.solve_triangular(a, b, lower=True).dtype == np.float32
        assert blocksolve.solve(a, b, assume_a="lower triangular").dtype == np.float64
    assert scipy.linalg.solve_triangular(a, b, lower=True).dtype == np.float32


@pytest.mark.parametrize("batch", [(), (2,)])
def test_general_promotes_as_numpy_solve(batch):
    """'gen' is numpy.linalg.solve, dtype rule included: int8 with float32 is float64,
    float16 and long double are refused."""
    a, b = _any_dtype_system("general", batch)
    for a_dtype, b_dtype in itertools.product(_ANY_DTYPE, repeat=2):
        aa, bb = a.astype(a_dtype), b.astype(b_dtype)
        try:
            ref = np.linalg.solve(aa, bb)
        except TypeError:
            with pytest.raises(TypeError, match="solve: array type .* is unsupported"):
                blocksolve.solve(aa, bb)
            continue
        x = blocksolve.solve(aa, bb)
        assert x.dtype == ref.dtype, (a_dtype, b_dtype)
        assert_close(x, ref, ref.dtype, n=4)


@pytest.mark.parametrize("spelling", ["gen", "general", None])
def test_general_spellings_are_the_default(rng, spelling):
    a = random_general(rng, (3,), 4, np.float64)
    b = random_matrix(rng, (3, 4, 1), np.float64)
    np.testing.assert_array_equal(blocksolve.solve(a, b, assume_a=spelling), blocksolve.solve(a, b))


@pytest.mark.parametrize(
    "spelling", ["sym", "symmetric", "her", "hermitian", "diagonal", "tridiagonal", "banded"]
)
def test_structures_blocksolve_does_not_have_are_refused(spelling):
    with pytest.raises(
        ValueError,
        match=rf"solve: assume_a must be one of .*; got '{spelling}' \(SciPy solves .* "
        r"'pos' is for Hermitian positive-definite",
    ):
        blocksolve.solve(np.eye(2), np.ones(2), assume_a=spelling)


@pytest.mark.parametrize("bad", ["positive", "POS", 3, ["gen"]])
def test_unknown_structures_are_refused(bad):
    with pytest.raises(
        ValueError,
        match=r"solve: assume_a must be one of 'general', 'positive definite', "
        r"'lower triangular', 'upper triangular', 'gen', 'pos', None; got ",
    ):
        blocksolve.solve(np.eye(2), np.ones(2), assume_a=bad)


def test_lower_must_be_a_flag():
    with pytest.raises(TypeError, match="solve: lower must be a bool"):
        blocksolve.solve(np.eye(2), np.ones(2), assume_a="pos", lower="yes")


@pytest.mark.parametrize(
    "a_shape, b_shape, x_shape",
    [
        ((4, 4), (4,), (4,)),
        ((2, 4, 4), (4,), (2, 4)),
        ((2, 1, 4, 4), (3, 4, 2), (2, 3, 4, 2)),
        ((2, 4, 4), (2, 4, 0), (2, 4, 0)),
        ((0, 4, 4), (4, 1), (0, 4, 1)),
    ],
)
def test_positive_definite_shapes_and_broadcasting(rng, a_shape, b_shape, x_shape):
    a = random_spd(rng, a_shape[:-2], a_shape[-1], np.float64)
    b = random_matrix(rng, b_shape, np.float64)
    x = blocksolve.solve(a, b, assume_a="pos")
    assert x.shape == x_shape
    if x.size:
        assert_close(
            x,
            np.linalg.solve(a, b if b.ndim > 1 else b[:, None]).reshape(x_shape),
            np.float64,
            factor=10,
            n=4,
        )


def test_positive_definite_empty_right_hand_sides_skip_the_factorisation():
    # SciPy returns at once for an empty b, without looking at a.
    x, info = blocksolve.solve(
        -np.eye(3)[None], np.ones((1, 3, 0)), assume_a="pos", return_info=True
    )
    assert x.shape == (1, 3, 0) and not info.any()


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_positive_definite_layouts_and_inputs_untouched(rng, layout):
    a0 = random_spd(rng, (3,), 4, np.complex64)
    b0 = random_matrix(rng, (3, 4, 2), np.complex64)
    a, b = layouts(a0)[layout], layouts(b0)[layout]
    x = blocksolve.solve(a, b, assume_a="pos")
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(x, blocksolve.solve(a0, b0, assume_a="pos"))


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_positive_definite_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_spd(rng, batch, 4, np.float64)
    b = random_matrix(rng, batch + (4, 2), np.float64)
    x = blocksolve.solve(a, b, assume_a="pos")
    for idx in np.ndindex(*batch):
        np.testing.assert_array_equal(x[idx], blocksolve.solve(a[idx], b[idx], assume_a="pos"))
