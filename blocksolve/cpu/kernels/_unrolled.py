"""Straight-line code for small matrices: the QR and least-squares kernels' emitters, and
the helpers every straight-line kernel uses (the Cholesky and LU families' too).

For matrices of at most :data:`UNROLL_UP_TO` rows and columns, the loops over
rows and columns are written out by the emitters below, which leaves one loop
over the ``lanes`` matrices of a block whose body is scalar code on local
variables.  LLVM vectorises that loop across the matrices and keeps each
matrix in registers; with the row/column loops left in, the same algorithm
is three to four times slower (a 4x4 QR: about 25 ns against 80 ns), because
every short inner loop pays for its set-up and its memory checks.

Rules the emitted code follows, each for a measured reason:

* one work array ``work[row, lane]`` of constant shape per block, read and
  written as ``work[<constant>, l]``, which LLVM can prove independent
  across lanes (separate arrays need run-time overlap checks, and too many
  checks stop the vectoriser);
* every name is assigned once (numba's SSA repair is quadratic in
  reassignments and dominated compile time), and there is no ``if``,
  ``or`` or conditional expression: choices go through :func:`select`,
  which LLVM turns into a vector blend;
* conjugates and ``.real``/``.imag`` only for complex dtypes
  (:meth:`Source.conj`, :meth:`Source.abs2`).

The algorithms are those of :mod:`blocksolve.cpu.qr` (LAPACK's
``xGEQR2``/``xORG2R`` conventions) and :mod:`blocksolve.cpu.lstsq`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math

import numba
import numpy as np

from .._compiled import Kernel
from .._jit import jit, static_size
from ._compensated import (
    minus_pair_times,
    pair_plus_product,
    pair_plus_square,
    plus_pair_times,
    times_pair,
    unitary_tau,
)
from ._householder import (
    HOUSEHOLDER_REAL_ROWS,
    HOUSEHOLDER_VALUE_ROWS,
    block_lanes,
    householder_block,
    load_block,
    reciprocal,
)

__all__ = [
    "UNROLL_UP_TO",
    "unrolled",
    "unrolled_lanes",
    "kernels_for",
    "select",
    "Source",
    "Entries",
    "compile_kernel",
    "emit_block_in",
    "emit_scratch",
    "emit_careful_redo",
    "emit_load",
    "emit_store",
    "emit_householder",
    "emit_apply",
    "emit_form_q",
    "emit_jacobi_sweep",
    "emit_sorted",
    "emit_lane_kernel",
    "emit_divide",
    "emit_first_zero",
    "emit_stash",
    "emit_unstash",
    "matrix_indices",
]

# Largest row or column count that gets straight-line code (the code grows
# like n^3, and so does its compile time).
UNROLL_UP_TO = 8


def unrolled(m, n, up_to=UNROLL_UP_TO):
    """Whether ``m x n`` matrices get a straight-line kernel (``up_to``: the family's
    largest row or column count that pays for it)."""
    return max(m, n) <= up_to


def unrolled_solve(pattern):
    """Whether a solve of ``pattern``'s real ``n x n`` matrices and ``k`` right-hand sides
    gets a straight-line kernel: both sizes up to :data:`UNROLL_UP_TO`, ``n`` baked in."""
    n, k = pattern.dim("n"), pattern.dim("k")
    return bool(n and k and unrolled(n, k) and static_size(n) and pattern.np_dtype.kind == "f")


def unrolled_lanes(dtype, n=None):
    """Matrices per block: one 64-byte vector register's worth, at least 4.

    Two registers' worth for the Cholesky and LU families' kernels of ``n x n``
    matrices up to 6x6: each step's chain of dependent operations then runs on two
    registers at once (measured 1.1-1.5x faster from 3x3 to 6x6; at 8x8 the
    registers spill and the LU solve ran slower).
    """
    lanes = max(4, 64 // np.dtype(dtype).itemsize)
    return 2 * lanes if n is not None and n <= 6 else lanes


def kernels_for(pattern, generic, straight_line):
    """``kernel(m, n) -> (kernel, lanes)`` for a runner of ``pattern``.

    Up to 8x8 (with sizes baked in, :func:`~._jit.static_size`) the straight-line
    kernel ``straight_line(m, n, dtype)``; otherwise the run-time-size ``generic``
    one.  ``lanes`` is the run-time-size kernel's block width; the straight-line
    kernel has its own built in.
    """
    m, n = pattern.dim("m"), pattern.dim("n")
    if m and n and unrolled(m, n) and static_size(max(m, n)):
        kernel = Kernel(straight_line, (m, n, pattern.np_dtype))
    else:
        kernel = Kernel(generic)
    return lambda m, n: (kernel, block_lanes(m, n))


@numba.njit
def select(condition, if_true, if_false):
    """``if_true if condition else if_false`` as a call (no branch in the caller)."""
    return if_true if condition else if_false


class Source:
    """Python source being written: lines, indentation, fresh names.

    ``complex_values`` says whether the kernel's dtype is complex: for real
    dtypes :meth:`conj` and :meth:`abs2` write plain real code, which numba
    compiles about a fifth faster.
    """

    def __init__(self, complex_values):
        self.complex = complex_values
        self.lines = []
        self.level = 0
        self._count = 0

    def __call__(self, line):
        self.lines.append("    " * self.level + line)

    @contextlib.contextmanager
    def block(self, header):
        self(header)
        self.level += 1
        yield
        self.level -= 1

    def let(self, base, expression):
        """Assign ``expression`` to a new name starting with ``base``; return the name."""
        self._count += 1
        name = f"{base}_{self._count}"
        self(f"{name} = {expression}")
        return name

    def text(self):
        return "\n".join(self.lines) + "\n"

    def conj(self, x):
        """Source of the complex conjugate of ``x``."""
        return f"np.conj({x})" if self.complex else x

    def abs2(self, x):
        """Source of ``|x|**2`` for the name ``x``."""
        return f"({x}.real * {x}.real + {x}.imag * {x}.imag)" if self.complex else f"({x} * {x})"

    def parts(self, x):
        """Sources of the real components of ``x``: ``(x.real, x.imag)``, or ``(x,)``."""
        return (f"{x}.real", f"{x}.imag") if self.complex else (x,)

    def abs1(self, x):
        """Source of ``|Re x| + |Im x|`` for the name ``x``."""
        return f"(abs({x}.real) + abs({x}.imag))" if self.complex else f"abs({x})"

    def scaled(self, r, x):
        """Source of ``r * x`` for a real name ``r`` and the name ``x``: two real products
        for complex ``x`` (numba multiplies a complex number by a real one as by a complex
        one)."""
        return f"complex({r} * {x}.real, {r} * {x}.imag)" if self.complex else f"{r} * {x}"


def compile_kernel(prefix, source, dtype, extra=None):
    """Compile the generated ``def KERNEL(...)`` in ``source`` as a disk-cached kernel.

    The function is named ``prefix`` plus a digest of ``source``, and its code
    is attributed to this file: numba's disk cache, keyed on the name and on
    this file's timestamp, then keeps one entry per distinct source.
    ``ZERO`` and ``ONE`` are ``dtype``'s constants (``0 * x`` is -0.0 or NaN for
    some ``x``), ``REAL_ZERO`` and ``REAL_ONE`` those of its real dtype, ``ZERO_PAIR``
    the pair ``(REAL_ZERO, REAL_ZERO)`` (see :mod:`._compensated`), ``INF`` the real
    dtype's infinity; ``extra`` adds names (block helpers) to the source's globals.
    """
    name = f"{prefix}_{hashlib.sha1(source.encode()).hexdigest()[:16]}"
    scope = {
        "__name__": __name__,
        "np": np,
        "math": math,
        "select": select,
        "reciprocal": reciprocal,
        "load_block": load_block,
        "householder_block": householder_block,
        "pair_plus_product": pair_plus_product,
        "pair_plus_square": pair_plus_square,
        "times_pair": times_pair,
        "minus_pair_times": minus_pair_times,
        "plus_pair_times": plus_pair_times,
        "unitary_tau": unitary_tau,
        "ZERO": np.dtype(dtype).type(0),
        "ONE": np.dtype(dtype).type(1),
        "REAL_ZERO": np.finfo(dtype).dtype.type(0),
        "REAL_ONE": np.finfo(dtype).dtype.type(1),
        "ZERO_PAIR": (np.finfo(dtype).dtype.type(0),) * 2,
        "INF": np.finfo(dtype).dtype.type(np.inf),  # x * INF stays in the real dtype
        **(extra or {}),
    }
    exec(compile(source.replace("def KERNEL(", f"def {name}(", 1), __file__, "exec"), scope)
    return jit(scope[name])


class Entries:
    """The current names of a small matrix's entries, and which are known 0 or 1.

    ``get(i, j)`` is a name, or the literal ``'0'``/``'1'`` while the entry
    is known to be that constant; the emitters skip products with known
    zeros (LLVM may not, under IEEE rules).
    """

    def __init__(self, prefix):
        self.prefix = prefix
        self.names = {}

    def get(self, i, j):
        return self.names[(i, j)]

    def set_constant(self, i, j, value):
        self.names[(i, j)] = value

    def assign(self, src, i, j, expression):
        self.names[(i, j)] = src.let(f"{self.prefix}{i}_{j}", expression)


def _product(x, y):
    """Source of ``x * y`` for names or the literals '0'/'1'; None when known zero."""
    if "0" in (x, y):
        return None
    if x == "1":
        return y
    if y == "1":
        return x
    return f"{x} * {y}"


def _sum(terms):
    """Source of the sum of the non-None ``terms``; None if there are none."""
    terms = [t for t in terms if t is not None]
    return " + ".join(terms) if terms else None


def emit_block_in(src, rows, cols, adjoint):
    """Copy a block into ``work``, as :func:`load_block`.

    The factored matrix is ``rows x cols`` (``a`` itself, or its adjoint
    when ``adjoint``), stored column-major per lane.  Needs ``work``,
    ``first`` and ``count``.
    """
    with src.block("for l in range(count):"), src.block(f"for j in range({cols}):"):
        with src.block(f"for i in range({rows}):"):
            src(
                f"work[j * {rows} + i, l] = "
                + (src.conj("a[first + l, j, i]") if adjoint else "a[first + l, i, j]")
            )


def emit_scratch(src, lanes):
    """Allocate ``reflector_reals`` and ``reflector_values``, the scratch of
    :func:`householder_block` that :func:`emit_careful_redo` passes; needs ``limits``
    and ``a``."""
    src(f"reflector_reals = np.zeros(({HOUSEHOLDER_REAL_ROWS}, {lanes}), limits.dtype)")
    src(f"reflector_values = np.zeros(({HOUSEHOLDER_VALUE_ROWS}, {lanes}), a.dtype)")


def emit_careful_redo(src, rows, cols, adjoint, flag_at, tau_at, after_load=None):
    """Redo the block's QR with :func:`householder_block` if a lane flagged a careful column.

    The straight-line code takes xLARFG's fast path only; a lane whose
    column needed the careful one (see :func:`emit_householder`) stored a
    nonzero ``work[flag_at, l]``.  Then the whole block is loaded again and
    factored by the block helper, whose careful path is exact
    (``after_load``, a line of source, runs between the two).  Needs ``w``
    (the first ``rows * cols`` rows of ``work`` as ``(cols, rows, lanes)``),
    ``limits`` and the scratch of :func:`emit_scratch`.
    """
    src("careful = 0")
    with src.block("for l in range(count):"):
        src(f"careful += work[{flag_at}, l].real != 0")
    with src.block("if careful:"):
        src(f"load_block(a, first, count, w, {rows}, {cols}, {adjoint})")
        if after_load:
            src(after_load)
        src(
            f"householder_block(w, work[{tau_at}:{tau_at + min(rows, cols)}], {rows}, {cols}, "
            f"w.shape[2], limits, reflector_reals, reflector_values)"
        )


def emit_load(src, entries, rows, cols, offset, array="work"):
    """``entries[i, j] = array[offset + j * rows + i, l]`` (column-major per lane)."""
    for j in range(cols):
        for i in range(rows):
            entries.assign(src, i, j, f"{array}[{offset + j * rows + i}, l]")


def emit_store(src, entries, rows, cols, offset, array="work"):
    """The inverse of :func:`emit_load`."""
    for j in range(cols):
        for i in range(rows):
            src(f"{array}[{offset + j * rows + i}, l] = {entries.get(i, j)}")


def emit_householder(src, a, rows, cols, taus):
    """``xGEQR2`` on the entries ``a`` (rows x cols), fast path only.

    The statements of :func:`blocksolve.cpu._householder.householder_block`
    for one matrix per lane: ``xLARFG`` without branches, ``tau`` made
    unitary for the stored ``v``, then ``H_j^H`` on the trailing columns
    with the compensated scalar.  Returns the names of the ``tau`` and of
    a flag that is true when a column needed ``xLARFG``'s careful path
    (whose results here are then meaningless: see
    :func:`emit_careful_redo`).  Needs ``low`` and ``high``
    (:func:`fast_limits`) and the constants of :func:`compile_kernel`.
    """
    flags = []
    for j in range(min(rows, cols)):
        below = [a.get(i, j) for i in range(j + 1, rows)]
        norm2 = src.let("norm2", _sum(src.abs2(x) for x in below) or "0.0")
        size = src.let("size", _sum(src.abs1(x) for x in below) or "0.0")
        alpha = src.let("alpha", a.get(j, j))
        total = src.let("total", f"{src.abs2(alpha)} + {norm2}")
        reflect = src.let(
            "reflect", f"({size} != 0) | ({alpha}.imag != 0)" if src.complex else f"{size} != 0"
        )
        careful = src.let("careful", f"{reflect} & (not (({total} >= low) & ({total} <= high)))")
        use = src.let("use", f"{reflect} & (not {careful})")
        beta = src.let("beta", f"-math.copysign(math.sqrt({total}), {alpha}.real)")
        safe = src.let("safe_beta", f"select({use}, {beta}, 1.0)")
        lapack_tau = src.let("lapack_tau", f"({beta} - {alpha}) * (1 / {safe})")
        coef = src.let("coef", f"select({use}, reciprocal({alpha} - {safe}), ONE)")
        a.assign(src, j, j, f"select({use}, {beta}, {alpha})")
        square = "(REAL_ONE, REAL_ZERO)"
        for i in range(j + 1, rows):
            a.assign(src, i, j, f"{a.get(i, j)} * {coef}")
            for part in src.parts(a.get(i, j)):
                square = src.let("square", f"pair_plus_square({square}, {part})")
        taus.append(src.let("tau", f"select({use}, unitary_tau({lapack_tau}, {square}), ZERO)"))
        for c in range(j + 1, cols):
            emit_apply(src, a, j, rows, a, c, taus[j], adjoint=True, compensated=True)
        flags.append(careful)
    return taus, src.let("careful", " | ".join(flags) if flags else "False")


def emit_apply(src, v, j, rows, x, col, tau, adjoint, compensated=False):
    """``x[:, col] <- H_j x[:, col]`` (``H_j^H`` when ``adjoint``), reflector ``j`` in ``v``.

    ``H_j = I - tau u u^H`` with ``u = [0.., 1, v[j+1:rows, j]]``; where
    ``tau = 0`` the multiple of ``u`` is an exact 0 (as in
    :func:`apply_reflector`).  Known zeros of ``x`` are skipped; a column the
    reflector cannot change is left alone.  ``compensated``: ``tau u^H x``
    as a pair in twice the working precision, as
    :func:`~blocksolve.cpu._householder.reflect_trailing`.
    """
    if compensated:
        _emit_compensated_apply(src, v, j, rows, x, col, tau, adjoint)
        return
    factor = src.conj(tau) if adjoint else tau
    terms = [_product("1", x.get(j, col))]
    terms += [_product(src.conj(v.get(i, j)), x.get(i, col)) for i in range(j + 1, rows)]
    dot = _sum(terms)
    if dot is None:
        return
    d = src.let("d", f"select({tau} != 0, ({dot}) * {factor}, ZERO)")
    for i in range(j, rows):
        update = d if i == j else f"{d} * {v.get(i, j)}"
        old = x.get(i, col)
        x.assign(src, i, col, f"-{update}" if old == "0" else f"{old} - {update}")


def _emit_compensated_apply(src, v, j, rows, x, col, tau, adjoint):
    """:func:`emit_apply` with the scalar ``tau u^H x`` as a pair: the calls of
    :func:`~blocksolve.cpu._householder.reflect_trailing`'s helpers (see
    :mod:`._compensated`), written out part by part."""
    terms = [(v.get(i, j), x.get(i, col)) for i in range(j + 1, rows)]
    terms = [(_constant(vi), _constant(xi)) for vi, xi in terms if "0" not in (vi, xi)]
    first = _constant(x.get(j, col))
    if first == "ZERO" and not terms:
        return
    dot = [f"({part}, REAL_ZERO)" for part in src.parts(first)]
    for vi, xi in terms:  # add_product: dot + conj(vi) xi
        if src.complex:
            (vr, vm), (xr, xm) = src.parts(vi), src.parts(xi)
            dot = [
                f"pair_plus_product(pair_plus_product({dot[0]}, {vr}, {xr}), {vm}, {xm})",
                f"pair_plus_product(pair_plus_product({dot[1]}, {vr}, {xm}), -{vm}, {xr})",
            ]
        else:
            dot = [f"pair_plus_product({dot[0]}, {vi}, {xi})"]
        dot = [src.let("dot", part) for part in dot]
    if src.complex:  # scale_pair by t = conj(tau) (adjoint) or tau
        tr, tm = src.parts(tau)
        tm = f"(-{tm})" if adjoint else tm
        re, im = dot
        d = [
            f"pair_plus_product(pair_plus_product(times_pair({tr}, {re}), -{tm}, {im}[0]), "
            f"-{tm}, {im}[1])",
            f"pair_plus_product(pair_plus_product(times_pair({tr}, {im}), {tm}, {re}[0]), "
            f"{tm}, {re}[1])",
        ]
    else:
        d = [f"times_pair({tau}, {dot[0]})"]
    d = [src.let("d", f"select({tau} != 0, {part}, ZERO_PAIR)") for part in d]
    for i in range(j, rows):  # subtract_pair_times
        vi = _constant("1" if i == j else v.get(i, j))
        if vi == "ZERO":
            continue
        old = _constant(x.get(i, col))
        if src.complex:
            (cr, cm), (vr, vm) = src.parts(old), src.parts(vi)
            real = f"plus_pair_times(minus_pair_times({cr}, {d[0]}, {vr}), {d[1]}, {vm})"
            imag = f"minus_pair_times(minus_pair_times({cm}, {d[0]}, {vm}), {d[1]}, {vr})"
            x.assign(src, i, col, f"complex({real}, {imag})")
        else:
            x.assign(src, i, col, f"minus_pair_times({old}, {d[0]}, {vi})")


def _constant(name):
    """``name``, or the kernel dtype's constant for the literals '0' and '1'."""
    return {"0": "ZERO", "1": "ONE"}.get(name, name)


