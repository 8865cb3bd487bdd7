"""NumPy's linalg gufuncs called as ``numpy.linalg`` calls them (the LAPACK runners' way).

Each call must be ``numpy.linalg``'s own, bit for bit and dtype for dtype, on one
matrix and on a stack, raise NumPy's ``LinAlgError`` where it does, and leave the
caller's floating-point error state as it was.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import blocksolve
from _helpers import random_matrix, random_spd
from blocksolve._compat import numpy as _numpy_linalg
from blocksolve._compat.numpy import numpy_linalg

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
GUFUNCS = sorted(_numpy_linalg.CALLS)


def _operands(rng, gufunc, batch, dtype, n=5):
    if gufunc.startswith("svd"):  # a tall matrix: svd_s's factors are not square
        return (random_matrix(rng, (*batch, n, 3), dtype),)
    a = random_spd(rng, batch, n, dtype)
    return (a, random_matrix(rng, (*batch, n, 2), dtype)) if gufunc == "solve" else (a,)


def _public(gufunc):
    call = _numpy_linalg.CALLS[gufunc]
    function = getattr(np.linalg, call.public)

    def reference(*operands):
        found = _as_tuple(function(*operands, **call.keywords))
        if call.complex_results:  # the gufunc's complex results, which eig makes real
            found = tuple(x.astype(np.result_type(x, np.complex64)) for x in found)
        return found

    return reference


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)], ids=["one", "stack", "stack2d"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gufunc", GUFUNCS)
def test_results_are_numpy_linalgs_bit_for_bit(rng, gufunc, dtype, batch):
    operands = _operands(rng, gufunc, batch, dtype)
    before = [x.copy() for x in operands]
    got = numpy_linalg(gufunc, dtype)(*operands)
    reference = _public(gufunc)(*operands)
    assert len(got) == len(reference)
    for x, y in zip(got, reference):
        assert type(x) is type(y) and x.dtype == y.dtype and np.shape(x) == np.shape(y)
        np.testing.assert_array_equal(x, y)
    for x, y in zip(operands, before):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gufunc", GUFUNCS)
def test_the_public_function_answers_where_numpy_lacks_the_gufunc(rng, monkeypatch, gufunc, dtype):
    operands = _operands(rng, gufunc, (2,), dtype)
    expected = numpy_linalg(gufunc, dtype)(*operands)
    monkeypatch.setattr(_numpy_linalg, "_umath_linalg", None)
    got = numpy_linalg(gufunc, dtype)(*operands)
    for x, y in zip(got, expected):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "gufunc, matrix",
    [
        ("solve", np.diag([1.0, 0.0, 2.0])),
        ("inv", np.diag([1.0, 0.0, 2.0])),
        ("cholesky_lo", np.diag([1.0, -1.0, 2.0])),
        ("cholesky_up", np.diag([1.0, -1.0, 2.0])),
        ("eigvalsh_lo", np.diag([1.0, np.nan, 2.0])),
        ("svd_f", np.diag([1.0, np.nan, 2.0])),
        ("svd_s", np.diag([1.0, np.nan, 2.0])),
        ("svd", np.diag([1.0, np.nan, 2.0])),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_failing_matrix_raises_numpys_error(gufunc, matrix, dtype):
    operands = (matrix.astype(dtype),) + ((np.ones((3, 1), dtype),) if gufunc == "solve" else ())
    with pytest.raises(np.linalg.LinAlgError) as expected:
        _public(gufunc)(*operands)
    with pytest.raises(np.linalg.LinAlgError) as got:
        numpy_linalg(gufunc, dtype)(*operands)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("gufunc", ["det", "slogdet"])
def test_a_singular_matrix_has_determinant_zero_and_no_warning(gufunc):
    with np.errstate(all="raise"):
        found = numpy_linalg(gufunc, np.float64)(np.zeros((3, 3)))
    np.testing.assert_array_equal(found, _public(gufunc)(np.zeros((3, 3))))


def test_the_callers_error_state_is_left_as_it_was():
    singular = np.zeros((3, 3))
    with np.errstate(all="warn", under="ignore"):
        before = np.geterr()
        numpy_linalg("inv", np.float64)(np.eye(3))
        with pytest.raises(np.linalg.LinAlgError):
            numpy_linalg("inv", np.float64)(singular)
        assert np.geterr() == before
        with pytest.warns(RuntimeWarning, match="invalid"):
            np.zeros(1) / np.zeros(1)  # the caller's 'warn' still holds


def test_calls_in_threads_each_get_their_own_error_state():
    """A failing call in one thread raises there only; the others' results stand."""
    compute = numpy_linalg("solve", np.float64)
    good, singular, b = 2 * np.eye(4), np.zeros((4, 4)), np.ones((4, 1))

    def call(i):
        try:
            return compute(singular if i % 2 else good, b)[0]
        except np.linalg.LinAlgError:
            return None

    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(call, range(200)))
    assert all(x is None for x in found[1::2])
    for x in found[::2]:
        np.testing.assert_array_equal(x, np.full((4, 1), 0.5))


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"numpy.linalg.{name} was called")

    return refused


def _gufunc_or_skip(gufunc):
    if not hasattr(_numpy_linalg._umath_linalg, gufunc):
        pytest.skip(f"this NumPy has no gufunc {gufunc!r}: the public function answers")


@pytest.mark.parametrize(
    "name, call",
    [
        ("solve", lambda a: blocksolve.solve(a, a[:, :2])),
        ("solve", lambda a: blocksolve.solve(a, a[:, 0])),
        ("inv", blocksolve.inv),
        ("det", blocksolve.det),
        ("slogdet", blocksolve.slogdet),
        ("cholesky", blocksolve.cholesky),
        ("cholesky", lambda a: blocksolve.cholesky(a, upper=True)),
        ("eigh", blocksolve.eigh),
        ("eigvalsh", lambda a: blocksolve.eigvalsh(a, UPLO="U")),
        ("svd", blocksolve.svd),
        ("svd", lambda a: blocksolve.svd(a, full_matrices=False)),
        ("svd", blocksolve.svdvals),
    ],
)
def test_one_matrix_calls_skip_numpy_linalgs_python_layer(rng, monkeypatch, name, call):
    """A call of one matrix goes to the gufunc, not through ``numpy.linalg.<name>``'s
    argument checks (which the plan has made)."""
    if name == "svd":
        _gufunc_or_skip("svd_f")  # NumPy 2.0 names its SVD gufuncs by shape
    a = random_spd(rng, (), 4, np.float64)
    expected = call(a)
    monkeypatch.setattr(np.linalg, name, _refuse(name))
    blocksolve.clear_cache()  # runners built afresh, with numpy.linalg.<name> refused
    try:
        got = call(a)
    finally:
        monkeypatch.undo()
        blocksolve.clear_cache()
    for x, y in zip(_as_tuple(got), _as_tuple(expected)):
        np.testing.assert_array_equal(x, y)


def _as_tuple(result):
    return tuple(result) if isinstance(result, tuple) else (result,)
