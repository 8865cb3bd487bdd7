"""Which calls run on NumPy's or SciPy's LAPACK instead of a generated kernel.

A call of one matrix always (what code written for NumPy or SciPy makes: it gets
the reference library's own result, bit for bit); large matrices always
(``lapack_from`` of the routine; the per-op modules test that); and, below
that, calls with fewer matrices than the routine's ``kernel_from_batch`` gives
for the size: a kernel's block holding few matrices is slower than LAPACK on
each.  Cases are derived from the routines' declarations:

* a call just below the threshold runs NumPy's function on the stack (its
  results bit for bit), one at the threshold runs the kernel (NumPy's
  function is not called) and agrees with NumPy to rounding;
* a failing matrix in a LAPACK call gets the ``info`` the kernel would give:
  LAPACK raises for the whole call, SciPy's wrapper redoes it per matrix.

The kernels' blocks are never wider than the matrices a kernel is given:
checked by results that are the same bit for bit whether a matrix is
computed alone or inside a batch that fills one block and part of another.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import assert_close, random_general, random_matrix, random_spd, well_conditioned
from blocksolve._compat import numpy as _numpy_linalg
from blocksolve.cpu import _backend as _routine
from blocksolve.cpu._backend import ROUTINES

# routine -> (blocksolve's call, NumPy's function it hands to, NumPy's call on the same stack)
_CALLS = {
    "potrf": (blocksolve.cholesky, "cholesky", np.linalg.cholesky),
    "gesv": (
        lambda a: blocksolve.solve(a, a[..., :2]),
        "solve",
        lambda a: np.linalg.solve(a, a[..., :2]),
    ),
    "geqrf": (blocksolve.qr, "qr", np.linalg.qr),
    "getri": (blocksolve.inv, "inv", np.linalg.inv),
    "getrf_det": (blocksolve.det, "det", np.linalg.det),
    "heev": (blocksolve.eigh, "eigh", np.linalg.eigh),
    "gels": (
        lambda a: blocksolve.lstsq(a, a[..., :2]),
        "lstsq",  # NumPy's takes no stacks
        lambda a: tuple(map(np.stack, zip(*(np.linalg.lstsq(x, x[:, :2]) for x in a)))),
    ),
}

# (routine, n, fewest matrices the kernel runs) for every finite threshold of the table
_THRESHOLDS = [
    (routine, n, fewest)
    for routine, declaration in ROUTINES.items()
    for n, fewest in declaration.kernel_from_batch
    if fewest != math.inf
]
_ALWAYS = [
    (routine, declaration.lapack_from)
    for routine, declaration in ROUTINES.items()
    if declaration.lapack_from != math.inf
]


def _spd_stack(rng, batch, n):
    return random_spd(rng, (batch,), n, np.float64)


@pytest.fixture
def numpy_linalg_calls(monkeypatch):
    """``[(name, operands), ...]``: the calls of NumPy's linalg the LAPACK runners make,
    of its public functions or, as ``numpy.linalg`` makes them, of its gufuncs (named by
    their public function); the runners are built afresh to see them."""
    calls = []

    def recording(name, function):
        def recorded(*args, **kwargs):
            calls.append((name, args))
            return function(*args, **kwargs)

        return recorded

    for _, name, _ in _CALLS.values():
        monkeypatch.setattr(np.linalg, name, recording(name, getattr(np.linalg, name)))
    gufuncs = {  # (a NumPy that lacks one has its runner call the public function)
        gufunc: recording(call.public, getattr(_numpy_linalg._umath_linalg, gufunc))
        for gufunc, call in _numpy_linalg.CALLS.items()
        if hasattr(_numpy_linalg._umath_linalg, gufunc)
    }
    monkeypatch.setattr(_numpy_linalg, "_umath_linalg", SimpleNamespace(**gufuncs))
    blocksolve.clear_cache()
    yield calls
    monkeypatch.undo()
    blocksolve.clear_cache()  # no later test keeps these runners


def _results(result):
    return tuple(result) if isinstance(result, tuple) else (result,)


def _dims(routine, n):
    return {"m": n, "n": n} if routine in ("geqrf", "gels", "gesvd") else {"n": n}


@pytest.mark.parametrize("routine, n, fewest", _THRESHOLDS)
def test_few_matrices_take_lapack_and_more_the_kernel(rng, numpy_linalg_calls, routine, n, fewest):
    ours, name, theirs = _CALLS[routine]
    below = _spd_stack(rng, fewest - 1, n)
    reference = _results(theirs(below))  # NumPy's own call on the same stack
    numpy_linalg_calls.clear()
    got = _results(ours(below))
    assert name in [called for called, _ in numpy_linalg_calls]
    for x, y in zip(got, reference):
        np.testing.assert_array_equal(x, y)

    at = _spd_stack(rng, fewest, n)
    reference = _results(theirs(at))
    numpy_linalg_calls.clear()
    got = _results(ours(at))
    assert name not in [called for called, _ in numpy_linalg_calls]
    if routine == "geqrf":  # Q and R agree up to the signs of R's rows; Q R is a
        q, r = got  # reconstruction either way
        assert_close(q @ r, at, np.float64, factor=10, n=n)
        assert_close(np.abs(r), np.abs(reference[1]), np.float64, factor=10, n=n)
    elif routine == "heev":
        assert_close(got[0], reference[0], np.float64, factor=10, n=n)
    elif routine == "gels":  # square: empty residuals
        for x, y in zip(got[::2], reference[::2]):  # x and s
            assert_close(x, y, np.float64, factor=100, n=n)
        np.testing.assert_array_equal(got[2], reference[2])
    else:
        for x, y in zip(got, reference):
            assert_close(x, y, np.float64, factor=10, n=n)


@pytest.mark.parametrize("routine, n", _ALWAYS)
def test_sizes_lapack_always_wins_take_it_for_any_batch(routine, n):
    assert ROUTINES[routine].fewest(_dims(routine, n)) == math.inf
    assert ROUTINES[routine].fewest(_dims(routine, n - 1)) < math.inf


def test_between_measured_sizes_the_smaller_sizes_threshold_holds():
    first_n, first_fewest = ROUTINES["gesv"].kernel_from_batch[0]
    gesv = ROUTINES["gesv"]
    assert gesv.fewest(_dims("gesv", first_n - 1)) == _routine.KERNEL_FROM_BATCH
    assert gesv.fewest(_dims("gesv", first_n + 1)) == first_fewest
    assert gesv.fewest(_dims("gesv", gesv.lapack_from)) == math.inf
    assert ROUTINES["getrs"].fewest(_dims("getrs", 40)) == _routine.KERNEL_FROM_BATCH


def _spd(rng, n, dtype):
    return random_spd(rng, (), n, dtype)


# One matrix of every public function: blocksolve's call and the reference library's.
_ONE_MATRIX = {
    "cholesky": (
        lambda a, b: blocksolve.cholesky(a),
        lambda a, b: np.linalg.cholesky(a),
    ),
    "cholesky-upper": (
        lambda a, b: blocksolve.cholesky(a, upper=True),
        lambda a, b: np.linalg.cholesky(a, upper=True),
    ),
    "cho_factor": (
        lambda a, b: blocksolve.cho_factor(a)[0],
        lambda a, b: scipy.linalg.cho_factor(a)[0],
    ),
    "cho_solve": (
        lambda a, b: blocksolve.cho_solve(scipy.linalg.cho_factor(a, lower=True), b),
        lambda a, b: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), b),
    ),
    "lu_factor": (
        lambda a, b: blocksolve.lu_factor(a),
        lambda a, b: scipy.linalg.lu_factor(a),
    ),
    "lu_solve": (
        lambda a, b: blocksolve.lu_solve(scipy.linalg.lu_factor(a), b, trans=1),
        lambda a, b: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=1),
    ),
    "solve": (lambda a, b: blocksolve.solve(a, b), lambda a, b: np.linalg.solve(a, b)),
    "solve-pos": (
        lambda a, b: blocksolve.solve(a, b, assume_a="pos"),
        lambda a, b: scipy.linalg.solve(a, b, assume_a="pos"),
    ),
    "solve_triangular": (
        lambda a, b: blocksolve.solve_triangular(a, b, lower=True, trans=2),
        lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True, trans=2),
    ),
    "solve_triangular-F": (
        lambda a, b: blocksolve.solve_triangular(np.asfortranarray(a), b),
        lambda a, b: scipy.linalg.solve_triangular(np.asfortranarray(a), b),
    ),
    "solve-vector": (
        lambda a, b: blocksolve.solve(a, b[:, 0]),
        lambda a, b: np.linalg.solve(a, b[:, 0]),
    ),
    "cho_solve-vector": (
        lambda a, b: blocksolve.cho_solve(scipy.linalg.cho_factor(a), b[:, 0]),
        lambda a, b: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b[:, 0]),
    ),
    "solve_triangular-vector": (
        lambda a, b: blocksolve.solve_triangular(a, b[:, 0], lower=True),
        lambda a, b: scipy.linalg.solve_triangular(a, b[:, 0], lower=True),
    ),
    "qr": (lambda a, b: blocksolve.qr(a), lambda a, b: np.linalg.qr(a)),
    "qr-raw": (lambda a, b: blocksolve.qr(a, mode="raw"), lambda a, b: np.linalg.qr(a, "raw")),
    "lstsq": (
        lambda a, b: blocksolve.lstsq(a[:, :3], b),
        lambda a, b: np.linalg.lstsq(a[:, :3], b),
    ),
    "eigh": (lambda a, b: blocksolve.eigh(a, UPLO="U"), lambda a, b: np.linalg.eigh(a, "U")),
    "eigvalsh": (lambda a, b: blocksolve.eigvalsh(a), lambda a, b: np.linalg.eigvalsh(a)),
    "inv": (lambda a, b: blocksolve.inv(a), lambda a, b: np.linalg.inv(a)),
    "det": (lambda a, b: blocksolve.det(a), lambda a, b: np.linalg.det(a)),
    "slogdet": (lambda a, b: blocksolve.slogdet(a), lambda a, b: np.linalg.slogdet(a)),
    "svd": (lambda a, b: blocksolve.svd(a), lambda a, b: np.linalg.svd(a)),
    "svd-tall": (
        lambda a, b: blocksolve.svd(a[:, :3], full_matrices=False),
        lambda a, b: np.linalg.svd(a[:, :3], full_matrices=False),
    ),
    "svdvals": (lambda a, b: blocksolve.svdvals(a), lambda a, b: np.linalg.svdvals(a)),
    "pinv": (lambda a, b: blocksolve.pinv(a), lambda a, b: np.linalg.pinv(a)),
    "matrix_rank": (
        lambda a, b: blocksolve.matrix_rank(a),
        lambda a, b: np.linalg.matrix_rank(a),
    ),
    "cond": (lambda a, b: blocksolve.cond(a), lambda a, b: np.linalg.cond(a)),
    "polar": (lambda a, b: blocksolve.polar(a), lambda a, b: scipy.linalg.polar(a)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("case", _ONE_MATRIX)
def test_one_matrix_is_the_reference_librarys_result_bit_for_bit(rng, case, dtype):
    """What client code written for NumPy or SciPy gets: the same LAPACK routine with the
    same arguments (eigenvector signs included)."""
    a = _spd(rng, 6, dtype)
    if case.startswith("solve_triangular"):
        a = np.tril(a)
    b = random_matrix(rng, (6, 2), dtype)
    ours, theirs = _ONE_MATRIX[case]
    got, want = _results(ours(a, b)), _results(theirs(a, b))
    # polar's SVD is numpy.linalg.svd's, in double precision for single (docs/differences.rst)
    to_the_bit = case != "polar" or dtype in (np.float64, np.complex128)
    if case == "lstsq":  # NumPy's rank is a Python int, its residuals a 1-D array
        got, want = got[:2] + got[3:], want[:2] + want[3:]
    assert len(got) == len(want)
    for x, y in zip(got, want):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.dtype, y.dtype)
        if to_the_bit:
            np.testing.assert_array_equal(x, y)
        else:
            assert_close(x, y, dtype, factor=10, n=6)


# Stacks of every public function on the CPU's LAPACK runners (blocksolve's own factors
# feed the solves: SciPy's factorisations take no stacks before 1.16).
_STACKED = {
    "cholesky": lambda a, b: blocksolve.cholesky(a),
    "cho_factor": lambda a, b: blocksolve.cho_factor(a)[0],
    "cho_solve": lambda a, b: blocksolve.cho_solve(blocksolve.cho_factor(a), b),
    "lu_factor": lambda a, b: blocksolve.lu_factor(a),
    "lu_solve": lambda a, b: blocksolve.lu_solve(blocksolve.lu_factor(a), b, trans=1),
    "solve": lambda a, b: blocksolve.solve(a, b),
    "solve-no-columns": lambda a, b: blocksolve.solve(a, b[..., :0]),
    "solve-pos": lambda a, b: blocksolve.solve(a, b, assume_a="pos"),
    "solve_triangular": lambda a, b: blocksolve.solve_triangular(np.tril(a), b, lower=True),
    "qr": lambda a, b: blocksolve.qr(a),
    "lstsq": lambda a, b: blocksolve.lstsq(a[..., :3], b),
    "eigh": lambda a, b: blocksolve.eigh(a),
    "inv": lambda a, b: blocksolve.inv(a),
    "slogdet": lambda a, b: blocksolve.slogdet(a),
    "svd": lambda a, b: blocksolve.svd(a),
}


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("case", _STACKED)
def test_a_stack_on_lapack_is_its_matrices_one_by_one_bit_for_bit(rng, case, dtype):
    """A stack's LAPACK runner (NumPy's gufunc, or SciPy's call per matrix) and that of a
    call of one matrix (the matrix as it is, no batch axis) give the same results."""
    a = random_spd(rng, (3,), 6, dtype)
    a[1] = np.diag(np.diag(a[1]))  # a diagonal matrix among them
    b = random_matrix(rng, (3, 6, 2), dtype)
    call = _STACKED[case]
    previous = blocksolve.set_specialization("never")
    try:
        stacked = _results(call(a, b))
        alone = [_results(call(a[i], b[i])) for i in range(3)]
    finally:
        blocksolve.set_specialization(previous)
    for j, x in enumerate(stacked):
        np.testing.assert_array_equal(x, np.stack([result[j] for result in alone]))


@pytest.mark.parametrize("batch", [(1,), (1, 1)])
@pytest.mark.parametrize("case", _STACKED)
def test_a_stack_of_one_matrix_is_that_matrix_alone_bit_for_bit(rng, case, batch):
    """A stack of one matrix runs as that matrix alone (NumPy's call on the matrix, with
    none of a stack's handling), its results keeping the batch axes; a right-hand side
    without them broadcasts as in a stack."""
    a = random_spd(rng, batch, 6, np.complex128)
    b = random_matrix(rng, (6, 2), np.complex128)
    call = _STACKED[case]
    alone = _results(call(a.reshape(6, 6), b))
    for stacked in (_results(call(a, b)), _results(call(a, np.broadcast_to(b, (*batch, 6, 2))))):
        assert len(stacked) == len(alone)
        for x, y in zip(stacked, alone):
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == (*batch, *y.shape) and x.dtype == y.dtype
            np.testing.assert_array_equal(x.reshape(y.shape), y)


def test_a_stack_of_one_matrix_is_handed_to_numpy_as_its_matrix(numpy_linalg_calls):
    a = np.eye(3)[None] * 2
    for _ in range(2):  # the first call plans, the second reuses the plan
        np.testing.assert_array_equal(blocksolve.inv(a), np.eye(3)[None] / 2)
    assert [(name, x.shape, x.base is a) for name, (x,) in numpy_linalg_calls] == [
        ("inv", (3, 3), True)
    ] * 2


# One failing matrix of each kind: blocksolve's call (keywords: return_info, errors; its
# first result is compared), the matrix.
_FAILING = {
    "cholesky": (
        lambda a, **kw: blocksolve.cholesky(a, **kw),
        lambda rng: np.diag([1.0, 2.0, -3.0, 4.0]),
    ),
    "cholesky-nan": (
        lambda a, **kw: blocksolve.cholesky(a, **kw),
        lambda rng: np.where(np.eye(4, dtype=bool), np.array([1.0, np.nan, 1.0, 1.0]), 0.0),
    ),
    "cho_factor": (
        lambda a, **kw: blocksolve.cho_factor(a, check_finite=False, **kw),
        lambda rng: np.diag([1.0, 2.0, -3.0, 4.0]),
    ),
    "cho_solve": (
        lambda a, **kw: blocksolve.cho_solve((a, False), np.ones(4), **kw),
        lambda rng: np.triu(np.ones((4, 4))) - np.diag([0.0, 0.0, 1.0, 0.0]),
    ),
    "solve": (lambda a, **kw: blocksolve.solve(a, np.ones(4), **kw), lambda rng: _rank_three(rng)),
    "solve-pos": (
        lambda a, **kw: blocksolve.solve(a, np.ones((4, 2)), assume_a="pos", **kw),
        lambda rng: np.diag([1.0, -2.0, 3.0, 4.0]),
    ),
    "inv": (lambda a, **kw: blocksolve.inv(a, **kw), lambda rng: _rank_three(rng)),
    "lu_factor": (lambda a, **kw: blocksolve.lu_factor(a, **kw), lambda rng: _rank_three(rng)),
    "solve_triangular": (
        lambda a, **kw: blocksolve.solve_triangular(a, np.ones(4), lower=True, **kw),
        lambda rng: np.tril(np.ones((4, 4))) - np.diag([0.0, 1.0, 0.0, 0.0]),
    ),
    "lstsq": (
        lambda a, **kw: blocksolve.lstsq(a, np.ones(4), **kw),
        lambda rng: np.full((4, 4), np.nan),
    ),
    "svd": (lambda a, **kw: blocksolve.svdvals(a, **kw), lambda rng: np.full((4, 4), np.nan)),
    "svd-inf": (
        lambda a, **kw: blocksolve.svdvals(a, **kw),
        lambda rng: np.diag([4.0, 3.0, np.inf, 1.0]),
    ),
}


def _rank_three(rng):
    a = random_general(rng, (), 4, np.float64)
    a[:, 2] = 0  # U[2, 2] is exactly zero
    return a


@pytest.mark.parametrize("case", _FAILING)
def test_a_failing_matrix_alone_gets_what_it_gets_in_a_stack(rng, case):
    """The info of one failing matrix, and its results, as the stack's LAPACK runner and
    the kernels give them; each policy acts on it."""
    call, make = _FAILING[case]
    bad = make(rng)
    stack = np.stack([np.eye(4) * 2 + np.triu(np.ones((4, 4)), 1).T * 0.1, bad])
    first = lambda result: result[0] if isinstance(result, tuple) else result  # noqa: E731
    previous = blocksolve.set_specialization("never")
    try:
        result_alone, info_alone = call(bad, return_info=True)
        results, info = call(stack, return_info=True)
        result_one, info_one = call(bad[None], return_info=True)  # a stack of one
        with pytest.raises(blocksolve.LinAlgError) as raised_one:
            call(bad[None], errors="raise")
        filled_alone, filled = first(call(bad, errors="nan")), first(call(stack, errors="nan"))
        with pytest.raises(blocksolve.LinAlgError) as raised:
            call(bad, errors="raise")
        with pytest.warns(blocksolve.LinAlgWarning):
            call(bad, errors="warn")
    finally:
        blocksolve.set_specialization(previous)
    assert info_alone.shape == () and info_alone.dtype == np.int32
    assert info_alone == info[1] != 0 and info[0] == 0
    assert info_one.shape == (1,) and info_one.dtype == np.int32 and info_one[0] == info_alone
    assert raised_one.value.indices == [(0,)]
    np.testing.assert_array_equal(first(result_alone), first(results)[1])
    np.testing.assert_array_equal(first(result_one)[0], first(result_alone))
    np.testing.assert_array_equal(filled_alone, filled[1])
    if case != "lu_factor":  # (a singular LU factor is a result, as in SciPy: kept)
        assert np.isnan(filled_alone).all()
    assert raised.value.info == info_alone


def test_one_matrix_is_handed_to_numpy_as_it_is(numpy_linalg_calls):
    """A call of one matrix gives NumPy's gufunc the caller's array, not a stack of one
    (a NumPy call on a stack of one matrix costs the same; the stack's handling does not)."""
    a = np.eye(3) * 2
    for _ in range(2):  # the first call plans, the second reuses the plan
        np.testing.assert_array_equal(blocksolve.inv(a), np.eye(3) / 2)
    assert [(name, x is a) for name, (x,) in numpy_linalg_calls] == [("inv", True)] * 2


def test_one_matrix_compiles_nothing(rng, monkeypatch):
    """A program calling on single matrices never starts a kernel compilation."""
    from blocksolve._cache import Memo
    from blocksolve.cpu import _compiled

    monkeypatch.setattr(_compiled, "_ENTRIES", Memo("test-compilations", register=False))
    previous = blocksolve.set_specialization("background")
    try:
        for case, (ours, _) in _ONE_MATRIX.items():
            a = _spd(rng, 5, np.float64)
            ours(np.tril(a) if case.startswith("solve_triangular") else a, np.ones((5, 1)))
    finally:
        blocksolve.set_specialization(previous)
    assert _compiled.entries() == []


@pytest.mark.parametrize(
    "call, failing",
    [
        (lambda a: blocksolve.cholesky(a, return_info=True), [0, 3]),
        (lambda a: blocksolve.cho_factor(a, return_info=True, check_finite=False), [0, 3]),
        (lambda a: blocksolve.solve(a, a[..., :1], assume_a="pos", return_info=True), [0, 3]),
        (lambda a: blocksolve.eigvalsh(a, return_info=True), [0, 0]),
    ],
    ids=["cholesky", "cho_factor", "solve-pos", "eigvalsh"],
)
def test_lapack_and_the_kernel_give_the_same_verdicts(rng, call, failing):
    """A NaN fails a Cholesky factorisation on both paths (LAPACK lets it through, the op
    table says it fails); it fails no eigenvalue computation on either."""
    a = random_spd(rng, (2,), 4, np.float64)
    a[1, 2, 2] = np.nan
    previous = blocksolve.set_specialization("never")
    try:
        _, on_lapack = call(a)
    finally:
        blocksolve.set_specialization(previous)
    _, on_kernel = call(a)
    np.testing.assert_array_equal(on_lapack, failing)
    np.testing.assert_array_equal(on_kernel, failing)


def test_a_failing_matrix_in_a_lapack_sized_call_gets_the_kernels_info(rng):
    n, fewest = ROUTINES["gesv"].kernel_from_batch[0]
    a = random_general(rng, (fewest - 1,), n, np.float64)
    b = random_matrix(rng, (fewest - 1, n, 1), np.float64)
    a[1, :, 3] = 0  # column 3 of matrix 1: U[3, 3] is exactly zero
    x, info = blocksolve.solve(a, b, return_info=True)
    assert info[1] == 4 and np.count_nonzero(info) == 1
    good = np.delete(np.arange(fewest - 1), 1)
    assert_close(x[good], np.linalg.solve(a[good], b[good]), np.float64, factor=10, n=n)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        blocksolve.solve(a, b)


# Sizes below every LAPACK threshold of their routine: the kernels take any batch.
# qr and lstsq at 6: straight-line kernels on the specialised tier (blocks of 8).
@pytest.mark.kernel_tiers
@pytest.mark.parametrize(
    "n, call",
    [
        (11, lambda a: blocksolve.lu_factor(a)),
        (11, lambda a: blocksolve.qr(a)),
        (6, lambda a: blocksolve.qr(a)),
        (11, lambda a: blocksolve.lstsq(a, a[..., :1])),
        (6, lambda a: blocksolve.lstsq(a, a[..., :1])),
        (7, lambda a: blocksolve.eigh(a)),
        (11, lambda a: blocksolve.solve_triangular(a, a[..., :2], lower=True)),
    ],
    ids=["lu_factor", "qr", "qr-6", "lstsq", "lstsq-6", "eigh", "solve_triangular"],
)
def test_a_matrix_alone_and_in_a_part_filled_block_agree_bit_for_bit(
    rng, n, call, single_matrices_on_kernels
):
    """35 matrices: one block of 32 and one of 3 (the kernels' widest blocks), or of
    fewer where the size narrows them; each matrix alone is a block of one."""
    a = well_conditioned(rng, (35,), n, n, np.float64)
    a = a + np.swapaxes(a, -1, -2)  # symmetric, for eigh
    batched = _results(call(a))
    for i in (0, 31, 32, 34):
        alone = _results(call(a[i]))
        for x, y in zip(batched, alone):
            np.testing.assert_array_equal(x[i], y)


def test_lstsq_on_lapack_gives_residuals_also_for_rank_deficient_matrices(rng):
    """NumPy's lstsq leaves residuals empty for a rank-deficient matrix; blocksolve's are
    the squared norms of b - a x there too, on either runner."""
    (n, fewest), m = ROUTINES["gels"].kernel_from_batch[0], 20
    a = random_matrix(rng, (fewest - 1, m, n), np.float64)
    a[1, :, -1] = a[1, :, 0]  # rank n - 1
    b = random_matrix(rng, (fewest - 1, m, 2), np.float64)
    x, residuals, rank, s = blocksolve.lstsq(a, b)
    for i in range(fewest - 1):
        x_i, residuals_i, rank_i, s_i = np.linalg.lstsq(a[i], b[i])
        np.testing.assert_array_equal(x[i], x_i)
        np.testing.assert_array_equal(s[i], s_i)
        assert rank[i] == rank_i == (n - 1 if i == 1 else n)
        if i == 1:
            assert residuals_i.size == 0
            residuals_i = np.sum((b[i] - a[i] @ x_i) ** 2, axis=0)
        np.testing.assert_allclose(residuals[i], residuals_i, rtol=1e-12)
    kernel = blocksolve.lstsq(np.concatenate([a] * 2), np.concatenate([b] * 2))
    assert_close(kernel[1][1], residuals[1], np.float64, factor=100, n=m)


def test_lstsq_on_lapack_reports_a_non_finite_matrix(rng, capfd):
    n, fewest = ROUTINES["gels"].kernel_from_batch[0]
    a = random_general(rng, (fewest - 1,), n, np.float64)
    b = random_matrix(rng, (fewest - 1, n, 1), np.float64)
    a[2, 0, 0] = np.nan  # NumPy would raise "SVD did not converge" for the whole call
    (x, residuals, rank, s), info = blocksolve.lstsq(a, b, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 1] + [0] * (fewest - 4))
    assert_close(x[0], np.linalg.solve(a[0], b[0]), np.float64, factor=100, n=n)
    assert capfd.readouterr().out == ""  # not LAPACK's "On entry to DLASCL ..."


@pytest.fixture
def split_slices(monkeypatch):
    """Every call of more than one matrix is split across two threads."""
    from blocksolve.cpu import _jit

    monkeypatch.setattr(_jit, "num_threads", lambda: 2)
    monkeypatch.setattr(_jit, "_PARALLEL_WORK", 1)
    monkeypatch.setattr(_routine, "_PARALLEL_WORK", 1)


@pytest.mark.parametrize("routine", ["gesv", "geqrf", "getri", "gels"])
def test_lapack_calls_split_across_threads_give_numpys_results(rng, split_slices, routine):
    ours, _, theirs = _CALLS[routine]
    n = 64  # LAPACK for every batch
    a = _spd_stack(rng, 5, n)
    for x, y in zip(_results(ours(a)), _results(theirs(a))):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    ("name", "split_below"),
    [
        ("eigh", 32),
        ("eigvalsh", 64),
        ("svd", 48),
        ("eig", 96),
        ("qr", 96),
        ("det", 0),
        ("cholesky", 0),
        ("inv", 112),
        ("solve", 112),
    ],
)
def test_lapack_runs_a_batch_in_one_call_where_its_blas_runs_threads(
    rng, split_slices, monkeypatch, name, split_below
):
    """From the size at which the BLAS under NumPy's LAPACK runs threads within each
    matrix (0: every size, OpenBLAS's own xPOTRF and xGETRF), a batch is one call (split
    across blocksolve's threads as well, it ran slower than NumPy's); below it, a slice
    per thread.  NumPy's results either way."""
    splits = []

    def counted(compute, batch, *args, **kwargs):
        splits.append(batch)
        return in_chunks(compute, batch, *args, **kwargs)

    in_chunks = _routine.in_chunks
    monkeypatch.setattr(_routine, "in_chunks", counted)
    monkeypatch.setattr(_routine, "KERNEL_FROM_BATCH", 10**9)  # LAPACK for every batch
    blocksolve.clear_cache()  # runners built afresh, with that
    ours, theirs = getattr(blocksolve, name), getattr(np.linalg, name)
    if name == "solve":
        ours, theirs = (lambda a, f=f: f(a, a[..., :2]) for f in (ours, theirs))
    for n in (split_below - 8, split_below) if split_below else (4, 64):
        a = _spd_stack(rng, 3, n)
        splits.clear()
        for x, y in zip(_results(ours(a)), _results(theirs(a))):
            np.testing.assert_array_equal(x, y)
        assert bool(splits) == (n < split_below), n
    blocksolve.clear_cache()