def emit_form_q(src, v, rows, k, q, q_cols, taus):
    """``xORG2R``: ``q`` = the first ``q_cols`` columns of ``H_0 ... H_{k-1}``."""
    for c in range(q_cols):
        for i in range(rows):
            q.set_constant(i, c, "1" if i == c else "0")
    for j in range(k - 1, -1, -1):
        for c in range(j + 1, q_cols):
            emit_apply(src, v, j, rows, q, c, taus[j], adjoint=False)
        q.assign(src, j, j, f"1 - {taus[j]}")
        for i in range(j + 1, rows):
            q.assign(src, i, j, f"-{taus[j]} * {v.get(i, j)}")


def _round_robin(p):
    """All pairs of ``range(p)`` in rounds of disjoint pairs (the circle method)."""
    players = list(range(p)) + ([None] if p % 2 else [])
    rounds = []
    for _ in range(len(players) - 1):
        half = len(players) // 2
        rounds.append(
            [
                tuple(sorted(pair))
                for pair in zip(players[:half], players[::-1][:half])
                if None not in pair
            ]
        )
        players = [players[0], players[-1], *players[1:-1]]
    return [pair for pairs in rounds for pair in pairs]


# Literals of the sweep's real constants: Python numbers by default (the arithmetic
# then runs in float64); a float32 kernel passes names of float32 constants instead.
_SWEEP_LITERALS = {"0": "0.0", "1": "1.0", "1/": "1", "2": "2", "4": "4"}


