"""The fast path: a call whose signature (op, options, and per array its type,
shape, dtype and strides) has been seen reuses the plan of the first call,
skipping the normalisation.  It must behave exactly as the full path: same
results bit for bit, same errors and warnings, same checks of the values.
"""

import warnings

import numpy as np
import pytest

import blocksolve
from _helpers import OP_NAMES, OPS, call, layouts, operands
from blocksolve import _execute

FAILURE_POLICIES = [
    {},
    {"errors": "raise"},
    {"errors": "warn"},
    {"errors": "nan"},
    {"errors": "ignore"},
    {"return_info": True},
]


def outcome(function):
    """``(result, error, warnings)`` of ``function()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = function(), None
        except Exception as exc:  # noqa: BLE001 - the exception is what is compared
            result, error = None, (type(exc), str(exc), getattr(exc, "indices", None))
    return result, error, [(w.category, str(w.message)) for w in caught]


def full_then_fast(function):
    """The outcome of ``function()`` with no remembered plan, then again with its plan."""
    _execute.PLANS.clear()
    first = outcome(function)
    assert len(_execute.PLANS), "the first call left no plan"
    second = outcome(function)
    return first, second


def assert_identical(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_identical(x, y)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def assert_same_outcome(first, second):
    (result1, error1, warned1), (result2, error2, warned2) = first, second
    assert error2 == error1
    assert warned2 == warned1
    assert_identical(result1, result2)


# Ops for which a zero matrix is no failure: QR, det and slogdet never fail, and the
# eigen-decompositions fail only when the iteration does not converge.
_ZERO_IS_NO_FAILURE = {"qr", "det", "slogdet", "eigh", "eigvalsh"}


def with_failure(op, args):
    """Matrix 1 of the batch zeroed (lstsq, svd, eig, eigvals: a NaN in it): a failure for
    every op but those above."""
    args = [x.copy() for x in args]
    args[0][1] = np.nan if op.name in ("lstsq", "svd", "eig", "eigvals") else 0
    return args


@pytest.mark.parametrize("policy", FAILURE_POLICIES, ids=lambda p: str(p) or "default")
@pytest.mark.parametrize("name", OP_NAMES)
def test_same_results_and_failures(name, policy):
    op = OPS[name]
    args = with_failure(op, operands(op, batch=(3,)))
    first, second = full_then_fast(lambda: call(op, args, **policy))
    assert_same_outcome(first, second)
    if name in _ZERO_IS_NO_FAILURE:
        assert first[1] is None and not first[2]
    elif policy in ({}, {"errors": "raise"}) and name != "lu_factor":
        assert first[1][0] is blocksolve.LinAlgError and first[1][2] == [(1,)]


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "readonly"])
@pytest.mark.parametrize("name", OP_NAMES)
def test_layouts_and_inputs_untouched(name, layout):
    op = OPS[name]
    args = [layouts(x)[layout] if x.ndim == 3 else x for x in operands(op, batch=(3,))]
    before = [x.copy() for x in args]
    first, second = full_then_fast(lambda: call(op, args))
    assert_same_outcome(first, second)
    for x, y in zip(args, before):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", OP_NAMES)
def test_unbatched_vector_broadcast_and_cast(name):
    op = OPS[name]
    variants = [[x[0] for x in operands(op)]]  # one matrix: 0-d outputs become NumPy scalars
    if op.inputs[-1].vector_ok:
        single = [x[0] for x in operands(op)]
        variants.append(single[:-1] + [single[-1][:, 0]])  # a vector b
        batched = operands(op, batch=(2, 1))
        variants.append(batched[:-1] + [operands(op, batch=(4,))[-1]])  # broadcast batches
    as_int = [
        x if spec.kind == "index" else np.rint(4 * x).astype(np.int64)
        for spec, x in zip(op.inputs, operands(op, batch=(2,)))
    ]
    variants.append(as_int)
    for args in variants:
        assert_same_outcome(*full_then_fast(lambda args=args: call(op, args, errors="ignore")))


@pytest.mark.parametrize("name", OP_NAMES)
def test_empty_batch(name):
    op = OPS[name]
    args = operands(op, batch=(0, 2))
    assert_same_outcome(*full_then_fast(lambda: call(op, args)))


@pytest.mark.parametrize(
    "name", ["cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve_triangular"]
)
def test_check_finite_runs_on_every_call(name):
    op = OPS[name]
    good = operands(op, batch=(3,))
    bad = [x.copy() for x in good]
    bad[-1][2, 0, 0] = np.nan
    _execute.PLANS.clear()
    expected = outcome(lambda: call(op, bad))  # the full path
    assert expected[1][0] is ValueError and "must not contain infs or NaNs" in expected[1][1]
    call(op, good)  # remembers the plan of this signature
    assert_same_outcome(expected, outcome(lambda: call(op, bad)))
    assert call(op, bad, check_finite=False, errors="ignore") is not None  # only when asked


def test_pivot_range_is_checked_on_every_call():
    op = OPS["lu_solve"]
    lu, piv, b = operands(op, batch=(3,))
    bad = piv.copy()
    bad[1, 0] = 7
    _execute.PLANS.clear()
    expected = outcome(lambda: call(op, [lu, bad, b]))
    assert expected[1] == (
        ValueError,
        "lu_solve: piv must hold indices in [0, 3); got values from 0 to 7",
        None,
    )
    call(op, [lu, piv, b])
    assert_same_outcome(expected, outcome(lambda: call(op, [lu, bad, b])))


def test_the_fast_path_skips_normalisation(monkeypatch):
    a = operands(OPS["cholesky"], batch=(3,))[0]
    _execute.PLANS.clear()
    first = blocksolve.cholesky(a)

    monkeypatch.setattr(_execute, "to_native", no_normalising)
    monkeypatch.setattr(_execute, "bind_shapes", no_normalising)
    np.testing.assert_array_equal(blocksolve.cholesky(a), first)
    # Another signature (here: another rank) is normalised in full.
    with pytest.raises(AssertionError, match="normalised in full"):
        blocksolve.cholesky(a[None])


def no_normalising(*args):
    raise AssertionError("normalised in full")


def test_index_dtypes_are_checked_on_every_plan():
    """An empty pivot array of floats is accepted (SciPy's tests pass ``np.array([])``);
    the same dtype with entries is refused."""
    op = OPS["lu_solve"]
    lu, piv, b = operands(op, batch=(0,))
    _execute.PLANS.clear()
    call(op, [lu, piv.astype(np.float64), b])
    lu, piv, b = operands(op, batch=(2,))
    with pytest.raises(
        TypeError, match="lu_solve: piv must be an integer array; got dtype float64"
    ):
        call(op, [lu, piv.astype(np.float64), b])


def test_errors_argument_checked_on_every_call():
    a = np.eye(2)
    blocksolve.cholesky(a)
    with pytest.raises(ValueError, match="cholesky: errors must be one of"):
        blocksolve.cholesky(a, errors="loud")


def test_errstate_applies_to_remembered_plans():
    a = -np.eye(2)[None].repeat(2, axis=0)
    _execute.PLANS.clear()
    with pytest.raises(blocksolve.LinAlgError):
        blocksolve.cholesky(a)
    with blocksolve.errstate("nan"):
        assert np.isnan(blocksolve.cholesky(a)).all()


class Tagged(np.ndarray):
    """An ndarray subclass: converted on every call, never remembered."""


def test_only_plain_numpy_arrays_are_remembered():
    a = operands(OPS["cholesky"], batch=(3,))[0]
    op = OPS["cholesky"]
    options = {"lower": True, "clean": True}
    assert _execute._signature(op, {"a": a}, options) is not None
    assert _execute._signature(op, {"a": a.view(Tagged)}, options) is None
    assert _execute._signature(op, {"a": a.tolist()}, options) is None
    default = _execute._signature(op, {"a": a}, options)
    with blocksolve.use_device("cuda"):  # a GPU call is remembered apart
        assert _execute._signature(op, {"a": a}, options) not in (None, default)
    with blocksolve.use_device("cpu"):
        assert _execute._signature(op, {"a": a}, options) not in (None, default)
    plain = blocksolve.cholesky(a)
    for _ in range(2):
        tagged = blocksolve.cholesky(a.view(Tagged))
        assert type(tagged) is Tagged  # as numpy.linalg.cholesky returns it
        np.testing.assert_array_equal(tagged, plain)
        np.testing.assert_array_equal(blocksolve.cholesky(a.tolist()), plain)
