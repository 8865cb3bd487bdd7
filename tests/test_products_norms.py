"""The rest of numpy.linalg: products, views, norms, matrix_power, multi_dot, tensor functions."""

import inspect

import numpy as np
import pytest

import blocksolve
from _helpers import DTYPES, assert_close, random_general

DELEGATED = (
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "cross",
    "trace",
    "diagonal",
    "matrix_transpose",
    "vector_norm",
)


def test_every_numpy_linalg_and_array_api_name_is_provided():
    assert [name for name in np.linalg.__all__ if not hasattr(blocksolve, name)] == []
    assert blocksolve.linalg.NOT_PROVIDED == ()
    for name in blocksolve.linalg.STANDARD:
        assert callable(getattr(blocksolve.linalg, name)), name


@pytest.mark.parametrize("name", DELEGATED)
def test_delegated_functions_are_numpys_on_numpy_arrays(rng, name):
    function = getattr(blocksolve, name)
    assert inspect.signature(function) == inspect.signature(getattr(np.linalg, name))
    x = rng.standard_normal((4, 3, 3))
    arguments = {
        "matmul": (x, x),
        "tensordot": (x, x.T),
        "vecdot": (x, x),
        "outer": (x[0, 0], x[1, 1]),
        "cross": (x, x[::-1]),
        "trace": (x,),
        "diagonal": (x,),
        "matrix_transpose": (x,),
        "vector_norm": (x,),
    }[name]
    before = [a.copy() for a in arguments]
    np.testing.assert_array_equal(function(*arguments), getattr(np.linalg, name)(*arguments))
    for a, b in zip(arguments, before):
        np.testing.assert_array_equal(a, b)
    assert getattr(blocksolve.linalg, name) is function


def test_delegated_functions_keep_dask_arrays_lazy(rng):
    da = pytest.importorskip("dask.array")
    x = rng.standard_normal((6, 3, 3))
    lazy = da.from_array(x, chunks=(2, 3, 3))
    for name, args, expected in [
        ("matmul", (lazy, lazy), x @ x),
        ("trace", (lazy,), np.linalg.trace(x)),
        ("diagonal", (lazy,), np.linalg.diagonal(x)),
        ("vector_norm", (lazy,), np.linalg.vector_norm(x)),
    ]:
        result = getattr(blocksolve, name)(*args)
        assert isinstance(result, da.Array), name
        np.testing.assert_allclose(result.compute(), expected, rtol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [-5, -3, -2, -1, 0, 1, 2, 3, 4, 7])
def test_matrix_power_matches_numpy(rng, dtype, n):
    a = random_general(rng, (5,), 4, dtype) / 4
    before = a.copy()
    result = blocksolve.matrix_power(a, n)
    expected = np.linalg.matrix_power(a, n)
    assert result.dtype == expected.dtype and result.shape == a.shape
    assert_close(result, expected, dtype, factor=20 * abs(n) + 10, n=4)
    np.testing.assert_array_equal(a, before)
    one = np.stack([blocksolve.matrix_power(m, n) for m in a])
    assert_close(result, one, dtype, factor=20 * abs(n) + 10, n=4)


@pytest.mark.kernel_tiers  # also on the size-specialised kernels (see conftest)
@pytest.mark.parametrize("dtype", DTYPES)
def test_negative_matrix_power_of_a_stack_runs_the_kernel(rng, dtype, monkeypatch):
    # A stack of 32 or more: inv, then the inverses' powers on blocksolve's kernel, in
    # NumPy's order of products; the same matrices as NumPy's products of those inverses.
    from blocksolve.ops import products

    ran = []
    run = products.power_in_place
    monkeypatch.setattr(products, "power_in_place", lambda *a: ran.append(run(*a)) or ran[-1])
    for size in (1, 3, 5):
        a = random_general(rng, (4, 9), size, dtype) / size
        before = a.copy()
        inverse = blocksolve.inv(a)
        for n in (-2, -3, -4, -5, -6, -7, -11):
            result = blocksolve.matrix_power(a, n)
            expected = np.linalg.matrix_power(inverse, -n)
            assert result.dtype == expected.dtype and result.shape == a.shape
            assert_close(result, expected, dtype, factor=10 * abs(n), n=size)
            one = [blocksolve.matrix_power(m, n) for m in a.reshape(-1, size, size)]
            assert_close(result, np.reshape(one, a.shape), dtype, factor=30 * abs(n), n=size)
        np.testing.assert_array_equal(a, before)
    assert ran == [True] * 21


