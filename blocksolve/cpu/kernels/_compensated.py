"""Sums and products with their rounding errors, for the Householder kernels.

Householder QR is backward stable whatever the rounding, but its constant
depends on two quantities that plain arithmetic gets only to a few units in
the last place: how exactly ``H = I - tau v v^H`` is unitary, and how
exactly ``tau * (v^H c)`` is known when a column ``c`` that lies nearly along
``v`` is reflected (the update then cancels, and any error of that scalar
stays in the result at the size of the whole column).  The error-free
transformations here (Knuth's two-sum, the two-product of a fused
multiply-add) carry those quantities as an unevaluated pair ``(hi, lo)``, a
numba tuple worth ``hi + lo`` in twice the working precision, at a few
operations per entry; all of them are branch free.

The steps on real pairs are numba intrinsics: they write their LLVM
instructions in place, so that the straight-line kernels of
:mod:`._unrolled` (which call them hundreds of times) neither pay numba's
typing of every operator nor depend on LLVM inlining calls; the helpers on
complex values combine them part by part.
"""

from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic, overload

__all__ = [
    "pair_plus_product",
    "pair_plus_square",
    "times_pair",
    "minus_pair_times",
    "plus_pair_times",
    "unitary_tau",
    "add_square",
    "add_product",
    "scale_pair",
    "subtract_pair_times",
    "to_pair",
    "from_pair",
]


def _common(values):
    """The widest of the float types ``values``; None unless all are floats."""
    if not all(isinstance(t, types.Float) for t in values):
        return None
    return max(values, key=lambda t: t.bitwidth)


def _pair_type(pair):
    """The wider float type of the pair type ``pair``; None if it is not a pair of floats
    (the parts of a pair may differ in precision where single-precision input meets
    double-precision constants)."""
    if isinstance(pair, types.BaseTuple) and len(pair) == 2:
        return _common(tuple(pair))
    return None