def _scaled(src, r, x):
    """:meth:`Source.scaled` for a name or the literals '0'/'1'; None when known zero."""
    if x in ("0", "1"):
        return _product(r, x)
    return src.scaled(r, x)


def _rotated(src, cs, x, sn, y, minus):
    """Source of ``cs x - conj(sn) y`` (``minus``) or ``sn x + cs y``, for names or the
    literals '0'/'1'; '0' when both terms are known zero."""
    first = _scaled(src, cs, x) if minus else _product(sn, x)
    second = _product(src.conj(sn), y) if minus else _scaled(src, cs, y)
    if first is None and second is None:
        return "0"
    if second is None:
        return first
    if first is None:
        return f"-({second})" if minus else second
    return f"{first} - {second}" if minus else f"{first} + {second}"


def emit_jacobi_sweep(src, g, p, v, floor=None, literals=None):
    """One sweep of one-sided Jacobi over the columns of ``g`` (p x p), the same
    rotations applied to the columns of ``v`` (p x p, or None); returns the name of
    the number of pairs rotated.

    The rotation and the norm updates are those of
    :func:`blocksolve.cpu._jacobi.jacobi_sweeps` (``floor``: the name of its
    floor, or None for none).  The pairs come in rounds of disjoint pairs,
    whose rotations are independent: their square roots overlap instead of
    forming one chain.  Entries known to be 0 or 1 (a triangular ``g``, ``v``
    = I in a first sweep) are skipped; a pair whose columns are known
    orthogonal is not rotated.  ``literals`` maps the real constants '0', '1',
    '2' and '4' (and '1/', the numerator of a reciprocal) to their source
    (default: Python numbers).
    """
    c = _SWEEP_LITERALS if literals is None else literals

    def known(x):
        return x if x in ("0", "1") else src.conj(x)

    norms = [
        src.let(
            "norm", _sum(src.abs2(g.get(i, j)) for i in range(p) if g.get(i, j) != "0") or c["0"]
        )
        for j in range(p)
    ]
    rotations = []
    for pc, qc in _round_robin(p):
        col_p = [g.get(i, pc) for i in range(p)]
        col_q = [g.get(i, qc) for i in range(p)]
        products = _sum(_product(known(x), y) for x, y in zip(col_p, col_q))
        if products is None:
            continue
        ap, aq = norms[pc], norms[qc]
        dot = src.let("dot", products)
        off2 = src.let("off2", src.abs2(dot))
        test = f"{off2} > tol2 * {ap} * {aq}"
        rotate = src.let("rotate", test if floor is None else f"({test}) & ({off2} > {floor})")
        diff = src.let("diff", f"{aq} - {ap}")
        root = src.let("root", f"math.sqrt({diff} * {diff} + {c['4']} * {off2})")
        u = src.let("u", f"abs({diff}) + {root}")
        inv = src.let(
            "inv", f"{c['1/']} / math.sqrt(select({rotate}, {c['2']} * {root} * {u}, {c['1']}))"
        )
        signed = src.let("signed", f"math.copysign({inv}, {diff})")
        cs = src.let("cs", f"select({rotate}, {u} * {inv}, {c['1']})")
        sn = src.let("sn", f"select({rotate}, {dot} * ({c['2']} * {signed}), ZERO)")
        shift = src.let(
            "shift",
            f"select({rotate}, {c['4']} * {off2} * ({root} * {inv}) * {signed}, {c['0']})",
        )
        norms[pc] = src.let("norm", f"{ap} - {shift}")
        norms[qc] = src.let("norm", f"{aq} + {shift}")
        for entries in (g, v) if v is not None else (g,):
            for i in range(p):
                x, y = entries.get(i, pc), entries.get(i, qc)
                new_p = _rotated(src, cs, x, sn, y, minus=True)
                new_q = _rotated(src, cs, x, sn, y, minus=False)
                for col, value in ((pc, new_p), (qc, new_q)):
                    if value == "0":
                        entries.set_constant(i, col, "0")
                    else:
                        entries.assign(src, i, col, value)
        rotations.append(rotate)
    return src.let("rotations", " + ".join(f"int({r})" for r in rotations) or "0")