def test_matrix_power_off_the_kernel_is_numpy_s_to_the_bit(rng, monkeypatch):
    # Positive powers, stacks of fewer than 32, matrices over 8x8, the 'never' mode and a
    # kernel still compiling in the background: NumPy's products of blocksolve's inverses.
    from blocksolve.cpu import _compiled
    from blocksolve.cpu.kernels import products

    a = random_general(rng, (products.FEWEST,), 4, np.float64) / 4
    for n in (2, 3, 5, 6):
        np.testing.assert_array_equal(blocksolve.matrix_power(a, n), np.linalg.matrix_power(a, n))
    cube = np.linalg.matrix_power
    few = a[: products.FEWEST - 1]
    np.testing.assert_array_equal(blocksolve.matrix_power(few, -3), cube(blocksolve.inv(few), 3))
    large = random_general(rng, (products.FEWEST,), 9, np.float64) / 9
    np.testing.assert_array_equal(
        blocksolve.matrix_power(large, -3), cube(blocksolve.inv(large), 3)
    )
    previous = _compiled.set_specialization("never")
    try:
        np.testing.assert_array_equal(blocksolve.matrix_power(a, -3), cube(blocksolve.inv(a), 3))
    finally:
        _compiled.set_specialization(previous)

    def compiling(*args):
        raise _compiled.NotReady

    monkeypatch.setattr(products, "launch", compiling)
    np.testing.assert_array_equal(blocksolve.matrix_power(a, -5), cube(blocksolve.inv(a), 5))


@pytest.mark.parametrize(
    ("x_dtype", "y_dtype"),
    [(np.float64, np.float64), (np.complex64, np.complex64), (np.int32, np.float32)],
)
def test_matmul_of_stacks_is_numpy_s(rng, x_dtype, y_dtype):
    # Stacks, broadcast stacks, 2-d operands and other layouts: NumPy's products, dtype
    # and errors, the inputs untouched.
    x = (rng.standard_normal((40, 5, 7)) * 4).astype(x_dtype)
    y = (rng.standard_normal((40, 7, 6)) * 4).astype(y_dtype)
    before = x.copy(), y.copy()
    for left, right in [(x, y), (x, y[:1]), (x[0], y), (np.asfortranarray(x), y)]:
        result = blocksolve.matmul(left, right)
        expected = np.linalg.matmul(left, right)
        assert result.dtype == expected.dtype and result.shape == expected.shape
        np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(y, before[1])
    with pytest.raises(ValueError, match="mismatch"):
        blocksolve.matmul(x, x)


