"""lu_factor and lu_solve against SciPy."""

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import DTYPES, assert_close, layouts, random_general, random_matrix, to_numpy

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)


def _op(a, trans):
    """``a``, ``a^T`` or ``a^H`` of a stack."""
    if trans == 0:
        return a
    t = np.swapaxes(a, -1, -2)
    return np.conj(t) if trans == 2 else t


def _unpack(lu, piv):
    """``P``, ``L``, ``U`` of one (m x n) factor with ``P @ L @ U == a``."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    P = np.eye(m, dtype=lu.dtype)[:, perm]
    L = np.tril(lu, -1)[:, :k] + np.eye(m, k, dtype=lu.dtype)
    return P, L, np.triu(lu)[:k]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", [(1, 1), (4, 4), (33, 33), (3, 5), (6, 2)])
def test_lu_factor_matches_scipy(xp, rng, dtype, m, n):
    # Unshifted random matrices, so that pivoting really swaps rows.
    a = random_matrix(rng, (5, m, n), dtype)
    lu, piv = blocksolve.lu_factor(xp.asarray(a))
    assert lu.dtype == dtype and lu.shape == a.shape
    assert piv.dtype == np.int32 and piv.shape == (5, min(m, n))
    lu, piv = to_numpy(lu), to_numpy(piv)
    for i in range(5):
        lu_ref, piv_ref = scipy.linalg.lu_factor(a[i])
        np.testing.assert_array_equal(piv[i], piv_ref)
        assert_close(lu[i], lu_ref, dtype, factor=10, n=max(m, n))
        P, L, U = _unpack(lu[i], piv[i])
        assert_close(P @ L @ U, a[i], dtype, n=max(m, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [4, 33])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve_matches_scipy(xp, rng, dtype, n, trans):
    a = random_general(rng, (3,), n, dtype)
    b = random_matrix(rng, (3, n, 2), dtype)
    lu, piv = blocksolve.lu_factor(xp.asarray(a))
    x = blocksolve.lu_solve((lu, piv), xp.asarray(b), trans=trans)
    assert type(x) is type(xp.asarray(b)) and x.dtype == dtype and x.shape == b.shape
    x = to_numpy(x)
    for i in range(3):
        x_ref = scipy.linalg.lu_solve(scipy.linalg.lu_factor(a[i]), b[i], trans=trans)
        assert_close(x[i], x_ref, dtype, factor=10, n=n)
    assert_close(_op(a, trans) @ x, b, dtype, factor=10, n=n)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
def test_lu_solve_vector_and_trans_names(rng, trans):
    a = random_general(rng, (), 4, np.complex128)
    b = random_matrix(rng, (4,), np.complex128)
    x = blocksolve.lu_solve(blocksolve.lu_factor(a), b, trans=trans)
    assert x.shape == (4,)
    scipy_trans = {"N": 0, "T": 1, "C": 2}.get(trans, trans)  # SciPy's lu_solve takes 0/1/2 only
    assert_close(
        x,
        scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=scipy_trans),
        np.complex128,
        factor=10,
        n=4,
    )


def test_lu_tiny_matrices():
    a = np.array([[[2.0]], [[-4.0]], [[0.0]]])
    (lu, piv), info = blocksolve.lu_factor(a, return_info=True)
    np.testing.assert_array_equal(lu, a)
    np.testing.assert_array_equal(piv, np.zeros((3, 1)))
    np.testing.assert_array_equal(info, [0, 0, 1])
    x = blocksolve.lu_solve((lu[:2], piv[:2]), np.array([[[1.0]], [[2.0]]]))
    np.testing.assert_array_equal(x, [[[0.5]], [[-0.5]]])


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (0, 2), (2, 0), (3, 0, 4)])
def test_lu_empty(shape):
    a = np.zeros(shape)
    lu, piv = blocksolve.lu_factor(a)
    assert lu.shape == shape and piv.dtype == np.int32
    assert piv.shape == shape[:-2] + (min(shape[-2:]),)
    if shape[-1] != shape[-2]:
        return
    b = np.zeros(shape[:-1] + (2,))
    x = blocksolve.lu_solve((lu, piv), b)
    assert x.shape == b.shape and x.dtype == np.float64


@pytest.mark.parametrize("piv_dtype", [np.float64, np.complex64, np.bool_])
def test_lu_solve_takes_empty_pivots_of_any_dtype(piv_dtype):
    # SciPy's own test passes np.array([]) (float64): an empty array holds no wrong pivot.
    x = blocksolve.lu_solve(
        (np.empty((0, 0), np.float32), np.array([], piv_dtype)), np.array([], np.complex64)
    )
    assert x.shape == (0,) and x.dtype == np.complex64
    with pytest.raises(TypeError, match="lu_solve: piv must be an integer array; got dtype"):
        blocksolve.lu_solve((np.eye(1), np.array([0], piv_dtype)), np.ones(1))


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (0,)])
def test_lu_batched_equals_loop(rng, batch, single_matrices_on_kernels):
    a = random_matrix(rng, batch + (4, 4), np.float64)
    b = random_matrix(rng, batch + (4, 3), np.float64)
    lu, piv = blocksolve.lu_factor(a)
    x = blocksolve.lu_solve((lu, piv), b, trans=1)
    assert lu.shape == a.shape and piv.shape == batch + (4,) and x.shape == b.shape
    for idx in np.ndindex(*batch):
        lu_i, piv_i = blocksolve.lu_factor(a[idx])
        np.testing.assert_array_equal(lu[idx], lu_i)
        np.testing.assert_array_equal(piv[idx], piv_i)
        np.testing.assert_array_equal(x[idx], blocksolve.lu_solve((lu_i, piv_i), b[idx], trans=1))


def test_lu_solve_broadcasts_batches(rng):
    a = random_general(rng, (2, 1), 4, np.float64)
    lu, piv = blocksolve.lu_factor(a)
    b = random_matrix(rng, (5, 4, 2), np.float64)
    x = blocksolve.lu_solve((lu, piv), b)
    assert x.shape == (2, 5, 4, 2)
    assert_close(a @ x, np.broadcast_to(b, x.shape), np.float64, n=4)
    x = blocksolve.lu_solve((lu, piv), b[0, :, 0])  # a vector only when b.ndim == 1
    assert x.shape == (2, 1, 4)
    assert_close((a @ x[..., None])[..., 0], np.broadcast_to(b[0, :, 0], x.shape), np.float64, n=4)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
def test_lu_layouts_and_inputs_untouched(rng, layout):
    a0 = random_matrix(rng, (3, 4, 4), np.complex128)
    b0 = random_matrix(rng, (3, 4, 2), np.complex128)
    a, b = layouts(a0)[layout], layouts(b0)[layout]
    lu, piv = blocksolve.lu_factor(a)
    lu_ref, piv_ref = blocksolve.lu_factor(a0)
    np.testing.assert_array_equal(lu, lu_ref)
    np.testing.assert_array_equal(piv, piv_ref)
    lu_in, piv_in = layouts(lu)[layout], layouts(piv)[layout]
    x = blocksolve.lu_solve((lu_in, piv_in), b, trans=2)
    np.testing.assert_array_equal(x, blocksolve.lu_solve((lu, piv), b0, trans=2))
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(lu_in, lu)
    np.testing.assert_array_equal(piv_in, piv)


def test_lu_factor_integer_promotes():
    a = np.array([[2, 5, 8, 7], [5, 2, 2, 8], [7, 5, 6, 6], [5, 4, 4, 8]])
    lu, piv = blocksolve.lu_factor(a)
    lu_ref, piv_ref = scipy.linalg.lu_factor(a)
    assert lu.dtype == np.float64
    np.testing.assert_array_equal(piv, [2, 2, 3, 3])
    np.testing.assert_array_equal(piv, piv_ref)
    np.testing.assert_allclose(lu, lu_ref, rtol=1e-14, atol=1e-14)


def test_lu_pivots_on_abs_re_plus_abs_im():
    # |2+2j| < 3 but |2| + |2| > 3: LAPACK's izamax picks row 1.
    a = np.array([[3 + 0j, 1], [2 + 2j, 5]])
    lu, piv = blocksolve.lu_factor(a)
    np.testing.assert_array_equal(piv, scipy.linalg.lu_factor(a)[1])
    np.testing.assert_array_equal(piv, [1, 1])


def test_lu_ties_pick_the_first_row():
    a = np.array([[1.0, 2.0, 0.0], [-1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(blocksolve.lu_factor(a)[1], scipy.linalg.lu_factor(a)[1])


def test_lu_factor_tiny_pivot_is_divided_not_inverted():
    # 1 / 1e-310 overflows; LAPACK divides by such pivots instead.
    a = np.array([[[1e-310, 0.0], [1e-311, 1.0]], [[2.0, 1.0], [1.0, 3.0]]])
    lu, piv = blocksolve.lu_factor(a)
    np.testing.assert_array_equal(piv, [[0, 1], [0, 1]])
    np.testing.assert_allclose(lu[0], [[1e-310, 0.0], [0.1, 1.0]], rtol=1e-12)
    np.testing.assert_allclose(lu[1], scipy.linalg.lu_factor(a[1])[0], rtol=1e-15)


@pytest.mark.parametrize(
    "a, k",
    [
        (np.zeros((3, 3)), 1),
        ([[1.0, 2.0], [2.0, 4.0]], 2),
        ([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]], 1),
        ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], 3),
    ],
)
def test_lu_factor_singular_matches_scipy_and_goes_on(a, k):
    with pytest.warns(scipy.linalg.LinAlgWarning, match=f"Diagonal number {k} is exactly"):
        lu_ref, piv_ref = scipy.linalg.lu_factor(a)
    with pytest.warns(
        blocksolve.LinAlgWarning,
        match=f"lu_factor: Diagonal number {k} is exactly zero. Singular matrix.",
    ):
        lu, piv = blocksolve.lu_factor(a)
    np.testing.assert_array_equal(piv, piv_ref)
    np.testing.assert_allclose(lu, lu_ref, rtol=1e-15, atol=0)


def test_lu_factor_warns_with_batch_indices(rng):
    a = random_general(rng, (2, 3), 4, np.float64)
    a[0, 2, :, 1] = 0.0  # column 2 zero
    a[1, 0, 3] = a[1, 0, 0]  # rows equal: zero pivot at the end
    with pytest.warns(
        blocksolve.LinAlgWarning,
        match=r"2 matrices of the batch failed, at batch indices \(0, 2\) "
        r"\(Diagonal number 2 .*\), \(1, 0\) \(Diagonal number 4 ",
    ) as w:
        lu, piv = blocksolve.lu_factor(a)
    assert len(w) == 1
    (lu_i, piv_i), info = blocksolve.lu_factor(a, return_info=True)
    np.testing.assert_array_equal(info, [[0, 0, 2], [4, 0, 0]])
    assert info.dtype == np.int32
    np.testing.assert_array_equal(lu_i, lu)
    for errors in ("ignore", "nan"):  # lu and piv are results even for singular matrices
        lu_e, piv_e = blocksolve.lu_factor(a, errors=errors)
        np.testing.assert_array_equal(lu_e, lu)
        np.testing.assert_array_equal(piv_e, piv)
    with pytest.raises(blocksolve.LinAlgError, match="Diagonal number 2") as e:
        blocksolve.lu_factor(a, errors="raise")
    assert e.value.indices == [(0, 2), (1, 0)]


def test_lu_solve_singular(rng):
    a = random_general(rng, (3,), 4, np.float64)
    a[1, :, 2] = 0.0
    (lu, piv), info = blocksolve.lu_factor(a, return_info=True)
    np.testing.assert_array_equal(info, [0, 3, 0])
    b = random_matrix(rng, (3, 4, 1), np.float64)
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"lu_solve: 1 matrix of the batch failed, at batch index \(1,\) "
        r"\(Singular matrix \(U\[2, 2\] is exactly zero\)\)",
    ) as e:
        blocksolve.lu_solve((lu, piv), b)
    assert e.value.indices == [(1,)]
    x, info = blocksolve.lu_solve((lu, piv), b, trans=1, return_info=True)
    np.testing.assert_array_equal(info, [0, 3, 0])
    assert_close(x[[0, 2]], np.linalg.solve(a[[0, 2]].mT, b[[0, 2]]), np.float64, factor=10)
    x = blocksolve.lu_solve((lu, piv), b, errors="nan")
    assert np.isnan(x[1]).all() and np.isfinite(x[[0, 2]]).all()
    x = blocksolve.lu_solve((lu, piv), b, errors="ignore")  # SciPy's infs/NaNs
    assert not np.isfinite(x[1]).all() and np.isfinite(x[[0, 2]]).all()


def test_lu_bad_arguments(rng):
    lu, piv = blocksolve.lu_factor(random_general(rng, (), 3, np.float64))
    with pytest.raises(ValueError, match=r"lu_solve: lu must be square .* got shape \(3, 4\)"):
        blocksolve.lu_solve((np.ones((3, 4)), np.arange(3)), np.ones(3))
    with pytest.raises(ValueError, match=r"lu_factor: a must be at least 2-D; got shape \(3,\)"):
        blocksolve.lu_factor(np.ones(3))
    with pytest.raises(TypeError, match="lu_factor: array type object is unsupported"):
        blocksolve.lu_factor(np.eye(3, dtype=object))
    with pytest.raises(ValueError, match="lu_factor: array must not contain infs or NaNs"):
        blocksolve.lu_factor(np.full((2, 2), np.nan))
    with pytest.raises(
        TypeError, match="lu_solve: piv must be an integer array; got dtype float64"
    ):
        blocksolve.lu_solve((lu, piv.astype(float)), np.ones(3))
    with pytest.raises(
        ValueError,
        match=r"lu_solve: piv must hold indices in \[0, 3\); "
        r"got values from 0 to 7",
    ):
        blocksolve.lu_solve((lu, np.array([0, 7, 2])), np.ones(3))
    with pytest.raises(ValueError, match=r"lu_solve: piv must hold indices in \[0, 3\)"):
        blocksolve.lu_solve((lu, np.array([-1, 1, 2])), np.ones(3))
    with pytest.raises(ValueError, match=r"lu_solve: piv.shape\[-1\] = 2 does not match"):
        blocksolve.lu_solve((lu, np.array([0, 1])), np.ones(3))
    with pytest.raises(ValueError, match=r"lu_solve: b.shape\[-2\] = 4 does not match"):
        blocksolve.lu_solve((lu, piv), np.ones(4))
    with pytest.raises(
        ValueError,
        match=r"lu_solve: trans must be one of 0, 1, 2, 'N', 'T', 'C'; got 3",
    ):
        blocksolve.lu_solve((lu, piv), np.ones(3), trans=3)
    with pytest.raises(TypeError, match="lu_solve: lu_and_piv must be an"):
        blocksolve.lu_solve(lu, np.ones(3))
    with pytest.raises(ValueError, match="lu_solve: array must not contain infs or NaNs"):
        blocksolve.lu_solve((lu, piv), np.array([1.0, np.inf, 0.0]))


@pytest.mark.parametrize("where", [(0, 1), (1, 1), (2, 0)])
def test_lu_solve_checks_b_but_not_the_factor_as_scipy(where):
    """SciPy's ``check_finite`` in ``lu_solve`` covers ``b`` only: an inf in the factor
    gives SciPy's infs/NaNs, no ValueError (and no per-matrix failure: nothing is zero)."""
    lu, piv = scipy.linalg.lu_factor(np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]]))
    lu[where] = np.inf
    b = np.ones(3)
    before = lu.copy()
    expected = scipy.linalg.lu_solve((lu, piv), b)
    x, info = blocksolve.lu_solve((lu, piv), b, return_info=True)
    np.testing.assert_array_equal(x, expected)  # the same operations, so the same infs/NaNs
    assert info == 0
    np.testing.assert_array_equal(lu, before)
