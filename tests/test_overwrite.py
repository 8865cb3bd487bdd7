"""``overwrite_a`` / ``overwrite_b``: the result goes into the caller's array exactly where
SciPy's does, and nowhere else.

Client code relies on it: scikit-learn's LARS and OMP call
``solve_triangular(L[:k, :k], L[k, :k], lower=True, overwrite_b=True)``, discard the
return value and read the solution back from ``L``.  Each case calls SciPy and
blocksolve on equal copies and compares whether the input changed, whether the
returned object is the input, and the values.  The one deliberate difference:
SciPy writes into a read-only array; blocksolve does not.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import blocksolve

RNG = np.random.default_rng(20261204)
N = 4
SPD = (lambda x: x @ x.T + N * np.eye(N))(RNG.standard_normal((N, N)))
LOWER = np.tril(RNG.standard_normal((N, N))) + N * np.eye(N)


def _read_only(x):
    x.setflags(write=False)
    return x


# name -> make(): the right-hand side (or matrix) passed with overwrite_*=True.
LAYOUTS = {
    "vector": lambda: RNG.standard_normal(N),
    "F 2-D": lambda: np.asfortranarray(RNG.standard_normal((N, 3))),
    "C 2-D": lambda: RNG.standard_normal((N, 3)),
    "column": lambda: RNG.standard_normal((N, 1)),
    "strided vector": lambda: RNG.standard_normal(2 * N)[::2],
    "row of a matrix": lambda: RNG.standard_normal((N + 1, N))[2],
    "float32": lambda: RNG.standard_normal(N).astype(np.float32),
    "int": lambda: np.arange(1, N + 1),
    "batched": lambda: RNG.standard_normal((2, N, 3)),
    "batched F": lambda: np.asfortranarray(
        RNG.standard_normal((2, N, 3)).transpose(1, 2, 0)
    ).transpose(2, 0, 1),
    "list": lambda: [1.0] * N,
}

# function -> call(module, x): the function with ``x`` as the overwritable argument.
CALLS = {
    "solve_triangular": lambda m, x: m.solve_triangular(LOWER, x, lower=True, overwrite_b=True),
    "cho_solve": lambda m, x: m.cho_solve(scipy.linalg.cho_factor(SPD), x, overwrite_b=True),
    "lu_solve": lambda m, x: m.lu_solve(scipy.linalg.lu_factor(SPD), x, overwrite_b=True),
    "cho_factor": lambda m, x: m.cho_factor(x, overwrite_a=True)[0],
    "lu_factor": lambda m, x: m.lu_factor(x, overwrite_a=True)[0],
}
FACTOR_INPUTS = {  # the matrix a factorisation may overwrite
    "C": lambda: SPD.copy(),
    "F": lambda: np.asfortranarray(SPD),
    "float32 F": lambda: np.asfortranarray(SPD, np.float32),
    "batched": lambda: np.stack([SPD, SPD]),
}


def _cases():
    for name in ("solve_triangular", "cho_solve", "lu_solve"):
        for layout in LAYOUTS:
            yield pytest.param(name, LAYOUTS[layout], id=f"{name}-{layout}")
    for name in ("cho_factor", "lu_factor"):
        for layout, make in FACTOR_INPUTS.items():
            yield pytest.param(name, make, id=f"{name}-{layout}")


def _copy(x):
    return list(x) if isinstance(x, list) else x.copy(order="K")


@pytest.mark.parametrize(("name", "make"), list(_cases()))
def test_overwritten_exactly_where_scipy_overwrites(name, make):
    original = make()
    theirs, ours = _copy(original), _copy(original)
    expected = CALLS[name](scipy.linalg, theirs)
    got = CALLS[name](blocksolve, ours)

    scipy_wrote = not np.array_equal(np.asarray(theirs), np.asarray(original))
    we_wrote = not np.array_equal(np.asarray(ours), np.asarray(original))
    assert we_wrote == scipy_wrote
    assert (got is ours) == (expected is theirs)
    # A batch runs on blocksolve's kernels, a single matrix on SciPy's LAPACK, as SciPy.
    np.testing.assert_allclose(got, expected, rtol=1e-5 if got.dtype == np.float32 else 1e-10)
    if we_wrote:
        np.testing.assert_array_equal(ours, got)


@pytest.mark.parametrize("name", ["solve_triangular", "cho_solve", "lu_solve"])
def test_read_only_arrays_are_never_written(name):
    """SciPy writes into a read-only Fortran-ordered array; blocksolve honours the flag."""
    b = _read_only(RNG.standard_normal(N))
    before = b.copy()
    x = CALLS[name](blocksolve, b)
    np.testing.assert_array_equal(b, before)
    assert x is not b


def test_lars_style_cholesky_update_reads_the_solution_back():
    """The scikit-learn pattern: solve into a row of ``L`` and use ``L`` afterwards."""
    L = np.zeros((N + 1, N + 1))
    L[:N, :N] = LOWER
    L[N, :N] = RNG.standard_normal(N)
    want = scipy.linalg.solve_triangular(LOWER, L[N, :N].copy(), lower=True)
    blocksolve.solve_triangular(L[:N, :N], L[N, :N], lower=1, overwrite_b=True)
    np.testing.assert_array_equal(L[N, :N], want)


@pytest.mark.parametrize("name", ["solve_triangular", "cho_solve", "lu_solve"])
def test_without_the_flag_nothing_is_written(name):
    b = RNG.standard_normal(N)
    before = b.copy()
    call = {
        "solve_triangular": lambda: blocksolve.solve_triangular(LOWER, b, lower=True),
        "cho_solve": lambda: blocksolve.cho_solve(scipy.linalg.cho_factor(SPD), b),
        "lu_solve": lambda: blocksolve.lu_solve(scipy.linalg.lu_factor(SPD), b),
    }[name]
    assert call() is not b
    np.testing.assert_array_equal(b, before)