def test_matrix_power_edge_cases():
    a = np.arange(8).reshape(2, 2, 2)
    assert blocksolve.matrix_power(a, 1) is a
    np.testing.assert_array_equal(blocksolve.matrix_power(a, 5), np.linalg.matrix_power(a, 5))
    assert blocksolve.matrix_power(a, 3).dtype == a.dtype
    identity = blocksolve.matrix_power(a, 0)
    assert identity.dtype == a.dtype and (identity == np.eye(2)).all()
    assert blocksolve.matrix_power(np.eye(3), np.int64(-2)).dtype == np.float64
    for empty in (np.zeros((0, 3, 3)), np.zeros((10, 0, 0)), np.zeros((2, 0, 5, 5))):
        for n in (-3, 2):
            result = blocksolve.matrix_power(empty, n)
            assert result.shape == empty.shape and result.dtype == np.float64
    with pytest.raises(TypeError, match="exponent must be an integer"):
        blocksolve.matrix_power(a, 1.5)
    with pytest.raises(blocksolve.LinAlgError, match="square"):
        blocksolve.matrix_power(np.ones((2, 3)), 2)
    with pytest.raises(blocksolve.LinAlgError, match="at least two-dimensional"):
        blocksolve.matrix_power(np.ones(3), 2)
    with pytest.raises(blocksolve.LinAlgError, match="[Ss]ingular"):
        blocksolve.matrix_power(np.stack([np.eye(2), np.zeros((2, 2))]), -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", [2, -2, "nuc"])
def test_singular_value_norms_match_numpy(rng, dtype, order):
    x = random_general(rng, (3, 2), 4, dtype)[..., :3]  # (3, 2, 4, 3)
    for axis in [(-2, -1), (1, 3), (3, 0)]:
        for keepdims in (False, True):
            expected = np.linalg.norm(x, order, axis, keepdims)
            result = blocksolve.norm(x, order, axis, keepdims)
            assert result.shape == expected.shape
            assert result.dtype == expected.dtype
            assert_close(result, expected, dtype, factor=10, n=4)
    one = blocksolve.norm(x[0, 0], order)
    assert np.ndim(one) == 0
    assert_close(one, np.linalg.norm(x[0, 0], order), dtype, factor=10, n=4)
    assert_close(
        blocksolve.matrix_norm(x, ord=order), np.linalg.matrix_norm(x, ord=order), dtype, 10, 4
    )


def test_other_norms_are_numpys(rng):
    x = rng.standard_normal((3, 4, 5))
    for order in [None, "fro", 1, -1, np.inf, -np.inf]:
        for axis in [(-2, -1), (2, 0)]:
            expected = np.linalg.norm(x, order, axis)
            np.testing.assert_array_equal(blocksolve.norm(x, order, axis), expected)
    for order in [None, 0, 1, 2, 3.5, -1, np.inf]:
        np.testing.assert_array_equal(
            blocksolve.norm(x, order, axis=1), np.linalg.norm(x, order, axis=1)
        )
    assert blocksolve.norm(np.arange(4)) == np.linalg.norm(np.arange(4))
    assert blocksolve.norm([[3, 0], [0, 4]], 2) == 4.0  # integers: the SVD in float64
    with pytest.raises(ValueError, match="Duplicate axes"):
        blocksolve.norm(x, 2, axis=(1, 1))
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        blocksolve.norm(x, 2)


def test_singular_value_norm_of_a_dask_stack_is_lazy(rng):
    da = pytest.importorskip("dask.array")
    x = rng.standard_normal((6, 4, 4))
    result = blocksolve.matrix_norm(da.from_array(x, chunks=(3, 4, 4)), ord=2)
    assert isinstance(result, da.Array)  # dask.array.linalg.norm refuses ndim > 2 here
    assert_close(result.compute(), np.linalg.matrix_norm(x, ord=2), np.float64, 10, 4)


def test_multi_dot_matches_numpy_also_on_the_generic_path(rng):
    da = pytest.importorskip("dask.array")
    arrays = [
        rng.standard_normal(10),
        rng.standard_normal((10, 30)),
        rng.standard_normal((30, 5)),
        rng.standard_normal((5, 8)),
        rng.standard_normal(8),
    ]
    expected = np.linalg.multi_dot(arrays)
    np.testing.assert_allclose(blocksolve.multi_dot(arrays), expected, rtol=1e-13)
    for first, last in [(0, 5), (1, 5), (0, 4), (1, 4)]:
        chosen = arrays[first:last]
        lazy = [da.from_array(x) for x in chosen]
        np.testing.assert_allclose(
            blocksolve.multi_dot(lazy).compute(), np.linalg.multi_dot(chosen), rtol=1e-13
        )
    with pytest.raises(ValueError, match="at least two"):
        blocksolve.multi_dot([da.from_array(arrays[1])])
    with pytest.raises(blocksolve.LinAlgError, match="two-dimensional"):
        blocksolve.multi_dot([da.ones((2, 2)), da.ones((2, 2, 2)), da.ones((2, 2))])


def test_tensorsolve_and_tensorinv_match_numpy(rng):
    a = rng.standard_normal((6, 2, 3))
    b = rng.standard_normal(6)
    before = a.copy()
    np.testing.assert_allclose(
        blocksolve.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-12
    )
    np.testing.assert_array_equal(a, before)
    a = rng.standard_normal((2, 3, 6))
    b = rng.standard_normal(6)
    np.testing.assert_allclose(
        blocksolve.tensorsolve(a, b, axes=(0, 1)),
        np.linalg.tensorsolve(a, b, axes=(0, 1)),
        rtol=1e-12,
    )
    t = rng.standard_normal((4, 6, 8, 3))
    for tensor, ind in [(t, 2), (rng.standard_normal((6, 2, 3)), 1)]:
        np.testing.assert_allclose(
            blocksolve.tensorinv(tensor, ind=ind), np.linalg.tensorinv(tensor, ind=ind), rtol=1e-10
        )
    with pytest.raises(blocksolve.LinAlgError, match="prod"):
        blocksolve.tensorsolve(rng.standard_normal((6, 2, 2)), b)
    with pytest.raises(ValueError, match="Invalid ind"):
        blocksolve.tensorinv(t, ind=0)
    with pytest.raises(blocksolve.LinAlgError):
        blocksolve.tensorinv(np.zeros((2, 2, 2, 2)))