def _fma(builder, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``: the CPU's instruction where it
    has one)."""
    function = builder.module.declare_intrinsic("llvm.fma", [a.type] * 3)
    return builder.call(function, [a, b, c])


def _real_intrinsic(build, *, pair_arguments, returns_pair):
    """The typer of an intrinsic of real floats and pairs, whose LLVM instructions
    ``build(builder, *values)`` writes in the widest of their precisions (a pair
    argument arrives as ``(hi, lo)``).

    ``pair_arguments``: the positions of the pair arguments.
    """

    def typer(typingctx, *args):
        floats = [
            _pair_type(t) if i in pair_arguments else _common((t,)) for i, t in enumerate(args)
        ]
        if any(t is None for t in floats):
            return None
        result = max(floats, key=lambda t: t.bitwidth)

        def codegen(context, builder, signature, values):
            arguments = []
            for i, (value, kind) in enumerate(zip(values, signature.args)):
                if i in pair_arguments:
                    parts = [builder.extract_value(value, k) for k in range(2)]
                    arguments.append(
                        tuple(context.cast(builder, x, t, result) for x, t in zip(parts, kind))
                    )
                else:
                    arguments.append(context.cast(builder, value, kind, result))
            out = build(builder, *arguments)
            if returns_pair:
                return context.make_tuple(builder, signature.return_type, list(out))
            return out

        returned = types.UniTuple(result, 2) if returns_pair else result
        return returned(*args), codegen

    return typer


def _plus_product(builder, pair, a, b):
    # two-product of a * b, two-sum of hi + p (Ogita, Rump and Oishi's Dot2 step)
    hi, lo = pair
    p = builder.fmul(a, b)
    p_error = _fma(builder, a, b, builder.fneg(p))
    s = builder.fadd(hi, p)
    z = builder.fsub(s, hi)
    s_error = builder.fadd(builder.fsub(hi, builder.fsub(s, z)), builder.fsub(p, z))
    return s, builder.fadd(lo, builder.fadd(s_error, p_error))


@intrinsic
def pair_plus_product(typingctx, pair, a, b):
    """The pair ``pair + a * b``."""
    return _real_intrinsic(_plus_product, pair_arguments=(0,), returns_pair=True)(
        typingctx, pair, a, b
    )


def _plus_square(builder, pair, x):
    # hi >= x^2: hi + x^2 splits exactly in three operations (fast two-sum)
    hi, lo = pair
    p = builder.fmul(x, x)
    p_error = _fma(builder, x, x, builder.fneg(p))
    s = builder.fadd(hi, p)
    s_error = builder.fsub(p, builder.fsub(s, hi))
    return s, builder.fadd(lo, builder.fadd(s_error, p_error))


@intrinsic
def pair_plus_square(typingctx, pair, x):
    """The pair ``pair + x^2``, for ``pair[0] >= x^2``."""
    return _real_intrinsic(_plus_square, pair_arguments=(0,), returns_pair=True)(typingctx, pair, x)


def _times(builder, t, pair):
    hi, lo = pair
    p = builder.fmul(t, hi)
    p_error = _fma(builder, t, hi, builder.fneg(p))
    return p, builder.fadd(p_error, builder.fmul(t, lo))


@intrinsic
def times_pair(typingctx, t, pair):
    """The pair ``t * pair`` (the rounding of ``t * hi`` kept)."""
    return _real_intrinsic(_times, pair_arguments=(1,), returns_pair=True)(typingctx, t, pair)


@intrinsic
def minus_pair_times(typingctx, c, pair, v):
    """``c - pair * v`` by two fused multiply-adds."""

    def build(builder, c, pair, v):
        hi, lo = pair
        return _fma(builder, builder.fneg(lo), v, _fma(builder, builder.fneg(hi), v, c))

    return _real_intrinsic(build, pair_arguments=(1,), returns_pair=False)(typingctx, c, pair, v)


@intrinsic
def plus_pair_times(typingctx, c, pair, v):
    """``c + pair * v`` by two fused multiply-adds."""

    def build(builder, c, pair, v):
        hi, lo = pair
        return _fma(builder, lo, v, _fma(builder, hi, v, c))

    return _real_intrinsic(build, pair_arguments=(1,), returns_pair=False)(typingctx, c, pair, v)


# Real and complex values: a complex pair is a pair of real pairs (real part, imaginary
# part).  The straight-line kernels write the same calls out (see ._unrolled).


def to_pair(hi, lo):
    """The pair of the values ``hi + lo`` (as :func:`add_product` takes it)."""


@overload(to_pair)
def _to_pair_impl(hi, lo):
    if isinstance(hi, types.Complex):
        return lambda hi, lo: ((hi.real, lo.real), (hi.imag, lo.imag))
    return lambda hi, lo: (hi, lo)


def from_pair(pair):
    """``(hi, lo)``, values, of a pair (the inverse of :func:`to_pair`)."""


@overload(from_pair)
def _from_pair_impl(pair):
    if isinstance(pair[0], types.BaseTuple):
        return lambda pair: (complex(pair[0][0], pair[1][0]), complex(pair[0][1], pair[1][1]))
    return lambda pair: pair


def add_square(pair, x):
    """The pair ``pair + |x|^2`` (real), for ``pair[0] >= 1 >= |x|^2``."""


@overload(add_square)
def _add_square_impl(pair, x):
    if isinstance(x, types.Complex):
        return lambda pair, x: pair_plus_square(pair_plus_square(pair, x.real), x.imag)
    return lambda pair, x: pair_plus_square(pair, x)


def add_product(pair, a, b):
    """``pair + conj(a) * b``; for complex values a pair of real pairs."""


@overload(add_product)
def _add_product_impl(pair, a, b):
    if isinstance(a, types.Complex) or isinstance(b, types.Complex):

        def complex_(pair, a, b):
            a, b = complex(a), complex(b)
            re = pair_plus_product(pair_plus_product(pair[0], a.real, b.real), a.imag, b.imag)
            im = pair_plus_product(pair_plus_product(pair[1], a.real, b.imag), -a.imag, b.real)
            return re, im

        return complex_
    return lambda pair, a, b: pair_plus_product(pair, a, b)


def scale_pair(t, pair):
    """``t * pair`` for a real or complex ``t``, as :func:`add_product`'s pairs."""