def emit_sorted(src, values):
    """The names ``values`` sorted largest first (a branch-free sorting network)."""
    values = list(values)
    p = len(values)
    for top in range(p - 1, 0, -1):
        for j in range(top):
            x, y = values[j], values[j + 1]
            values[j] = src.let("sv", f"select({x} >= {y}, {x}, {y})")
            values[j + 1] = src.let("sv", f"select({x} >= {y}, {y}, {x})")
    return values


def emit_lane_kernel(src, arguments, lanes, rows, load, lane, finish, setup=()):
    """``def KERNEL(start, stop, <arguments>)`` over blocks of ``lanes`` consecutive
    matrices of the batch slice, with one work array ``work`` of ``rows`` rows (the
    first argument's dtype) and the source lines ``setup``; per block, each function
    writes the body of one loop: ``load()`` and ``finish()`` of the loops over the
    block's matrices (``first + l``, ``l < count``), ``lane()`` of the loop across all
    ``lanes`` lanes between them, the one LLVM vectorises."""
    first_argument = arguments.split(",")[0].strip()
    with src.block(f"def KERNEL(start, stop, {arguments}):"):
        src(f"work = np.zeros(({rows}, {lanes}), {first_argument}.dtype)")
        for line in setup:
            src(line)
        with src.block(f"for first in range(start, stop, {lanes}):"):
            src(f"count = min({lanes}, stop - first)")
            with src.block("for l in range(count):"):
                load()
            with src.block(f"for l in range({lanes}):"):
                lane()
            with src.block("for l in range(count):"):
                finish()


