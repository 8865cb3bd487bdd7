"""Every operation declared once, as data.

An :class:`Op` says what a public function computes in gufunc terms: its
operands with their core dimensions (``"(n,n),(n,k)->(n,k)"``), the outputs
with their core dimensions and dtype kinds, the LAPACK routine the backends
implement, what a non-zero ``info`` means, and the policy the reference
library applies by default.  Validation, broadcasting, output shapes, error
messages, the documentation tables and the test grids are all derived from
these declarations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

__all__ = [
    "Failure",
    "Operand",
    "Output",
    "Op",
    "OPS",
    "QR_MODES",
    "SVD_MODES",
    "SOLVE_STRUCTURES",
    "all_ops",
    "op_for",
    "resolve_dims",
    "has_empty_input",
    "NONFINITE",
    "lstsq_cutoff",
    "lstsq_residual_count",
]


@dataclass(frozen=True)
class Operand:
    """One array argument.

    Parameters
    ----------
    name : str
        Argument name, as in the public signature.
    core : tuple of str
        Symbols of the core (trailing) dimensions; a symbol repeated across
        operands must have one size.
    vector_ok : bool
        The argument may be given with its last core dimension dropped (a
        right-hand side ``b`` of shape ``(..., n)``).  NumPy 2 rule: it is a
        vector only when ``b.ndim == 1``.
    kind : {'inexact', 'index'}
        ``'inexact'`` operands take part in dtype promotion; ``'index'``
        operands (pivots) must be integer.
    finite_checked : bool
        ``check_finite=True`` (the SciPy-named functions) checks this
        ``'inexact'`` operand for infs and NaNs, as SciPy does; SciPy's
        ``lu_solve`` checks ``b`` but not the factor.
    """

    name: str
    core: tuple[str, ...]
    vector_ok: bool = False
    kind: str = "inexact"
    finite_checked: bool = True


@dataclass(frozen=True)
class Output:
    """One result array.

    ``dtype`` is ``'inexact'`` (the computation dtype), ``'real'`` (its real
    counterpart) or ``'int32'``.  ``nan_on_failure`` outputs are filled with
    NaN for failing matrices under the ``'nan'`` policy.  ``wrapped``
    outputs come back as the ndarray subclass of the op's ``wrap_from``
    argument (see :class:`Op`).
    """

    name: str
    core: tuple[str, ...]
    dtype: str = "inexact"
    nan_on_failure: bool = True
    wrapped: bool = True


def _min_mn(dims):
    return min(dims["m"], dims["n"])


def lstsq_cutoff(rcond, m, n, dtype):
    """The relative cut-off ``lstsq``'s kernels (CPU and GPU) apply to the singular
    values, from ``rcond``.

    NumPy 2's rule: ``None`` means machine precision times ``max(m, n)``;
    any other value goes to LAPACK ``xGELSD``, which uses its ``xLAMCH('E')``
    (half of NumPy's ``eps``) for ``rcond <= 0`` and ``rcond >= 1``, and
    whose comparisons with a NaN cut-off cut nothing (here: 0, so that exact
    zeros are still cut rather than divided by).  Singular values at or
    below ``cutoff * s[0]`` count as zero.  Not for NumPy's own ``lstsq``,
    which takes ``rcond`` as the caller gave it (0 is its eps, not NaN's 0).
    """
    eps = float(np.finfo(dtype).eps)
    if rcond is None:
        return eps * max(m, n)
    if math.isnan(rcond):
        return 0.0
    return eps / 2 if rcond <= 0 or rcond >= 1 else float(rcond)


def lstsq_residual_count(dims):
    """Residuals per right-hand side: NumPy returns them only for over-determined systems."""
    return dims["k"] if dims["m"] > dims["n"] else 0


@dataclass(frozen=True)
class Failure:
    """What a failing matrix is, in an error message and in the docs.

    Attributes
    ----------
    template : str
        ``str.format`` template for one failing matrix; ``{k}`` is the 1-based
        ``info`` code, ``{k0}`` the 0-based one.
    what : str or None
        When a matrix fails, in words (``None``: the op never fails).
    info : str
        What a non-zero ``info`` code says.
    """

    template: str
    what: str | None
    info: str


@dataclass(frozen=True)
class Op:
    """A public function seen by the backends.

    Parameters
    ----------
    name : str
        Public function name.
    routine : str
        LAPACK-style routine the backends implement (``'potrf'``, ...).
    reference : str
        The NumPy/SciPy function whose semantics are followed.
    inputs, outputs : tuple
        :class:`Operand` and :class:`Output` declarations.
    failure : Failure
        What a failing matrix is.
    default_policy : str
        Policy when neither the call nor an :func:`~blocksolve.errstate`
        chooses one: what the reference library does.
    derived : mapping of str to callable
        Core dimensions of outputs computed from the input dimensions.
    options : tuple of str
        Names of the options that change the generated kernel.
    variant : tuple of (str, object)
        Option values that single this op out among the ops sharing its
        ``routine`` (``eigh`` and ``eigvalsh`` are both ``heev``, told apart
        by ``vectors``).
    wrap_from : str or None
        The argument whose ndarray subclass the ``wrapped`` outputs take
        (its ``__array_wrap__``), as the NumPy function does; ``None`` for
        SciPy's functions, which return base-class arrays.
    nonfinite_cause : tuple of str
        Arguments whose infs and NaNs can make a matrix fail; the failure of
        such a matrix is then reported as non-finite input, not with
        ``failure``.
    nonfinite : str
        What infs and NaNs in the input produce (for the documentation).
    """

    name: str
    routine: str
    reference: str
    inputs: tuple[Operand, ...]
    outputs: tuple[Output, ...]
    failure: Failure
    default_policy: str = "raise"
    derived: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    options: tuple[str, ...] = ()
    variant: tuple = ()
    wrap_from: str | None = None
    nonfinite_cause: tuple[str, ...] = ()
    nonfinite: str = ""

    @property
    def signature(self):
        """The gufunc-style signature, e.g. ``'(n,n),(n,k)->(n,k)'``."""
        fmt = lambda items: ",".join(f"({','.join(x.core)})" for x in items)  # noqa: E731
        return f"{fmt(self.inputs)}->{fmt(self.outputs)}"

    @property
    def library(self):
        """``'numpy'`` or ``'scipy'``: whose conventions it follows (the dtype rule is its
        ``reference``'s, see :func:`blocksolve._normalize.compute_dtype`)."""
        return self.reference.partition(".")[0]

    def describe_failure(self, k):
        return self.failure.template.format(k=k, k0=k - 1)

    def matches(self, options):
        """Whether ``options`` (a mapping) select this op among those sharing its routine."""
        return all(options.get(name) == value for name, value in self.variant)


def _op(name, routine, reference, inputs, outputs, failure, **kwargs):
    derived = MappingProxyType(kwargs.pop("derived", {}))
    kwargs["nonfinite_cause"] = tuple(kwargs.get("nonfinite_cause", ()))
    return Op(
        name, routine, reference, tuple(inputs), tuple(outputs), failure, derived=derived, **kwargs
    )


_A_SQUARE = Operand("a", ("n", "n"))
_B_RHS = Operand("b", ("n", "k"), vector_ok=True)
_X = Output("x", ("n", "k"))
_NOT_PD = Failure(
    "Matrix is not positive definite (leading minor of order {k})",
    "a matrix is not positive definite",
    "the order of the leading minor that is not positive definite",
)
_SINGULAR = "Singular matrix (U[{k0}, {k0}] is exactly zero)"
NONFINITE = "contains infs or NaNs"

_CHOLESKY_NONFINITE = (
    "Non-finite factor. A NaN never passes the positive-definiteness test, so "
    "the matrix usually fails, and is reported as non-finite input."
)
_FACTOR_SOLVE_NONFINITE = (
    "Non-finite solution, not a failure (only an exact zero on the factor's diagonal is)."
)
_LU_NONFINITE = (
    "Non-finite {what}, not a failure unless a pivot is exactly zero; that matrix "
    "is then reported as non-finite input."
)

OPS = MappingProxyType(
    {
        op.name: op
        for op in [
            _op(
                "cholesky",
                "potrf",
                "numpy.linalg.cholesky",
                [_A_SQUARE],
                [Output("c", ("n", "n"))],
                _NOT_PD,
                options=("lower", "clean"),
                wrap_from="a",
                nonfinite_cause=["a"],
                nonfinite=_CHOLESKY_NONFINITE,
            ),
            _op(
                "cho_factor",
                "potrf",
                "scipy.linalg.cho_factor",
                [_A_SQUARE],
                [Output("c", ("n", "n"))],
                _NOT_PD,
                options=("lower", "clean"),
                nonfinite_cause=["a"],
                nonfinite=_CHOLESKY_NONFINITE,
            ),
            _op(
                "cho_solve",
                "potrs",
                "scipy.linalg.cho_solve",
                [Operand("c", ("n", "n")), _B_RHS],
                [_X],
                Failure(
                    "Singular matrix (c[{k0}, {k0}] is exactly zero)",
                    "a factor has an exactly zero diagonal entry",
                    "the 1-based index of the first zero on the diagonal of the factor",
                ),
                options=("lower",),
                nonfinite=_FACTOR_SOLVE_NONFINITE,
            ),
            _op(
                "lu_factor",
                "getrf",
                "scipy.linalg.lu_factor",
                [Operand("a", ("m", "n"))],
                [
                    Output("lu", ("m", "n"), nan_on_failure=False),
                    Output("piv", ("p",), dtype="int32", nan_on_failure=False),
                ],
                Failure(
                    "Diagonal number {k} is exactly zero. Singular matrix.",
                    "a matrix is exactly singular",
                    "the 1-based index of the first exactly zero diagonal entry of U (the "
                    "factorisation is completed)",
                ),
                default_policy="warn",
                derived={"p": _min_mn},
                nonfinite_cause=["a"],
                nonfinite=_LU_NONFINITE.format(what="factor"),
            ),
            _op(
                "lu_solve",
                "getrs",
                "scipy.linalg.lu_solve",
                [
                    Operand("lu", ("n", "n"), finite_checked=False),
                    Operand("piv", ("n",), kind="index"),
                    _B_RHS,
                ],
                [_X],
                Failure(
                    _SINGULAR,
                    "U has an exactly zero diagonal entry",
                    "the 1-based index of the first zero on the diagonal of U",
                ),
                options=("trans",),
                nonfinite=_FACTOR_SOLVE_NONFINITE,
            ),
            _op(
                "solve",
                "gesv",
                "numpy.linalg.solve",
                [_A_SQUARE, _B_RHS],
                [_X],
                Failure(
                    _SINGULAR,
                    "a matrix is exactly singular (with ``assume_a='pos'``: not positive "
                    "definite; triangular: has an exactly zero diagonal entry)",
                    "the 1-based index of the first exactly zero diagonal entry of its U (with "
                    "``assume_a='pos'``: the order of the leading minor that is not positive "
                    "definite; triangular: the index of the first zero on the diagonal)",
                ),
                wrap_from="b",
                nonfinite_cause=["a"],
                nonfinite=_LU_NONFINITE.format(what="solution"),
            ),
            _op(
                "solve_triangular",
                "trsm",
                "scipy.linalg.solve_triangular",
                [_A_SQUARE, _B_RHS],
                [_X],
                Failure(
                    "singular matrix: resolution failed at diagonal {k0}",
                    "a matrix has an exactly zero diagonal entry",
                    "the 1-based index of the first zero on its diagonal",
                ),
                options=("lower", "trans", "unit_diagonal"),
                nonfinite=_FACTOR_SOLVE_NONFINITE,
            ),
            _op(
                "lstsq",
                "gels",
                "numpy.linalg.lstsq",
                [Operand("a", ("m", "n")), Operand("b", ("m", "k"), vector_ok=True)],
                [
                    Output("x", ("n", "k")),
                    Output("residuals", ("r",), dtype="real"),
                    Output("rank", (), dtype="int32", nan_on_failure=False, wrapped=False),
                    Output("s", ("p",), dtype="real", nan_on_failure=False, wrapped=False),
                ],
                Failure(
                    f"matrix {NONFINITE}",
                    "``a`` holds an inf or NaN (a rank-deficient matrix is no failure: it gets "
                    "the minimum-norm solution and its rank)",
                    "1",
                ),
                derived={"p": _min_mn, "r": lstsq_residual_count},
                wrap_from="b",
                nonfinite_cause=["a"],
                nonfinite=(
                    'An inf or NaN in ``a`` is a failure (NumPy raises "SVD did not converge"); '
                    "in ``b`` only, it gives non-finite ``x`` and ``residuals`` for that "
                    "matrix, not a failure."
                ),
            ),
        ]
    }
)

# Eigen-decompositions of Hermitian matrices and what an LU factorisation gives
# besides solves.  det and slogdet never fail: a singular matrix has determinant 0
# (logabsdet -inf), as in NumPy.
_EIGEN_NONFINITE = (
    "All-NaN eigenvalues (and eigenvectors) for that matrix on the CPU kernels; not a failure."
)
_NO_CONVERGENCE = Failure(
    "Eigenvalues did not converge ({k} off-diagonal elements did not converge to zero)",
    "the iteration does not converge for a matrix (not seen for finite input)",
    "the number of off-diagonal elements that did not converge to zero",
)
OPS = MappingProxyType(
    {
        **OPS,
        **{
            op.name: op
            for op in [
                _op(
                    "eigh",
                    "heev",
                    "numpy.linalg.eigh",
                    [_A_SQUARE],
                    [
                        Output("eigenvalues", ("n",), dtype="real", wrapped=False),
                        Output("eigenvectors", ("n", "n")),
                    ],
                    _NO_CONVERGENCE,
                    options=("lower", "vectors"),
                    variant=(("vectors", True),),
                    wrap_from="a",
                    nonfinite=_EIGEN_NONFINITE,
                ),
                _op(
                    "eigvalsh",
                    "heev",
                    "numpy.linalg.eigvalsh",
                    [_A_SQUARE],
                    [Output("eigenvalues", ("n",), dtype="real")],
                    _NO_CONVERGENCE,
                    options=("lower", "vectors"),
                    variant=(("vectors", False),),
                    nonfinite=_EIGEN_NONFINITE,
                ),
                _op(
                    "inv",
                    "getri",
                    "numpy.linalg.inv",
                    [_A_SQUARE],
                    [Output("ainv", ("n", "n"))],
                    Failure(
                        _SINGULAR,
                        "a matrix is exactly singular",
                        "the 1-based index of the first exactly zero diagonal entry of its U",
                    ),
                    wrap_from="a",
                    nonfinite_cause=["a"],
                    nonfinite=_LU_NONFINITE.format(what="inverse"),
                ),
                _op(
                    "det",
                    "getrf_det",
                    "numpy.linalg.det",
                    [_A_SQUARE],
                    [Output("det", ())],
                    Failure(
                        "det never fails (info {k})",
                        None,
                        "an exactly singular matrix has determinant 0, which is not a failure",
                    ),
                    options=("log",),
                    variant=(("log", False),),
                    nonfinite="NaN, ±inf where an infinite pivot leaves a sign (as NumPy); never a "
                    "failure.",
                ),
                _op(
                    "slogdet",
                    "getrf_det",
                    "numpy.linalg.slogdet",
                    [_A_SQUARE],
                    [Output("sign", ()), Output("logabsdet", (), dtype="real")],
                    Failure(
                        "slogdet never fails (info {k})",
                        None,
                        "an exactly singular matrix has sign 0 and logabsdet -inf, which is "
                        "not a failure",
                    ),
                    options=("log",),
                    variant=(("log", True),),
                    nonfinite="NaN ``logabsdet`` (and ``sign`` of a complex matrix); "
                    "``(±1, inf)`` where an infinite pivot leaves a sign (as NumPy); "
                    "never a failure.",
                ),
            ]
        },
    }
)

# solve(a, b, assume_a=...): the op each accepted structure runs, with the options
# it fixes (SciPy 1.17's spellings; 'pos' reads the triangle ``lower`` selects).
# 'general' is numpy.linalg.solve; the others are scipy.linalg.solve, its dtype rule
# included, on the kernels of cho_solve and solve_triangular.
_POSV = _op(
    "solve",
    "posv",
    "scipy.linalg.solve",
    [_A_SQUARE, _B_RHS],
    [_X],
    _NOT_PD,
    options=("lower",),
    nonfinite_cause=["a"],
    nonfinite=_CHOLESKY_NONFINITE,
)
_TRIANGULAR_SOLVE = _op(
    "solve",
    "trsm",
    "scipy.linalg.solve",
    [_A_SQUARE, _B_RHS],
    [_X],
    OPS["solve_triangular"].failure,
    options=OPS["solve_triangular"].options,
    nonfinite=_FACTOR_SOLVE_NONFINITE,
)
SOLVE_STRUCTURES = MappingProxyType(
    {
        "general": (OPS["solve"], {}),
        "positive definite": (_POSV, {}),
        "lower triangular": (
            _TRIANGULAR_SOLVE,
            {"lower": True, "trans": 0, "unit_diagonal": False},
        ),
        "upper triangular": (
            _TRIANGULAR_SOLVE,
            {"lower": False, "trans": 0, "unit_diagonal": False},
        ),
    }
)

_QR_NONFINITE = (
    "Non-finite ``Q`` and ``R`` (``R`` still exactly upper triangular); never a failure."
)


def _qr(outputs, **kwargs):
    """``numpy.linalg.qr`` in one ``mode``: the same op but for its outputs."""
    return _op(
        "qr",
        "geqrf",
        "numpy.linalg.qr",
        [Operand("a", ("m", "n"))],
        outputs,
        Failure("QR never fails (info {k})", None, "QR never fails"),
        options=("mode",),
        wrap_from="a",
        nonfinite=_QR_NONFINITE,
        **kwargs,
    )


QR_MODES = MappingProxyType(
    {
        mode: _qr(outputs, variant=(("mode", mode),), **kwargs)
        for mode, outputs, kwargs in [
            (
                "reduced",
                [Output("Q", ("m", "p")), Output("R", ("p", "n"))],
                {"derived": {"p": _min_mn}},
            ),
            ("complete", [Output("Q", ("m", "m")), Output("R", ("m", "n"))], {}),
            ("r", [Output("R", ("p", "n"))], {"derived": {"p": _min_mn}}),
            (
                "raw",
                [Output("h", ("n", "m")), Output("tau", ("p",), wrapped=False)],
                {"derived": {"p": _min_mn}},
            ),
        ]
    }
)

# numpy.linalg.svd by (compute_uv, full_matrices): the same op but for its outputs.
_SVD_FAILURE = Failure(
    "SVD did not converge",
    "a matrix holds an inf or NaN (or the iteration does not converge for it)",
    "1",
)
_S = Output("S", ("p",), dtype="real", wrapped=False)
SVD_MODES = MappingProxyType(
    {
        (vectors, full): _op(
            "svd",
            "gesvd",
            "numpy.linalg.svd",
            [Operand("a", ("m", "n"))],
            outputs,
            _SVD_FAILURE,
            options=("vectors", "full"),
            variant=(("vectors", vectors), ("full", full)),
            derived={"p": _min_mn},
            wrap_from="a",
            nonfinite_cause=["a"],
            nonfinite='An inf or NaN in ``a`` is a failure (NumPy raises "SVD did not '
            'converge"): NaN results for that matrix.',
        )
        for (vectors, full), outputs in {
            (True, True): [Output("U", ("m", "m")), _S, Output("Vh", ("n", "n"))],
            (True, False): [Output("U", ("m", "p")), _S, Output("Vh", ("p", "n"))],
            (False, False): [_S],
        }.items()
    }
)


def all_ops():
    """Every declared op, QR and SVD modes and solve structures included (for docs and
    test grids)."""
    return [*OPS.values(), *QR_MODES.values(), *SVD_MODES.values(), _POSV, _TRIANGULAR_SOLVE]


def op_for(routine, options=None):
    """The op a backend routine implements (ops that share a routine, by their
    :attr:`Op.variant`)."""
    options = dict(options or {})
    for op in all_ops():
        if op.routine == routine and op.matches(options):
            return op
    raise KeyError(f"no op implements routine {routine!r} with options {options}")


def has_empty_input(op, dims):
    """Whether an input of ``op`` has an empty core dimension (derived ones don't count)."""
    return any(dims[symbol] == 0 for spec in op.inputs for symbol in spec.core)


def resolve_dims(op, dims):
    """Add the derived core dimensions of ``op`` to ``dims`` (a dict)."""
    for name, rule in op.derived.items():
        dims[name] = rule(dims)
    return dims
