"""The general eigenvalue kernel ``geev`` (blocksolve.cpu.kernels.eig) against NumPy and
SciPy's LAPACK ``xGEEV``."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from blocksolve.cpu.kernels import eig as kernels

pytestmark = pytest.mark.kernel_tiers  # both CPU kernel tiers (see conftest)

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SIZES = (*range(1, 9), 12)


class Pattern:
    """What the builders read of a :class:`~blocksolve._pattern.CallPattern`."""

    def __init__(self, n, vectors, dtype):
        self.n, self.vectors, self.np_dtype = n, vectors, np.dtype(dtype)

    def dim(self, name):
        assert name == "n"
        return self.n

    def option(self, name):
        assert name == "vectors"
        return self.vectors


def complex_of(dtype):
    return np.result_type(dtype, np.complex64)


def eps_of(dtype):
    return float(np.finfo(dtype).eps)


def random_matrices(rng, batch, n, dtype):
    a = rng.standard_normal((batch, n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((batch, n, n))
    return a.astype(dtype)


def run_kernel(a, vectors):
    """``geev`` on the stack ``a``; checks the outputs' types and that ``a`` is unchanged."""
    a = np.ascontiguousarray(a)
    batch, n = a.shape[0], a.shape[-1]
    before = a.copy()
    result = kernels.geev(Pattern(n, vectors, a.dtype))(a)
    assert np.array_equal(a, before, equal_nan=True)
    assert len(result) == (3 if vectors else 2)
    w, info = result[0], result[-1]
    assert w.dtype == complex_of(a.dtype) and w.shape == (batch, n)
    assert info.dtype == np.int32 and info.shape == (batch,)
    if vectors:
        assert result[1].dtype == w.dtype and result[1].shape == (batch, n, n)
    return result


def matching(w, ref):
    """``ref`` reordered to match ``w`` (the assignment of least total distance)."""
    rows, cols = linear_sum_assignment(np.abs(w[:, None] - ref[None, :]))
    out = np.empty_like(ref)
    out[rows] = ref[cols]
    return out


def check_eigenvalues(w, a, factor=1000.0):
    """``w`` (batch, n) are the eigenvalues NumPy finds, within ``factor eps n ||a||``."""
    dtype = a.dtype
    ref = np.linalg.eigvals(a.astype(complex_of(np.float64)))
    for wm, rm, am in zip(w, ref, a):
        n = am.shape[0]
        scale = max(np.linalg.norm(am.astype(complex), 2), np.finfo(dtype).tiny)
        error = np.abs(wm - matching(wm, rm)).max()
        assert error <= factor * eps_of(dtype) * n * scale, (error, wm, rm)


def check_vectors(w, v, a, real_input, factor=100.0):
    """Residual, unit norm, LAPACK's normalisation, conjugate pairs of real matrices."""
    dtype = a.dtype
    eps = eps_of(dtype)
    for wm, vm, am in zip(w, v, a):
        n = am.shape[0]
        am = am.astype(complex)
        vm, wm = vm.astype(complex), wm.astype(complex)
        norm = max(np.linalg.norm(am), np.finfo(dtype).tiny)
        residual = np.linalg.norm(am @ vm - vm * wm[None, :]) / (norm * n * eps)
        assert residual <= factor, residual
        assert np.allclose(np.linalg.norm(vm, axis=0), 1, rtol=0, atol=10 * n * eps)
        for j in range(n):
            if real_input and wm[j].imag == 0:
                continue
            # A component of (about, ties differ by rounding) the largest modulus is real,
            # positive for a complex matrix.
            size = np.abs(vm[:, j]) ** 2
            largest = size >= size.max() * (1 - 100 * eps)
            made_real = largest & (vm[:, j].imag == 0)
            if not real_input:
                made_real &= vm[:, j].real > 0
            assert made_real.any(), vm[:, j]
        if real_input:
            for j in range(n):
                if wm[j].imag == 0:
                    assert not vm[:, j].imag.any()
                elif wm[j].imag > 0:
                    assert wm[j + 1] == np.conj(wm[j])
                    assert np.array_equal(vm[:, j + 1], np.conj(vm[:, j]))
                else:
                    assert wm[j - 1] == np.conj(wm[j])