def emit_divide(src, x, d):
    """The name of :func:`~.triangular.divide` of the names ``x`` by ``d``, written out:
    ``x / d``, or ``x * INF`` where ``d`` is zero (non-finite either way)."""
    return src.let("x", f"select({d} != 0, {x} / {d}, {x} * INF)")


def emit_triangular_solve(src, t, x, n, columns, forward, unit_diagonal=False):
    """:func:`~.triangular.trsm_block` on one real matrix per lane, written out: solve
    ``T x = b`` in its order, so the same solutions to the bit (a zero on the diagonal
    gives infs/NaNs).

    ``t(i, j)`` is the name of entry ``(i, j)`` of the triangle ``T`` (lower when
    ``forward``: rows solved top to bottom); ``x[i, c]`` names entry ``(i, c)`` of the
    right-hand sides for ``c`` in ``columns`` and is updated to the solution.
    """
    for c in columns:
        for step in range(n):
            i = step if forward else n - 1 - step
            y = x[i, c]
            for j in range(i) if forward else range(i + 1, n):
                y = src.let("x", f"{y} - {t(i, j)} * {x[j, c]}")
            x[i, c] = y if unit_diagonal else emit_divide(src, y, t(i, i))


def emit_first_zero(src, zero_pivots):
    """The name of the 1-based index of the first true flag of ``zero_pivots`` (names), as
    a real number, 0 if there is none: ``info`` of a factor with an exactly zero pivot."""
    info = "REAL_ZERO"
    for j in range(len(zero_pivots) - 1, -1, -1):
        info = src.let("info", f"select({zero_pivots[j]}, REAL_ONE * {j + 1}, {info})")
    return info


