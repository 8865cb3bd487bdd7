"""What an op is, as data, and the registry of every op declared.

An :class:`Op` says what a public function computes in gufunc terms: its
operands with their core dimensions (``"(n,n),(n,k)->(n,k)"``), the outputs
with their core dimensions and dtype kinds, the LAPACK routine the backends
implement, what a non-zero ``info`` means, the policy the reference library
applies by default, and an :class:`Example` call.  Each op family declares its
ops in its module of :mod:`blocksolve.ops` with :func:`declare`; validation,
broadcasting, output shapes, error messages, the documentation tables, the
test grids, the benchmarks and the code-generation cases derive from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "Failure",
    "Operand",
    "Output",
    "Example",
    "Op",
    "declare",
    "all_ops",
    "op_for",
    "function_of",
    "call_example",
    "examples",
    "resolve_dims",
    "has_empty_input",
    "NONFINITE",
]

NONFINITE = "contains infs or NaNs"


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
    counterpart), ``'complex'`` (its complex counterpart) or ``'int32'``.
    ``nan_on_failure`` outputs are filled with NaN for failing matrices under
    the ``'nan'`` policy.  ``wrapped`` outputs come back as the ndarray
    subclass of the op's ``wrap_from`` argument (see :class:`Op`).
    """

    name: str
    core: tuple[str, ...]
    dtype: str = "inexact"
    nan_on_failure: bool = True
    wrapped: bool = True


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


def _square_sizes(symbols, size):
    return {symbol: 1 if symbol == "k" else size for symbol in symbols}


@dataclass(frozen=True)
class Example:
    """A typical call of an op: what the benchmarks time, the test grids call and the
    code-generation checks compile.

    Attributes
    ----------
    inputs : tuple of str
        Per input operand, the kind of random input it takes (the generators of
        :mod:`blocksolve.cli.workloads`): ``'spd'``, ``'hermitian'``,
        ``'general'``, ``'rect'``, ``'triangular'``, ``'factor'`` (a Cholesky
        factor), ``'lu'`` (a packed LU factorisation), ``'pivots'``, ``'rhs'``.
    dims : callable, optional
        ``dims(size) -> {symbol: size}`` for a matrix size; default every core
        dimension ``size`` and ``k = 1``.
    call : callable, optional
        ``call(function, *operands, **keywords) -> result``; default
        ``function(*operands, **keywords)``.
    name : str, optional
        The example's name where not the op's (``'solve_pos'``): a benchmark
        workload's key.
    flops : callable, optional
        ``flops(dims) -> float``: real floating-point operations of one matrix of the
        call, as LAPACK counts them (:mod:`blocksolve._flops`); the benchmarks' GFLOP/s.
    """

    inputs: tuple[str, ...]
    dims: Callable | None = None
    call: Callable | None = None
    name: str | None = None
    flops: Callable | None = None

    def sizes(self, op, size):
        """Core dimensions of ``op`` for matrices of ``size`` (derived ones included)."""
        symbols = {s for spec in op.inputs for s in spec.core}
        dims = self.dims(size) if self.dims else _square_sizes(symbols, size)
        return resolve_dims(op, dict(dims))


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
        The NumPy/SciPy function whose semantics (and dtype rule) are followed.
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
    example : Example or None
        A typical call (None: the op is one mode of a function whose other
        mode is the example).
    label : str or None
        The call that runs the op, in the public API's words, where several ops
        share the function (``"qr(mode='raw')"``, ``"solve(assume_a='pos')"``).
    condition_warning : bool
        The CPU kernels may report ``info = n + 1`` (``n``: the size of core
        dimension ``"n"``): the matrix is singular to working precision, its
        reciprocal condition number estimate below the machine epsilon
        (LAPACK ``xGESVX``/``xPOSVX``'s code).  Its results stand; the call
        warns, as SciPy's ``solve`` does, instead of failing.
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
    example: Example | None = None
    label: str | None = None
    condition_warning: bool = False

    def __post_init__(self):
        if self.label is None:
            object.__setattr__(self, "label", self.name)
        for name in ("inputs", "outputs", "options", "variant", "nonfinite_cause"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "derived", MappingProxyType(dict(self.derived)))

    @property
    def signature(self):
        """The gufunc-style signature, e.g. ``'(n,n),(n,k)->(n,k)'``."""
        fmt = lambda items: ",".join(f"({','.join(x.core)})" for x in items)
        return f"{fmt(self.inputs)}->{fmt(self.outputs)}"

    @property
    def library(self):
        """``'numpy'`` or ``'scipy'``: whose conventions it follows."""
        return self.reference.partition(".")[0]

    def describe_failure(self, k):
        return self.failure.template.format(k=k, k0=k - 1)

    def matches(self, options):
        """Whether ``options`` (a mapping) select this op among those sharing its routine."""
        return all(options.get(name) == value for name, value in self.variant)


_OPS: list[Op] = []  # in the order declared
_FUNCTIONS: dict[int, Callable] = {}  # id(op) -> its public function


def declare(*ops):
    """Register ``ops`` (every op a family declares); returns the first."""
    for op in ops:
        if not any(known is op for known in _OPS):
            _OPS.append(op)
    return ops[0]


def bind(op, function):
    """Record ``function`` as the public function that runs ``op``."""
    _FUNCTIONS[id(op)] = function


def function_of(op):
    """The public function that runs ``op``."""
    return _FUNCTIONS[id(op)]


def call_example(op, operands, **keywords):
    """Call ``op``'s public function on ``operands`` as its example calls it."""
    function = function_of(op)
    if op.example is None or op.example.call is None:
        return function(*operands, **keywords)
    return op.example.call(function, *operands, **keywords)


def examples():
    """The ops that have an example (one per public function and structure)."""
    return [op for op in _OPS if op.example is not None]


def all_ops():
    """Every declared op, in the order declared (modes and structures included)."""
    return list(_OPS)


def op_for(routine, options=None):
    """The op a backend routine implements (ops that share a routine, by their
    :attr:`Op.variant`)."""
    options = dict(options or {})
    for op in _OPS:
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