def check_against_numpy_vectors(w, v, a, factor=1e4):
    """Where the eigenvalues are well separated, each eigenvector is NumPy's for the
    matching eigenvalue, up to a unit-modulus factor."""
    dtype = a.dtype
    ref_w, ref_v = np.linalg.eig(a.astype(complex_of(np.float64)))
    for wm, vm, rwm, rvm, am in zip(w, v, ref_w, ref_v, a):
        n = am.shape[0]
        rows, cols = linear_sum_assignment(np.abs(wm[:, None] - rwm[None, :]))
        scale = max(np.linalg.norm(am.astype(complex), 2), np.finfo(dtype).tiny)
        for j, r in zip(rows, cols):
            gap = np.delete(np.abs(rwm - rwm[r]), r).min(initial=np.inf) / scale
            if gap < 0.1:
                continue
            phase = np.vdot(rvm[:, r], vm[:, j])
            assert abs(abs(phase) - 1) <= factor * eps_of(dtype) * n / gap
            error = np.linalg.norm(vm[:, j] - phase * rvm[:, r])
            assert error <= factor * eps_of(dtype) * n / gap, (error, gap)


# --- random matrices -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vectors", [False, True])
def test_random_matrices_match_numpy(rng, dtype, vectors):
    real_input = np.dtype(dtype).kind == "f"
    for n in SIZES:
        a = random_matrices(rng, 6, n, dtype)
        result = run_kernel(a, vectors)
        w, info = result[0], result[-1]
        assert not info.any()
        check_eigenvalues(w, a)
        if real_input:  # pairs: the positive imaginary part first, then the conjugate
            for wm in w:
                j = 0
                while j < n:
                    if wm[j].imag != 0:
                        assert wm[j].imag > 0 and wm[j + 1] == np.conj(wm[j])
                        j += 2
                    else:
                        j += 1
        if vectors:
            check_vectors(w, result[1], a, real_input)
            check_against_numpy_vectors(w, result[1], a)
            # The eigenvalues do not depend on whether the vectors are computed...
            w_only = run_kernel(a, False)[0]
            check_eigenvalues(w_only, a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_batch_equals_single_matrices_bit_for_bit(rng, dtype):
    """A matrix's results do not depend on the batch (threads split large ones)."""
    for n, batch in ((3, 20), (5, 400)):
        a = random_matrices(rng, batch, n, dtype)
        a[7] = np.triu(a[7])
        a[8] = 0
        a[9, 1, 2] = np.nan
        for vectors in (False, True):
            whole = run_kernel(a, vectors)
            for m in [*range(12), batch - 1]:
                single = run_kernel(a[m : m + 1], vectors)
                for x, y in zip(whole, single):
                    assert np.array_equal(x[m : m + 1], y, equal_nan=True)


# --- structured matrices ---------------------------------------------------------------


def orthogonal(rng, n):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q


def rotation_blocks(rng, n):
    """A real matrix whose eigenvalues are all complex: rotation blocks, hidden by an
    orthogonal similarity."""
    blocks = np.zeros((n, n))
    for j in range(0, n, 2):
        radius, angle = rng.uniform(0.5, 2), rng.uniform(0.3, 2.8)
        c, s = radius * np.cos(angle), radius * np.sin(angle)
        blocks[j : j + 2, j : j + 2] = [[c, -s], [s, c]]
    q = orthogonal(rng, n)
    return q @ blocks @ q.T, blocks


def companion(roots):
    """The companion matrix of the monic polynomial with these roots."""
    coefficients = np.poly(roots)
    n = len(roots)
    c = np.zeros((n, n), dtype=coefficients.dtype)
    c[0, :] = -coefficients[1:]
    c[1:, :-1] += np.eye(n - 1)
    return c


@pytest.mark.parametrize("dtype", DTYPES)
def test_structured_matrices(rng, dtype):
    real_input = np.dtype(dtype).kind == "f"
    cases = []
    for n in (1, 2, 5, 8):
        cases.append(np.triu(random_matrices(rng, 1, n, dtype)[0]))  # already triangular
        cases.append(np.tril(random_matrices(rng, 1, n, dtype)[0]))
        cases.append(np.diag(random_matrices(rng, 1, n, dtype)[0, 0]))  # diagonal
    for n in (2, 4, 6, 8):
        cases.append(rotation_blocks(rng, n)[0].astype(dtype))
    for roots in ([1, 2, 3, 4], [0.5, -1.5, 2.5, 4, -3], [1, -1, 2, -2, 3, -3, 0.25]):
        cases.append(companion(np.array(roots, float)).astype(dtype))
    for case in cases:
        a = case[None]
        for vectors in (False, True):
            result = run_kernel(a, vectors)
            assert not result[-1].any()
            check_eigenvalues(result[0], a)
            if vectors:
                check_vectors(result[0], result[1], a, real_input)


@pytest.mark.parametrize("dtype", DTYPES)
def test_known_eigenvalues(rng, dtype):
    """Rotation blocks and companion matrices: the eigenvalues we built them with."""
    eps = eps_of(dtype)
    for n in (2, 4, 6):
        a, blocks = rotation_blocks(rng, n)
        w = run_kernel(a.astype(dtype)[None], False)[0][0]
        known = np.linalg.eigvals(blocks)
        assert (np.abs(w.imag) > 0.1).all()
        assert np.abs(w - matching(w, known)).max() <= 100 * n * eps * 2
    for roots in ([1, 2, 3, 4], [0.5, -1.5, 2.5, 4, -3]):
        roots = np.array(roots, float)
        a = companion(roots).astype(dtype)
        for vectors in (False, True):
            w = run_kernel(a[None], vectors)[0][0]
            # Companion matrices are ill-conditioned: relative to the root growth.
            error = np.abs(w - matching(w, roots.astype(complex))).max()
            assert error <= 1e4 * eps * np.abs(roots).max() * len(roots), error
    # Roots of unity, complex pairs of a real matrix.
    roots = np.exp(2j * np.pi * np.arange(6) / 6)
    a = companion(roots).real.astype(dtype)
    w = run_kernel(a[None], True)[0][0]
    assert np.abs(w - matching(w, roots)).max() <= 1000 * eps


@pytest.mark.parametrize("dtype", DTYPES)
def test_cyclic_permutations_need_exceptional_shifts(dtype):
    """The QR iteration stalls on a cyclic permutation (its standard shifts leave it
    unchanged) until an exceptional shift; the eigenvalues are the n-th roots of unity."""
    eps = eps_of(dtype)
    for n in (3, 4, 5, 8, 12):
        a = np.roll(np.eye(n, dtype=dtype), 1, axis=1)[None]
        roots = np.exp(2j * np.pi * np.arange(n) / n)
        for vectors in (False, True):
            result = run_kernel(a, vectors)
            assert not result[-1].any()
            w = result[0][0]
            assert np.abs(w - matching(w, roots)).max() <= 100 * eps
            if vectors:
                check_vectors(result[0], result[1], a, np.dtype(dtype).kind == "f")


@pytest.mark.parametrize("dtype", DTYPES)
def test_defective_matrices(dtype):
    """Jordan blocks: a multiple eigenvalue, found to about eps**(1/k)."""
    eps = eps_of(dtype)
    for n, value in ((2, 1.0), (3, -2.0), (4, 0.5)):
        a = (value * np.eye(n) + np.eye(n, k=1)).astype(dtype)
        rng = np.random.default_rng(n)
        q = orthogonal(rng, n)
        hidden = (q @ a @ q.T).astype(dtype)
        for matrix in (a, hidden):
            for vectors in (False, True):
                result = run_kernel(matrix[None], vectors)
                assert not result[-1].any()
                error = np.abs(result[0][0] - value).max()
                assert error <= 10 * eps ** (1 / n) * max(1, abs(value)), error
                if vectors:
                    v = result[1][0].astype(complex)
                    assert np.allclose(np.linalg.norm(v, axis=0), 1, atol=100 * eps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_badly_scaled_matrices(rng, dtype):
    """Huge and tiny entries (scaled into range), and matrices that need balancing."""
    real_input = np.dtype(dtype).kind == "f"
    finfo = np.finfo(dtype)
    big = 1e150 if finfo.dtype == np.float64 else 1e18
    small = 1e-150 if finfo.dtype == np.float64 else 1e-18
    n = 5
    base = random_matrices(rng, 3, n, dtype)
    for factor in (big, small):
        a = (base * factor).astype(dtype)
        for vectors in (False, True):
            result = run_kernel(a, vectors)
            assert not result[-1].any()
            w = result[0]
            assert np.isfinite(w).all()
            check_eigenvalues((w / factor).astype(w.dtype), base)
            if vectors:
                check_vectors((w / factor).astype(w.dtype), result[1], base, real_input)
    # d a d^-1 with d spanning many orders of magnitude: same eigenvalues as a.
    exponents = np.array([0, 6, -6, 12, -3]) if finfo.dtype == np.float64 else np.arange(5)
    d = 10.0**exponents
    graded = (base * d[:, None] / d[None, :]).astype(dtype)
    for vectors in (False, True):
        result = run_kernel(graded, vectors)
        assert not result[-1].any()
        for wm, am in zip(result[0], base):
            ref = np.linalg.eigvals(am.astype(complex))
            error = np.abs(wm - matching(wm, ref)).max()
            assert error <= 1e4 * eps_of(dtype) * np.linalg.norm(am, 2), error
        if vectors:
            v = result[1].astype(complex)
            w = result[0].astype(complex)
            g = graded.astype(complex)
            residual = np.abs(g @ v - v * w[:, None, :]).max(axis=(1, 2))
            assert (residual <= 1e4 * eps_of(dtype) * np.abs(g).max(axis=(1, 2))).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_and_identity(dtype):
    for n in (1, 3, 6):
        for matrix, value in ((np.zeros((n, n), dtype), 0), (np.eye(n, dtype=dtype), 1)):
            w, v, info = run_kernel(matrix[None], True)
            assert not info.any()
            assert (w == value).all()
            assert np.array_equal(v[0], np.eye(n))
            assert (run_kernel(matrix[None], False)[0] == value).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_entries_give_nan(rng, dtype):
    n = 4
    a = random_matrices(rng, 4, n, dtype)
    a[1, 2, 3] = np.nan
    a[2, 0, 0] = np.inf
    a[3, 3, 1] = -np.inf
    for vectors in (False, True):
        result = run_kernel(a, vectors)
        w, info = result[0], result[-1]
        np.testing.assert_array_equal(info, [0, n, n, n])  # none converged
        assert np.isfinite(w[0]).all() and np.isnan(w[1:]).all()
        if vectors:
            assert np.isfinite(result[1][0]).all() and np.isnan(result[1][1:]).all()


# --- LAPACK and NumPy ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_matrix_lapack_agrees_with_the_kernel(rng, dtype):
    real_input = np.dtype(dtype).kind == "f"
    for n in (1, 2, 4, 7):
        a = random_matrices(rng, 4, n, dtype)
        for vectors in (False, True):
            ours = run_kernel(a, vectors)
            lapack = kernels.geev_per_matrix(Pattern(n, vectors, dtype))
            for m in range(len(a)):
                theirs = lapack(a[m])
                assert len(theirs) == len(ours)
                assert theirs[-1] == 0 and isinstance(theirs[-1], int)
                assert theirs[0].dtype == complex_of(dtype)
                scale = np.linalg.norm(a[m].astype(complex), 2)
                error = np.abs(ours[0][m] - matching(ours[0][m], theirs[0])).max()
                assert error <= 1000 * eps_of(dtype) * n * scale
                if vectors:
                    assert theirs[1].dtype == complex_of(dtype)
                    check_vectors(theirs[0][None], theirs[1][None], a[m : m + 1], real_input)
    bad = random_matrices(rng, 1, 3, dtype)[0]
    bad[0, 1] = np.nan
    w, v, info = kernels.geev_per_matrix(Pattern(3, True, dtype))(bad)
    assert info == 3 and np.isnan(w).all() and np.isnan(v).all()


def test_numpy_reference(rng):
    """``numpy.linalg.eig``/``eigvals``'s gufunc; a non-finite slice raises ``LinAlgError``
    (the per-matrix calls then report which matrix)."""
    for vectors in (False, True):
        compute = kernels.geev_numpy(Pattern(4, vectors, np.float64))
        a = random_matrices(rng, 3, 4, np.float64)
        w = compute(a)[0]
        check_eigenvalues(np.asarray(w, complex), a)
        a[1, 0, 0] = np.nan
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            compute(a)


def test_complex_modulus_and_square_root_agree_with_hypot_and_cmath():
    """The QR iteration's ``|z|`` and ``sqrt(z)`` of a double complex, formed from the parts
    where their squares cannot over- or underflow, agree with ``hypot`` and ``cmath.sqrt``
    to a few ulps -- also at the edges of that range, beyond it (scaled into it; numba's
    ``cmath.sqrt`` raises ``ZeroDivisionError`` for ``5e-324j``), for signed zeros,
    infinities and NaN."""
    import cmath

    import numba

    edge = 2.0**500
    parts = [0.0, -0.0, 1.0, -3.5, 0.1, 1e-300, 5e-324, 1e300, np.inf, -np.inf, np.nan]
    parts += [edge, -edge, edge * (1 - 2.0**-52), 1 / edge, 1 / edge * (1 + 2.0**-52)]
    parts += [np.finfo(np.float64).max, -2.5e-310]
    z = np.array([complex(x, y) for x in parts for y in parts])

    @numba.njit
    def modulus_and_root(z, modulus, root):
        for i in range(z.size):
            modulus[i] = kernels._modulus(z[i])
            root[i] = kernels._sqrt(z[i])

    modulus, root = np.empty(z.size), np.empty(z.size, complex)
    modulus_and_root(z, modulus, root)
    expected_root = np.array([cmath.sqrt(v) for v in z])
    tolerance = 4 * np.finfo(np.float64).eps
    np.testing.assert_allclose(modulus, np.abs(z), rtol=tolerance, atol=0)
    for part in (np.real, np.imag):
        found, expected = part(root), part(expected_root)
        np.testing.assert_allclose(found, expected, rtol=tolerance, atol=0)
        assert (np.signbit(found) == np.signbit(expected)).all()


def test_real_by_complex_products_and_quotients_are_numbas_part_by_part():
    """The kernels' part-by-part ``real * complex``, ``complex * real`` and
    ``complex / real`` of double complex numbers give numba's own results to the bit
    (but for the sign of a zero) for finite numbers, tiny and huge ones too, and each
    part's IEEE result for infinite and NaN ones (where numba's has NaN from ``0 * inf``)."""
    import numba

    parts = [0.0, 1.0, -3.5, 0.1, 1e-300, 5e-324, 1e300, np.finfo(np.float64).max]
    parts += [-x for x in parts[1:]] + [np.inf, -np.inf, np.nan]
    z = np.array([complex(x, y) for x in parts for y in parts])
    s = np.array(parts[1:])  # no zero divisor: numba's division by a complex zero raises
    z, s = (x.ravel() for x in np.meshgrid(z, s))

    @numba.njit(error_model="numpy")
    def compute(z, s, out):
        for i in range(z.size):
            out[0, i] = kernels._times(s[i], z[i])
            out[1, i] = kernels._times(z[i], s[i])
            out[2, i] = kernels._over(z[i], s[i])
            out[3, i] = s[i] * z[i]
            out[4, i] = z[i] * s[i]
            out[5, i] = z[i] / s[i]

    out = np.empty((6, z.size), complex)
    with np.errstate(all="ignore"):
        compute(z, s, out)
        by_parts = [s * z.real, s * z.real, z.real / s], [s * z.imag, s * z.imag, z.imag / s]
    finite = np.isfinite(z) & np.isfinite(s)
    assert finite.sum() > 1000
    for ours, numbas, real, imag in zip(out[:3], out[3:], *by_parts):
        for part, expected in ((np.real, real), (np.imag, imag)):
            np.testing.assert_array_equal(part(ours)[finite], part(numbas)[finite])
            np.testing.assert_array_equal(part(ours), expected)