def emit_stash(src, values, at):
    """In the loop across lanes: the names ``values`` into rows ``at, at + 1, ...`` of
    ``work`` (read back per matrix by :func:`emit_unstash`)."""
    for r, value in enumerate(values):
        src(f"work[{at + r}, l] = {value}")


def emit_read(src, array, rows, cols, at):
    """In the loop over a block's matrices: ``array[first + l]`` (``rows x cols``, row by
    row) into rows ``at, at + 1, ...`` of ``work``."""
    for r, index in enumerate(matrix_indices(rows, cols)):
        src(f"work[{at + r}, l] = {array}[first + l, {index}]")


def loaded_entries(src, rows, cols, at, prefix):
    """In the loop across lanes: names (``prefix`` and a number) of the entries
    :func:`emit_read` put in rows ``at, ...`` of ``work``, by ``(i, j)``."""
    return {
        (i, j): src.let(prefix, f"work[{at + i * cols + j}, l]")
        for i in range(rows)
        for j in range(cols)
    }


def emit_unstash(src, target, indices, at, convert=""):
    """In the loop over a block's matrices: ``target[first + l, <index>]`` (``target[first +
    l]`` for the index ``''``) from rows ``at, at + 1, ...`` of ``work``, one per index
    (``convert``: a function applied, ``int``)."""
    for r, index in enumerate(indices):
        where = f"first + l, {index}" if index else "first + l"
        src(f"{target}[{where}] = {convert}(work[{at + r}, l])")


def matrix_indices(rows, cols):
    """``'i, j'`` for the entries of a ``rows x cols`` matrix, row by row."""
    return [f"{i}, {j}" for i in range(rows) for j in range(cols)]
