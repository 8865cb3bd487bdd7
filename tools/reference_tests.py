"""Run NumPy's and SciPy's own tests for blocksolve's functions with blocksolve swapped in.

The test modules are those of the *installed* NumPy and SciPy (their wheels
ship ``numpy/linalg/tests`` and ``scipy/linalg/tests``), so the tests always
match the versions blocksolve is compared with.  Nothing is copied or
patched on disk and neither library is modified: after pytest imports a
test module, every global of that module that refers to a swapped function
(``lu_factor`` imported from ``scipy.linalg``) is pointed at blocksolve's;
``linalg`` module globals are replaced by a proxy module that serves
blocksolve's function for the swapped names and the library's own for
everything else, and ``numpy``/``scipy`` module globals by a proxy whose
``linalg`` is that one (``np.linalg.cholesky`` in a test); test parameters
holding a swapped function (``@parametrize('fun', [linalg.lu_factor])``)
are replaced when the test is called.

Only the names whose reference blocksolve follows are swapped (``Suite.swapped``
of :data:`SUITES`): the NumPy names in NumPy's tests and the SciPy names in
SciPy's -- ``scipy.linalg.cholesky`` or ``scipy.linalg.qr`` have other
signatures and defaults than the NumPy functions of the same name.

Every deliberate difference is an expected failure listed in
:data:`EXPECTED_FAILURES`, or a tolerance listed in :data:`ADJUSTMENTS`, with
its reason (the same list is on ``docs/differences.rst``); an unexpected
failure *or an unexpected pass* makes the run fail.

Usage::

    python tools/reference_tests.py            # both suites, summary per suite
    python tools/reference_tests.py numpy -v   # one suite, extra pytest arguments
    python tools/reference_tests.py --original # the libraries' own functions (a control run)
    python tools/reference_tests.py --kernels  # every call on blocksolve's generated kernels
    python tools/reference_tests.py --kernels --specialised  # with the sizes baked in

Exit status 0 when every selected test passed or failed as expected and every
swapped-in function was called.  By default a call runs where a user's would:
one matrix on NumPy's or SciPy's LAPACK, more on blocksolve's CPU kernels
(those that take the sizes at run time, one per family and dtype, so a cold
kernel cache costs about a minute; each compiled before the call that needs
it).  ``--kernels`` runs single matrices on the kernels too, and
``--specialised`` compiles each pattern's size-specialised kernel, as
``pytest -m exhaustive`` does.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest


@dataclass(frozen=True)
class Suite:
    """Tests of one library for the functions blocksolve swaps in there.

    Attributes
    ----------
    package : str
        ``'numpy'`` or ``'scipy'``.
    library : str
        Module the swapped functions come from (``'numpy.linalg'``).
    swapped : tuple of str
        Function names replaced by blocksolve's.
    selection : tuple of str
        Node ids relative to the package directory (``'linalg/tests/x.py::TestA'``);
        a ``[`` suffix selects one parametrisation.
    uncalled : dict of str to str
        Swapped names the selected tests never call, with why (the check that every
        swapped function was called skips them).
    """

    package: str
    library: str
    swapped: tuple
    selection: tuple
    uncalled: dict = field(default_factory=dict)


SUITES = {
    "numpy": Suite(
        "numpy",
        "numpy.linalg",
        tuple(name for name in np.linalg.__all__ if name != "LinAlgError"),
        ("linalg/tests/test_linalg.py",),
        {
            "outer": "TestOuter calls it in its class body, when the module is imported",
            "vecdot": "no test of numpy/linalg/tests/test_linalg.py calls it",
        },
    ),
    "scipy": Suite(
        "scipy",
        "scipy.linalg",
        ("cho_factor", "cho_solve", "lu_factor", "lu_solve", "solve_triangular", "polar"),
        (
            "linalg/tests/test_decomp_polar.py",
            "linalg/tests/test_decomp_lu.py::TestLUFactor",
            "linalg/tests/test_decomp_lu.py::TestLUSolve",
            "linalg/tests/test_decomp_cholesky.py::TestChoFactor",
            "linalg/tests/test_decomp_cholesky.py::TestOverwrite::test_cho_factor",
            "linalg/tests/test_decomp_cholesky.py::TestOverwrite::test_cho_solve",
            "linalg/tests/test_basic.py::TestSolveTriangular",
            "linalg/tests/test_batch.py::TestBatch::test_ldl_cholesky[float32-fun_n_out2]",
            "linalg/tests/test_batch.py::TestBatch::test_ldl_cholesky[float64-fun_n_out2]",
            "linalg/tests/test_batch.py::TestBatch::test_ldl_cholesky[complex64-fun_n_out2]",
            "linalg/tests/test_batch.py::TestBatch::test_ldl_cholesky[complex128-fun_n_out2]",
            "linalg/tests/test_batch.py::TestBatch::test_schur_lu[float32-lu_factor]",
            "linalg/tests/test_batch.py::TestBatch::test_schur_lu[float64-lu_factor]",
            "linalg/tests/test_batch.py::TestBatch::test_schur_lu[complex64-lu_factor]",
            "linalg/tests/test_batch.py::TestBatch::test_schur_lu[complex128-lu_factor]",
            "linalg/tests/test_batch.py::TestBatch::test_lu_solve",
            "linalg/tests/test_batch.py::TestBatch::test_cho_solve",
            "linalg/tests/test_batch.py::TestBatch::test_solve_triangular",
            "linalg/tests/test_batch.py::TestBatch::test_polar_qr_rq[float32-polar]",
            "linalg/tests/test_batch.py::TestBatch::test_polar_qr_rq[float64-polar]",
            "linalg/tests/test_batch.py::TestBatch::test_polar_qr_rq[complex64-polar]",
            "linalg/tests/test_batch.py::TestBatch::test_polar_qr_rq[complex128-polar]",
        ),
    ),
}

# Node id (relative to the package directory, as in Suite.selection) -> why
# blocksolve deliberately differs.  Keep in step with docs/differences.rst.
EXPECTED_FAILURES = {}
# The same, for the run with every call on blocksolve's kernels (--kernels) only.
KERNEL_EXPECTED_FAILURES = {
    "linalg/tests/test_linalg.py::TestLstsq::test_rcond": (
        "an exactly rank-3 6x4 matrix with rcond=-1 (machine precision): NumPy's LAPACK gets "
        "5.4e-16 for the zero singular value, just above the cutoff 4.9e-16, and counts rank 4; "
        "the kernel gets 2.9e-16 and counts rank 3 (its one matrix alone runs LAPACK: rank 4)"
    ),
}


def _single_precision_rtol(check, rtol):
    """``check`` (an ``assert_allclose``) with at least ``rtol`` for single-precision
    arrays; double precision is checked as the test asks."""

    @functools.wraps(check)
    def checked(actual, desired, *args, **kwargs):
        if np.result_type(np.asarray(actual), np.asarray(desired)) in _SINGLE:
            kwargs["rtol"] = max(kwargs.get("rtol", 1e-7), rtol)
        return check(actual, desired, *args, **kwargs)

    return checked


_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))

# Deliberate differences that are a tolerance rather than a failure, per suite:
# (test-module global, the test module it applies to (None: every one), how to
# adjust it, what, why).  Keep in step with docs/differences.rst.
ADJUSTMENTS = {
    "numpy": [
        (
            "assert_almost_equal",
            None,
            lambda check: functools.partial(check, single_decimal=5),
            "single-precision results checked to 5 decimals instead of 6",
            "NumPy computes float32/complex64 input in double precision and rounds the results; "
            "blocksolve computes it in single precision, as SciPy and LAPACK's single-precision "
            "routines do, a few units in the last place from the double-precision answer",
        )
    ],
    "scipy": [
        (
            "assert_allclose",
            "scipy.linalg.tests.test_batch",
            lambda check: _single_precision_rtol(check, 1e-5),
            "single-precision batched results checked against a loop of single matrices to "
            "rtol 1e-5 instead of 1e-7",
            "a batch runs on blocksolve's kernels and each matrix alone on SciPy's LAPACK: "
            "they agree to rounding, not to the bit",
        )
    ],
}


def _blocksolve_functions(names, calls):
    """blocksolve's functions by name, counting their calls in ``calls``.

    The counts prove the swap took (a test module that kept the library's
    own function would pass for the wrong reason); ``functools.wraps`` keeps
    the signature, which SciPy's batch tests inspect.
    """
    import blocksolve

    def counted(name):
        function = getattr(blocksolve, name)

        @functools.wraps(function)
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return call

    return {name: counted(name) for name in names}


class SwapPlugin:
    """pytest plugin: select the suite's tests and swap blocksolve's functions in."""

    def __init__(self, name, suite, package_dir, swap=True):
        self.suite = suite
        self.package_dir = package_dir
        library = importlib.import_module(suite.library)
        self.library = library
        self.calls = dict.fromkeys(suite.swapped, 0)
        self.replacements = _blocksolve_functions(suite.swapped, self.calls) if swap else {}
        # original function object -> blocksolve's
        self.by_original = {
            id(getattr(library, name)): fn for name, fn in self.replacements.items()
        }
        self.proxy = self._proxy_module(library)
        self.root = importlib.import_module(suite.library.partition(".")[0])
        self.root_proxy = self._root_proxy(self.root, library.__name__.rpartition(".")[2])
        self.patched = set()
        self.adjustments = ADJUSTMENTS.get(name, []) if swap else []
        self.outcomes = {"passed": 0, "failed": 0, "xfailed": 0, "xpassed": 0, "skipped": 0}

    def _proxy_module(self, library):
        proxy = types.ModuleType(library.__name__)
        proxy.__dict__.update({k: v for k, v in vars(library).items() if not k.startswith("__")})
        proxy.__dict__.update(self.replacements)
        proxy.__getattr__ = lambda name: getattr(library, name)  # lazily loaded submodules
        return proxy

    def _root_proxy(self, root, attribute):
        """``root`` (numpy, scipy) as a module whose ``linalg`` is :attr:`proxy`, for
        tests that write ``np.linalg.cholesky``; everything else is forwarded."""
        proxy = types.ModuleType(root.__name__)
        proxy.__getattr__ = lambda name: getattr(root, name)
        setattr(proxy, attribute, self.proxy)
        return proxy

    def relative_id(self, nodeid_path, rest):
        return os.path.relpath(nodeid_path, self.package_dir).replace(os.sep, "/") + rest

    def _selected(self, item):
        path, _, rest = item.nodeid.partition("::")
        rel = self.relative_id(os.path.join(str(item.config.rootpath), path), "::" + rest)
        for wanted in self.suite.selection:
            if (
                rel == wanted
                or rel.startswith(wanted + ("" if wanted.endswith("]") else "::"))
                or (not wanted.endswith("]") and rel.startswith(wanted + "["))
            ):
                return rel
        return None

    def _patch_module(self, module):
        if module.__name__ in self.patched:
            return
        self.patched.add(module.__name__)
        for name, value in list(vars(module).items()):
            if value is self.library:
                setattr(module, name, self.proxy)
            elif value is self.root and self.replacements:
                setattr(module, name, self.root_proxy)
            elif id(value) in self.by_original and callable(value):
                setattr(module, name, self.by_original[id(value)])
        for name, where, adjust, _, _ in self.adjustments:
            if callable(getattr(module, name, None)) and where in (None, module.__name__):
                setattr(module, name, adjust(getattr(module, name)))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        keep, drop = [], []
        for item in items:
            rel = self._selected(item)
            if rel is None:
                drop.append(item)
                continue
            keep.append(item)
            reason = EXPECTED_FAILURES.get(rel)
            if reason and self.replacements:
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
            self._patch_module(item.module)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        for name, value in list(pyfuncitem.funcargs.items()):
            if callable(value) and id(value) in self.by_original:
                pyfuncitem.funcargs[name] = self.by_original[id(value)]
            elif isinstance(value, tuple) and any(id(v) in self.by_original for v in value):
                pyfuncitem.funcargs[name] = tuple(self.by_original.get(id(v), v) for v in value)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            if hasattr(report, "wasxfail"):
                key = "xpassed" if report.outcome == "passed" else "xfailed"
            else:
                key = report.outcome
            self.outcomes[key] += 1


def run_suite(name, extra_args=(), swap=True):
    """Run one suite; return ``(exit_code, outcomes)``."""
    suite = SUITES[name]
    package = importlib.import_module(suite.package)
    package_dir = os.path.dirname(package.__file__)
    files = sorted({s.split("::")[0] for s in suite.selection})
    plugin = SwapPlugin(name, suite, package_dir, swap=swap)
    args = [os.path.join(package_dir, f) for f in files]
    # The library's conftest supplies fixtures and markers its tests use; no
    # cache directory inside site-packages, no options from blocksolve's pyproject.
    args += [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rootdir",
        package_dir,
        "-c",
        os.devnull,
        "-W",
        "ignore::DeprecationWarning",
        *extra_args,
    ]
    code = int(pytest.main(args, plugins=[plugin]))
    never = [
        name
        for name, count in plugin.calls.items()
        if swap and count == 0 and name not in suite.uncalled
    ]
    if never and code == 0:
        print(
            f"reference tests: blocksolve's {', '.join(never)} never called: the swap did not take",
            file=sys.stderr,
        )
        code = 1
    return code, plugin.outcomes, plugin.calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "suites", nargs="*", choices=[*SUITES, []], default=[], help="suites to run (default: all)"
    )
    parser.add_argument(
        "--original",
        action="store_true",
        help="run the libraries' own functions (control run, no xfails)",
    )
    parser.add_argument(
        "--kernels",
        action="store_true",
        help="single matrices on blocksolve's generated CPU kernels too (by default they run "
        "on NumPy's or SciPy's LAPACK, as a user's call does)",
    )
    parser.add_argument(
        "--specialised",
        action="store_true",
        help="blocksolve's size-specialised CPU kernels instead of the run-time-size ones",
    )
    args, extra = parser.parse_known_args(argv)
    from blocksolve.cpu import _backend as _routine
    from blocksolve.cpu import _compiled, _jit

    _compiled.set_specialization("wait")
    _jit.use_run_time_sizes(not args.specialised)
    if args.kernels:
        _routine.KERNEL_FROM_BATCH = 1
        EXPECTED_FAILURES.update(KERNEL_EXPECTED_FAILURES)
    results = {}
    for name in args.suites or list(SUITES):
        results[name] = run_suite(name, extra, swap=not args.original)
    print()
    for name, (code, outcomes, calls) in results.items():
        counts = ", ".join(f"{v} {k}" for k, v in outcomes.items() if v)
        called = ", ".join(f"{k} {v}" for k, v in calls.items())
        print(
            f"reference tests, {name} {importlib.import_module(name).__version__}: "
            f"{counts} (pytest exit {code}); blocksolve calls: {called or 'none (control run)'}"
        )
        if not args.original:
            for *_, what, why in ADJUSTMENTS.get(name, []):
                print(f"  adjusted: {what} ({why})")
    return 0 if all(code == 0 for code, *_ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