def test_a_failing_matrix_in_a_split_lapack_call_gets_the_kernels_info(rng, split_slices):
    n = 64
    a = _spd_stack(rng, 5, n)
    a[3, :, 7] = 0  # singular: U's 8th diagonal entry is exactly zero
    ainv, info = blocksolve.inv(a, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 0, 8, 0])
    good = [0, 1, 2, 4]
    assert_close(ainv[good], np.linalg.inv(a[good]), np.float64, n=n)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize(
    "case",
    [
        "qr-complete",
        "qr-r",
        "qr-raw",
        "lstsq-tall",
        "lstsq-wide",
        "solve-vector",
        "slogdet",
        "eigvalsh",
    ],
)
def test_lapack_path_is_numpys_call_for_every_form(rng, dtype, case):
    """Below a threshold the call is NumPy's on the same stack, bit for bit, for every mode,
    shape and dtype (NumPy computes single precision in double and rounds)."""
    n = 24  # below every threshold there for 2 matrices
    a = random_matrix(rng, (2, n + 3, n), dtype)
    square = random_spd(rng, (2,), n, dtype)
    b = random_matrix(rng, (2, n), dtype)
    ours, theirs = {
        "qr-complete": (
            lambda: blocksolve.qr(a, mode="complete"),
            lambda: np.linalg.qr(a, mode="complete"),
        ),
        "qr-r": (lambda: blocksolve.qr(a, mode="r"), lambda: np.linalg.qr(a, mode="r")),
        "qr-raw": (lambda: blocksolve.qr(a, mode="raw"), lambda: np.linalg.qr(a, mode="raw")),
        "lstsq-tall": (
            lambda: blocksolve.lstsq(a, a[..., :2]),
            lambda: tuple(map(np.stack, zip(*(np.linalg.lstsq(x, x[:, :2]) for x in a)))),
        ),
        "lstsq-wide": (
            lambda: blocksolve.lstsq(np.swapaxes(a, -1, -2), b[..., None]),
            lambda: tuple(
                map(np.stack, zip(*(np.linalg.lstsq(x.T, y[:, None]) for x, y in zip(a, b))))
            ),
        ),
        "solve-vector": (
            lambda: blocksolve.solve(square, b[..., None])[..., 0],
            lambda: np.linalg.solve(square, b[..., None])[..., 0],
        ),
        "slogdet": (lambda: blocksolve.slogdet(square), lambda: np.linalg.slogdet(square)),
        "eigvalsh": (lambda: blocksolve.eigvalsh(square), lambda: np.linalg.eigvalsh(square)),
    }[case]
    got, reference = _results(ours()), _results(theirs())
    assert len(got) == len(reference)
    for x, y in zip(got, reference):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