@overload(scale_pair)
def _scale_pair_impl(t, pair):
    if isinstance(t, types.Complex):

        def complex_(t, pair):
            re, im = pair
            real = pair_plus_product(times_pair(t.real, re), -t.imag, im[0])
            imag = pair_plus_product(times_pair(t.real, im), t.imag, re[0])
            # the low parts times the imaginary part of t
            real = pair_plus_product(real, -t.imag, im[1])
            imag = pair_plus_product(imag, t.imag, re[1])
            return real, imag

        return complex_
    return lambda t, pair: times_pair(t, pair)


def subtract_pair_times(c, pair, v):
    """``c - pair * v`` for real or complex values (``pair`` as :func:`add_product`'s)."""


@overload(subtract_pair_times)
def _subtract_pair_times_impl(c, pair, v):
    if isinstance(c, types.Complex):

        def complex_(c, pair, v):
            c, v = complex(c), complex(v)
            re, im = pair
            real = plus_pair_times(minus_pair_times(c.real, re, v.real), im, v.imag)
            imag = minus_pair_times(minus_pair_times(c.imag, re, v.imag), im, v.real)
            return complex(real, imag)

        return complex_
    return lambda c, pair, v: minus_pair_times(c, pair, v)


@intrinsic
def unitary_tau(typingctx, tau, pair):
    """``xLARFG``'s factor ``tau`` corrected so that ``H = I - tau v v^H`` is unitary to
    working precision.

    ``pair`` is ``|v|^2`` (with ``v[0] = 1``); ``tau`` is the factor as
    ``xLARFG`` computes it, ``(beta - alpha) / beta``, within a few units in
    the last place of the one that makes ``H`` unitary: ``|tau|^2 |v|^2 = 2
    Re(tau)``, for real ``tau`` ``2 / |v|^2``, for complex ``tau`` the real
    multiple of it with that modulus (which keeps its argument).  One Newton
    step from ``tau``, with the residual taken in twice the working
    precision, gives that factor to about half a unit in the last place
    (the textbook formula accumulates the rounding errors of ``beta`` and of
    ``v``), and needs no division for a real ``tau``: the step's own
    reciprocal is ``tau / 2`` there.
    """
    part = tau.underlying_float if isinstance(tau, types.Complex) else tau
    if _common((part,)) is None or _pair_type(pair) is None:
        return None
    wide = _common((part, _pair_type(pair)))  # the precision of the step

    def codegen(context, builder, signature, values):
        def widen(value, kind):
            return context.cast(builder, value, kind, wide)

        def narrow(value):
            return context.cast(builder, value, wide, part)

        def constant(x):
            return context.get_constant(wide, x)

        hi, lo = (widen(builder.extract_value(values[1], k), pair[k]) for k in range(2))
        if not isinstance(tau, types.Complex):
            t = widen(values[0], tau)
            residual = builder.fadd(_fma(builder, t, hi, constant(-2.0)), builder.fmul(t, lo))
            return narrow(builder.fsub(t, builder.fmul(residual, builder.fmul(t, constant(0.5)))))
        # kappa = 2 Re(tau) / (|tau|^2 |v|^2), about 1: one Newton step from 1.
        # 1 <= Re(tau) <= 2 and |Im(tau)| <= 1.
        value = context.make_complex(builder, tau, value=values[0])
        a, b = widen(value.real, part), widen(value.imag, part)
        aa = builder.fmul(a, a)
        modulus = _plus_product(builder, (aa, _fma(builder, a, a, builder.fneg(aa))), b, b)
        product = _times(builder, modulus[0], (hi, lo))
        product = _plus_product(builder, product, modulus[1], hi)
        residual = builder.fadd(builder.fsub(product[0], builder.fadd(a, a)), product[1])
        step = builder.fmul(residual, builder.fdiv(constant(0.5), a))
        kappa = builder.fsub(constant(1.0), step)
        result = context.make_complex(builder, tau)
        result.real = narrow(builder.fmul(kappa, a))
        result.imag = narrow(builder.fmul(kappa, b))
        return result._getvalue()

    return tau(tau, pair), codegen
