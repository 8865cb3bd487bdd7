"""General (non-symmetric) eigen-decomposition on the CPU: ``geev``, as LAPACK ``xGEEV``.

The builder takes a :class:`~blocksolve._pattern.CallPattern` and returns a
runner ``run(a) -> (eigenvalues, [eigenvectors,] info)`` over flattened,
C-contiguous ``(batch, n, n)`` operands.  The numba kernel works on one matrix
at a time (the QR iteration takes a different number of steps on every
matrix), on copies in the operands' precision (for single precision, numba's
arithmetic promotes some intermediates to double: ``1 / x`` of a float32 is a
float64, and so are the QR iteration's shifts and reflectors), with LAPACK's
algorithm:

1. a matrix whose largest entry is outside ``[sqrt(safmin) / eps, its
   reciprocal]`` is scaled into that range by a power of two (``xGEEV``
   scales there too, by a ratio; a power of two is exact), the eigenvalues
   scaled back at the end;
2. balancing (``xGEBAL``, job ``'B'``): rows and columns that isolate an
   eigenvalue are permuted to the ends, and the rest is scaled by powers of
   two until its row and column norms are about equal;
3. reduction to upper Hessenberg form by Householder reflections
   (``xGEHD2``), their product ``Q`` accumulated when eigenvectors are wanted
   (``xORGHR``/``xUNGHR``);
4. the QR iteration on the Hessenberg matrix (``xLAHQR``, what ``xHSEQR``
   calls for matrices of these sizes): Francis's double shift for real
   matrices, with 2x2 blocks brought to standard form (``xLANV2``), a single
   Wilkinson shift for complex ones; Ahues and Tisseur's deflation test,
   exceptional shifts after 6 (real) or 10 (complex) iterations without a
   deflation, at most ``30 * max(10, n)`` iterations per deflation;
5. with eigenvectors: back substitution on the (quasi-)triangular Schur form
   (``xTREVC``; in complex arithmetic, with its perturbation of small
   pivots and its rescaling against overflow), back transformation by ``Q``
   and the balancing (``xGEBAK``), and ``xGEEV``'s normalisation: unit
   Euclidean norm, the component of largest modulus real (positive for a
   complex matrix; for a complex pair of a real matrix, with the sign of its
   real part, as ``xLARTG`` leaves it; a real eigenvector is not changed).

Eigenvalues come out in LAPACK's order: ``w[i]`` is the ``i``-th diagonal entry
(or 2x2 block) of the Schur form, a complex-conjugate pair of a real matrix
with the positive imaginary part first; eigenvectors are the columns of ``v``,
in the matching order, both complex, as ``numpy.linalg.eig`` returns them for
a matrix with complex eigenvalues.  ``info`` is ``xGEEV``'s: ``i > 0`` when the
QR iteration failed after computing eigenvalues ``i+1 .. n`` (1-based); that
matrix then gets NaN for all its eigenvalues and eigenvectors.  A matrix with
an inf or NaN entry gets NaN eigenvalues and eigenvectors and ``info`` ``n``
(none converged), which the op reports as non-finite input (NumPy refuses such
input).

Every loop runs over the matrix size at run time (the kernel of a small size
has it as a constant, but no code is generated per size), so one kernel per
dtype and eigenvector option is compiled.  A matrix's results do not depend
on the other matrices of its batch.
"""

from __future__ import annotations

import cmath
import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ..._compat.numba import NO_REFERENCE_COUNTS
from ..._compat.numpy import numpy_linalg
from .._compiled import batch_kernel
from .._jit import launch
from ._pow2 import pow2_factors
from ._reference import lapack_function

__all__ = ["geev", "geev_per_matrix", "geev_numpy"]

# NumPy's error model, as the kernels' (:func:`blocksolve.cpu._jit.jit`): a division by
# zero gives inf or NaN, and a division costs no test for zero.  The stages take arrays
# and return scalars, so they need no reference counts: without numba's runtime (as numba
# builds its own string helpers) a call costs no atomic increments and decrements of its
# arrays' counts, which took a seventh of the time of a real 4x4 eig.
_njit = numba.njit(error_model="numpy", **NO_REFERENCE_COUNTS)
_inline = numba.njit(inline="always", error_model="numpy")

# xLAHQR: exceptional shifts after this many iterations without a deflation (real,
# complex), and at most ITERATIONS * max(10, n) iterations per deflation.
_EXCEPTIONAL_REAL = 6
_EXCEPTIONAL_COMPLEX = 10
ITERATIONS = 30


# --- small helpers, real and complex -------------------------------------------------


@_inline
def _abs1(z):
    """``|re| + |im|`` (LAPACK's ``CABS1``; ``|z|`` for a real ``z``)."""
    return abs(z.real) + abs(z.imag)


@_inline
def _abs2(z):
    return z.real * z.real + z.imag * z.imag


# A real times (or a complex over a real) double-precision complex, part by part: numba
# takes the real for a complex, so that the product costs four multiplications and the
# quotient Smith's algorithm and its branches (a twelfth of a complex eig of 4x4
# matrices; a real one's eigenvectors are complex too).  The parts are numba's but for
# the sign of a zero, which can put a square root on the other side of its branch cut:
# a matrix's eigenvalues may then come out in another order.  Single precision keeps
# numba's arithmetic (part by part would compute in double precision).
def _times(a, b):
    """``a * b``; compiled, part by part where one is real and the other a double complex."""
    return a * b


@overload(_times, jit_options={"error_model": "numpy"})
def _times_kernel(a, b):
    if isinstance(a, types.Float) and b == types.complex128:
        return lambda a, b: complex(a * b.real, a * b.imag)
    if a == types.complex128 and isinstance(b, types.Float):
        return lambda a, b: complex(a.real * b, a.imag * b)
    return lambda a, b: a * b


def _over(z, s):
    """``z / s``; compiled, part by part for a double complex ``z`` and a real ``s``."""
    return z / s


@overload(_over, jit_options={"error_model": "numpy"})
def _over_kernel(z, s):
    if z == types.complex128 and isinstance(s, types.Float):
        return lambda z, s: complex(z.real / s, z.imag / s)
    return lambda z, s: z / s


# |z| and sqrt(z) of a double-precision complex z from its parts wherever their squares
# neither over- nor underflow: numba's abs and cmath.sqrt call hypot, which costs several
# times more (a sixth of the time of a complex eig of 4x4 matrices went to it).  sqrt
# scales other finite z into that range (numba's cmath.sqrt raises ZeroDivisionError for
# a subnormal imaginary z).
_MODULUS_LOW = 2.0**-500
_MODULUS_HIGH = 2.0**500


def _modulus(z):
    """``|z|``; compiled, a double complex's from its parts where that is safe (above)."""
    return abs(z)


@overload(_modulus, jit_options={"error_model": "numpy"})
def _modulus_kernel(z):
    if z != types.complex128:
        return lambda z: abs(z)

    def modulus(z):
        x = abs(z.real)
        y = abs(z.imag)
        if _MODULUS_LOW < max(x, y) < _MODULUS_HIGH:
            return math.sqrt(x * x + y * y)
        return abs(z)

    return modulus


def _sqrt(z):
    """``cmath.sqrt(z)``; compiled, a double complex's from its parts (above)."""
    return cmath.sqrt(z)


@overload(_sqrt, jit_options={"error_model": "numpy"})
def _sqrt_kernel(z):
    if z != types.complex128:
        return lambda z: cmath.sqrt(z)

    def principal_root(z):  # as cmath.sqrt: sqrt((|x| + |z|) / 2), and y over twice it
        x = z.real
        y = z.imag
        if not (abs(x) < math.inf and abs(y) < math.inf):  # C99's special values
            return cmath.sqrt(z)
        big = max(abs(x), abs(y))
        if big == 0:
            return complex(0.0, y)
        if _MODULUS_LOW < big < _MODULUS_HIGH:
            s = math.sqrt(0.5 * (abs(x) + math.sqrt(x * x + y * y)))
        else:  # in range after an even power of two, whose root is exact
            exponent = math.frexp(big)[1] & ~1
            xs = math.ldexp(x, -exponent)
            ys = math.ldexp(y, -exponent)
            s = math.ldexp(math.sqrt(0.5 * (abs(xs) + math.sqrt(xs * xs + ys * ys))), exponent // 2)
        d = y / (2 * s)
        if x < 0:
            return complex(abs(d), math.copysign(s, y))
        return complex(s, d)

    return principal_root


@_inline
def _inverse_pow2(big):
    """A power of two near ``1 / big`` (``big`` finite and positive): scaling by it is exact
    and, unlike ``1 / big``, never loses bits to a subnormal."""
    return math.ldexp(1.0, -math.frexp(big)[1])


@_njit
def _scaled_norm(a, b, c):
    """``sqrt(|a|^2 + |b|^2 + |c|^2)`` without over- or underflow (the slow path)."""
    big = max(_abs1(a), _abs1(b), _abs1(c))
    if big == 0 or big != big or big == math.inf:
        return big
    inv = _inverse_pow2(big)
    return math.sqrt(_abs2(a * inv) + _abs2(b * inv) + _abs2(c * inv)) / inv


@_inline
def _norm3(a, b, c, low, high):
    """``sqrt(|a|^2 + |b|^2 + |c|^2)``; the sum of squares direct when it is in
    ``[low, high]`` (no over- or underflow can have spoilt it), else scaled."""
    squares = _abs2(a) + _abs2(b) + _abs2(c)
    if low <= squares <= high:
        return math.sqrt(squares)
    return _scaled_norm(a, b, c)


@_inline
def _column_norm(h, col, first, last, low, high):
    """Euclidean norm of ``h[first:last + 1, col]`` without over- or underflow: the sum
    of squares direct when it is in ``[low, high]``, else scaled by a power of two."""
    squares = 0.0
    for i in range(first, last + 1):
        squares += _abs2(h[i, col])
    if low <= squares <= high:
        return math.sqrt(squares)
    big = 0.0
    for i in range(first, last + 1):
        big = max(big, _abs1(h[i, col]))
    if big == 0:
        return 0.0
    inv = _inverse_pow2(big)
    total = 0.0
    for i in range(first, last + 1):
        total += _abs2(h[i, col] * inv)
    return math.sqrt(total) / inv


@_inline
def _row_norm(h, row, first, last):
    """Euclidean norm of ``h[row, first:last + 1]`` without over- or underflow."""
    big = 0.0
    for j in range(first, last + 1):
        big = max(big, _abs1(h[row, j]))
    if big == 0:
        return 0.0
    inv = _inverse_pow2(big)
    total = 0.0
    for j in range(first, last + 1):
        total += _abs2(h[row, j] * inv)
    return math.sqrt(total) / inv


def _reciprocal(z, low, high):
    """``1 / z``; compiled, for a complex ``z`` as ``conj(z) / |z|^2`` where ``|z|^2`` is
    in ``[low, high]`` (one real division), for a real one the division (as LAPACK's)."""
    return 1 / z


@overload(_reciprocal, inline="always", jit_options={"error_model": "numpy"})
def _reciprocal_kernel(z, low, high):
    if not isinstance(z, types.Complex):
        return lambda z, low, high: 1 / z

    def reciprocal(z, low, high):
        size = _abs2(z)
        if low <= size <= high:
            return z.conjugate() * (1 / size)
        return 1 / z

    return reciprocal


@_inline
def _reflector3(alpha, x1, x2, safmin, low, high):
    """LAPACK ``xLARFG`` of length 3 (``x2 = 0`` for length 2): ``(beta, v1, v2, tau)``
    with ``(I - tau [1, v1, v2]^H [1, v1, v2]) [alpha, x1, x2] = [beta, 0, 0]``, ``beta``
    real."""
    if x1 == 0 and x2 == 0 and alpha.imag == 0:
        return alpha, x1, x2, alpha * 0
    beta = -math.copysign(_norm3(alpha, x1, x2, low, high), alpha.real)
    knt = 0
    if abs(beta) < safmin:  # beta and x may be inaccurate: rescale (LAPACK's loop)
        inverse = 1 / safmin
        while abs(beta) < safmin and knt < 20:
            knt += 1
            x1 = x1 * inverse
            x2 = x2 * inverse
            alpha = alpha * inverse
            beta = beta * inverse
        beta = -math.copysign(_norm3(alpha, x1, x2, low, high), alpha.real)
    tau = (beta - alpha) * (1 / beta)
    scale = _reciprocal(alpha - beta, low, high)
    x1 = x1 * scale
    x2 = x2 * scale
    for _ in range(knt):
        beta = beta * safmin
    return alpha * 0 + beta, x1, x2, tau


# --- scaling and balancing (xGEEV, xGEBAL, xGEBAK) -----------------------------------


@_inline
def _largest_entry(a, n):
    """Largest modulus of the entries of ``a`` (``n x n``); NaN when one is inf or NaN."""
    largest = 0.0
    for i in range(n):
        for j in range(n):
            part = _modulus(a[i, j])
            largest = max(largest, part) + part * 0  # part * 0: NaN for inf or NaN
    return largest


@_njit
def _scale_into_range(h, n, largest, low, high):
    """Scale ``h`` by a power of two bringing its largest entry (``largest``) to about
    ``low`` or ``high`` when it is outside ``[low, high]``; the exponent (0: unscaled)."""
    if largest == 0 or low <= largest <= high:
        return 0
    target = low if largest < low else high
    exponent = math.frexp(target)[1] - math.frexp(largest)[1]
    f1, f2, f3 = pow2_factors(exponent)
    for i in range(n):
        for j in range(n):
            h[i, j] = h[i, j] * f1 * f2 * f3
    return exponent


@_inline
def _swap(h, n, j, m, k, l):
    """Exchange rows and columns ``j`` and ``m`` (``xGEBAL``: columns in rows ``0..l``,
    rows in columns ``k..n-1``)."""
    for i in range(l + 1):
        h[i, j], h[i, m] = h[i, m], h[i, j]
    for i in range(k, n):
        h[j, i], h[m, i] = h[m, i], h[j, i]


@_njit
def _balance(h, n, scale, ulp, safmin, low, high):
    """``xGEBAL`` with job ``'B'`` on ``h``: ``(ilo, ihi)`` (0-based, inclusive); ``scale``
    as LAPACK's (permutation indices outside ``ilo..ihi``, scale factors inside)."""
    k, l = 0, n - 1
    # Rows isolating an eigenvalue, pushed down.
    while True:
        found = -1
        for j in range(l, -1, -1):
            isolated = True
            for i in range(l + 1):
                if i != j and h[j, i] != 0:
                    isolated = False
                    break
            if isolated:
                found = j
                break
        if found < 0:
            break
        scale[l] = found
        if found != l:
            _swap(h, n, found, l, k, l)
        if l == 0:
            return 0, 0
        l -= 1
    # Columns isolating an eigenvalue, pushed left.
    while True:
        found = -1
        for j in range(k, l + 1):
            isolated = True
            for i in range(k, l + 1):
                if i != j and h[i, j] != 0:
                    isolated = False
                    break
            if isolated:
                found = j
                break
        if found < 0:
            break
        scale[k] = found
        if found != k:
            _swap(h, n, found, k, k, l)
        if k == l:  # the last one left (no exchange then): ilo = ihi
            break
        k += 1
    for i in range(k, l + 1):
        scale[i] = 1
    # Iterative scaling by powers of two.
    sfmin1 = safmin / ulp
    sfmax1 = 1 / sfmin1
    sfmin2 = sfmin1 * 2
    sfmax2 = 1 / sfmin2
    converged = False
    while not converged:
        converged = True
        for i in range(k, l + 1):
            # Column i: its norm in rows k..l, its entry of largest modulus in rows 0..l.
            squares = 0.0
            ica = 0
            top = 0.0
            for j in range(l + 1):
                entry = h[j, i]
                if j >= k:
                    squares += _abs2(entry)
                if _abs1(entry) > top:
                    ica, top = j, _abs1(entry)
            in_range = low <= squares <= high
            c = math.sqrt(squares) if in_range else _column_norm(h, i, k, l, low, high)
            ca = _modulus(h[ica, i])
            # Row i: its norm in columns k..l, its entry of largest modulus in columns k..n-1.
            squares = 0.0
            ira = k
            top = 0.0
            for j in range(k, n):
                entry = h[i, j]
                if j <= l:
                    squares += _abs2(entry)
                if _abs1(entry) > top:
                    ira, top = j, _abs1(entry)
            r = math.sqrt(squares) if low <= squares <= high else _row_norm(h, i, k, l)
            ra = _modulus(h[i, ira])
            if c == 0 or r == 0:
                continue
            g = r / 2
            f = 1.0
            s = c + r
            while c < g and max(f, c, ca) < sfmax2 and min(r, g, ra) > sfmin2:
                f *= 2
                c *= 2
                ca *= 2
                r /= 2
                g /= 2
                ra /= 2
            g = c / 2
            while g >= r and max(r, ra) < sfmax2 and min(f, c, g, ca) > sfmin2:
                f /= 2
                c /= 2
                g /= 2
                ca /= 2
                r *= 2
                ra *= 2
            if c + r >= 0.95 * s:
                continue
            if f < 1 and scale[i] < 1 and f * scale[i] <= sfmin1:
                continue
            if f > 1 and scale[i] > 1 and scale[i] >= sfmax1 / f:
                continue
            g = 1 / f
            scale[i] *= f
            converged = False
            for j in range(k, n):
                h[i, j] = h[i, j] * g
            for j in range(l + 1):
                h[j, i] = h[j, i] * f
    return k, l


@_njit
def _unbalance(v, n, scale, ilo, ihi):
    """``xGEBAK`` (job ``'B'``, right eigenvectors) on the rows of ``v``."""
    for i in range(ilo, ihi + 1 if ihi > ilo else ilo):  # ilo = ihi: no scaling there
        s = scale[i]
        for j in range(n):
            v[i, j] = _times(v[i, j], s)
    for i in range(ilo - 1, -1, -1):
        _swap_rows(v, n, i, int(scale[i]))
    for i in range(ihi + 1, n):
        _swap_rows(v, n, i, int(scale[i]))


@_inline
def _swap_rows(v, n, i, k):
    if k != i:
        for j in range(n):
            v[i, j], v[k, j] = v[k, j], v[i, j]


# --- Hessenberg reduction (xGEHD2, xORGHR) -------------------------------------------


@_njit
def _hessenberg(h, n, ilo, ihi, tau, safmin, low, high):
    """``xGEHD2``: ``h`` to upper Hessenberg form in rows and columns ``ilo..ihi``; the
    reflectors' vectors below the subdiagonal, their factors in ``tau``."""
    for i in range(ilo, ihi):
        # xLARFG on h[i+1:ihi+1, i]
        alpha = h[i + 1, i]
        xnorm = _column_norm(h, i, i + 2, ihi, low, high)
        if xnorm == 0 and alpha.imag == 0:
            tau[i] = 0
            continue
        beta = -math.copysign(_norm3(alpha, xnorm, 0.0, low, high), alpha.real)
        knt = 0
        if abs(beta) < safmin:
            inverse = 1 / safmin
            while abs(beta) < safmin and knt < 20:
                knt += 1
                for j in range(i + 2, ihi + 1):
                    h[j, i] = h[j, i] * inverse
                alpha = alpha * inverse
                beta = beta * inverse
            xnorm = _column_norm(h, i, i + 2, ihi, low, high)
            beta = -math.copysign(_scaled_norm(alpha, xnorm, 0.0), alpha.real)
        t = (beta - alpha) / beta
        factor = 1 / (alpha - beta)
        for j in range(i + 2, ihi + 1):
            h[j, i] = h[j, i] * factor
        for _ in range(knt):
            beta = beta * safmin
        tau[i] = t
        h[i + 1, i] = 1
        # From the right: h[0:ihi+1, i+1:ihi+1] (I - tau v v^H).
        for r in range(ihi + 1):
            s = h[r, i + 1]
            for j in range(i + 2, ihi + 1):
                s += h[r, j] * h[j, i]
            s = s * t
            h[r, i + 1] -= s
            for j in range(i + 2, ihi + 1):
                h[r, j] -= s * h[j, i].conjugate()
        # From the left: (I - conj(tau) v v^H) h[i+1:ihi+1, i+1:n].
        for c in range(i + 1, n):
            s = h[i + 1, c]
            for j in range(i + 2, ihi + 1):
                s += h[j, i].conjugate() * h[j, c]
            s = s * t.conjugate()
            h[i + 1, c] -= s
            for j in range(i + 2, ihi + 1):
                h[j, c] -= s * h[j, i]
        h[i + 1, i] = beta


@_njit
def _hessenberg_q(h, n, ilo, ihi, tau, z):
    """``xORGHR``: ``z`` = the product of the reflectors :func:`_hessenberg` left in
    ``h`` and ``tau``."""
    for i in range(n):
        for j in range(n):
            z[i, j] = 1 if i == j else 0
    for i in range(ihi - 1, ilo - 1, -1):
        t = tau[i]
        if t == 0:
            continue
        # z[i+1:, i+1:] <- (I - tau v v^H) z[i+1:, i+1:], v = [1, h[i+2:ihi+1, i]]
        for c in range(i + 1, ihi + 1):
            s = z[i + 1, c]
            for j in range(i + 2, ihi + 1):
                s += h[j, i].conjugate() * z[j, c]
            s = s * t
            z[i + 1, c] -= s
            for j in range(i + 2, ihi + 1):
                z[j, c] -= s * h[j, i]


# --- QR iteration (xLAHQR) ------------------------------------------------------------


@_njit
def _standard_block(a, b, c, d, eps):
    """``xLANV2``: the Schur factorisation of the real 2x2 ``[[a, b], [c, d]]`` in standard
    form; ``(a, b, c, d, rt1r, rt1i, rt2r, rt2i, cs, sn)``."""
    if c == 0:
        cs, sn = 1.0, 0.0
    elif b == 0:
        cs, sn = 0.0, 1.0
        a, d = d, a
        b = -c
        c = 0.0 * c
    elif (a - d) == 0 and math.copysign(1.0, b) != math.copysign(1.0, c):
        cs, sn = 1.0, 0.0
    else:
        temp = a - d
        p = 0.5 * temp
        bcmax = max(abs(b), abs(c))
        bcmis = min(abs(b), abs(c)) * math.copysign(1.0, b) * math.copysign(1.0, c)
        scale = max(abs(p), bcmax)
        z = (p / scale) * p + (bcmax / scale) * bcmis
        if z >= 4 * eps:  # real eigenvalues
            z = p + math.copysign(math.sqrt(scale) * math.sqrt(z), p)
            a = d + z
            d = d - (bcmax / z) * bcmis
            tau = math.hypot(c, z)
            cs = z / tau
            sn = c / tau
            b = b - c
            c = 0.0 * c
        else:  # complex or (almost) equal real eigenvalues: equal diagonal entries
            sigma = b + c
            tau = math.hypot(sigma, temp)
            cs = math.sqrt(0.5 * (1 + abs(sigma) / tau))
            sn = -(p / (tau * cs)) * math.copysign(1.0, sigma)
            aa = a * cs + b * sn
            bb = -a * sn + b * cs
            cc = c * cs + d * sn
            dd = -c * sn + d * cs
            a = aa * cs + cc * sn
            b = bb * cs + dd * sn
            c = -aa * sn + cc * cs
            d = -bb * sn + dd * cs
            temp = 0.5 * (a + d)
            a = temp
            d = temp
            if c != 0:
                if b != 0:
                    if math.copysign(1.0, b) == math.copysign(1.0, c):  # real after all
                        sab = math.sqrt(abs(b))
                        sac = math.sqrt(abs(c))
                        p = math.copysign(sab * sac, c)
                        tau = 1 / math.sqrt(abs(b + c))
                        a = temp + p
                        d = temp - p
                        b = b - c
                        c = 0.0 * c
                        cs1 = sab * tau
                        sn1 = sac * tau
                        temp = cs * cs1 - sn * sn1
                        sn = cs * sn1 + sn * cs1
                        cs = temp
                else:
                    b = -c
                    c = 0.0 * c
                    temp = cs
                    cs = -sn
                    sn = temp
    rt1i = 0.0
    if c != 0:
        rt1i = math.sqrt(abs(b)) * math.sqrt(abs(c))
    return a, b, c, d, a, rt1i, d, -rt1i, cs, sn


@_inline
def _small_subdiagonal(h, i, l, ilo, ihi, ulp, smlnum):
    """The row ``k`` (``l < k <= i``) with a negligible ``h[k, k-1]`` (Ahues and Tisseur's
    test, as ``xLAHQR``), ``l`` when there is none."""
    k = i
    while k > l:
        sub = _abs1(h[k, k - 1])
        if sub <= smlnum:
            break
        tst = _abs1(h[k - 1, k - 1]) + _abs1(h[k, k])
        if tst == 0:
            if k - 2 >= ilo:
                tst += abs(h[k - 1, k - 2].real)
            if k + 1 <= ihi:
                tst += abs(h[k + 1, k].real)
        if abs(h[k, k - 1].real) <= ulp * tst:
            sup = _abs1(h[k - 1, k])
            ab = max(sub, sup)
            ba = min(sub, sup)
            diff = _abs1(h[k - 1, k - 1] - h[k, k])
            aa = max(_abs1(h[k, k]), diff)
            bb = min(_abs1(h[k, k]), diff)
            s = aa + ab
            if ba * (ab / s) <= max(smlnum, ulp * (bb * (aa / s))):
                break
        k -= 1
    return k


@_njit
def _hqr_real(h, z, w, n, ilo, ihi, wantt, wantz, norms):
    """``xLAHQR`` for a real Hessenberg ``h``: eigenvalues into ``w`` (complex), the Schur
    form in ``h`` (``wantt``), Schur vectors applied to ``z`` (``wantz``); ``info``."""
    ulp, safmin, low, high = norms
    if ilo == ihi:
        w[ilo] = h[ilo, ilo]
        return 0
    for j in range(ilo, ihi - 2):
        h[j + 2, j] = 0
        h[j + 3, j] = 0
    if ilo <= ihi - 2:
        h[ihi, ihi - 2] = 0
    nh = ihi - ilo + 1
    smlnum = safmin * (nh / ulp)
    safe = safmin / (ulp / 2)  # xLARFG's safmin / eps
    i1, i2 = 0, n - 1
    itmax = ITERATIONS * max(10, nh)
    kdefl = 0
    i = ihi
    while i >= ilo:
        l = ilo
        converged = False
        for _ in range(itmax + 1):
            l = _small_subdiagonal(h, i, l, ilo, ihi, ulp, smlnum)
            if l > ilo:
                h[l, l - 1] = 0
            if l >= i - 1:
                converged = True
                break
            kdefl += 1
            if not wantt:
                i1, i2 = l, i
            if kdefl % (2 * _EXCEPTIONAL_REAL) == 0:
                s = abs(h[i, i - 1]) + abs(h[i - 1, i - 2])
                h11 = 0.75 * s + h[i, i]
                h12 = -0.4375 * s
                h21 = s
                h22 = h11
            elif kdefl % _EXCEPTIONAL_REAL == 0:
                s = abs(h[l + 1, l]) + abs(h[l + 2, l + 1])
                h11 = 0.75 * s + h[l, l]
                h12 = -0.4375 * s
                h21 = s
                h22 = h11
            else:
                h11 = h[i - 1, i - 1]
                h21 = h[i, i - 1]
                h12 = h[i - 1, i]
                h22 = h[i, i]
            s = abs(h11) + abs(h12) + abs(h21) + abs(h22)
            if s == 0:
                rt1r = rt1i = rt2r = rt2i = 0.0 * s
            else:
                inv = 1 / s
                h11 *= inv
                h21 *= inv
                h12 *= inv
                h22 *= inv
                tr = (h11 + h22) / 2
                det = (h11 - tr) * (h22 - tr) - h12 * h21
                rtdisc = math.sqrt(abs(det))
                if det >= 0:  # complex conjugate shifts
                    rt1r = tr * s
                    rt2r = rt1r
                    rt1i = rtdisc * s
                    rt2i = -rt1i
                else:  # real shifts: use one of them twice
                    rt1r = tr + rtdisc
                    rt2r = tr - rtdisc
                    if abs(rt1r - h22) <= abs(rt2r - h22):
                        rt1r = rt1r * s
                    else:
                        rt1r = rt2r * s
                    rt2r = rt1r
                    rt1i = rt2i = 0.0 * s
            # Two consecutive small subdiagonal entries?
            m = i - 2
            while True:
                h21s = h[m + 1, m]
                inv = 1 / (abs(h[m, m] - rt2r) + abs(rt2i) + abs(h21s))
                h21s = h21s * inv
                v1 = (
                    h21s * h[m, m + 1]
                    + (h[m, m] - rt1r) * ((h[m, m] - rt2r) * inv)
                    - rt1i * (rt2i * inv)
                )
                v2 = h21s * (h[m, m] + h[m + 1, m + 1] - rt1r - rt2r)
                v3 = h21s * h[m + 2, m + 1]
                inv = 1 / (abs(v1) + abs(v2) + abs(v3))
                v1 *= inv
                v2 *= inv
                v3 *= inv
                if m == l:
                    break
                if abs(h[m, m - 1]) * (abs(v2) + abs(v3)) <= ulp * abs(v1) * (
                    abs(h[m - 1, m - 1]) + abs(h[m, m]) + abs(h[m + 1, m + 1])
                ):
                    break
                m -= 1
            # Double-shift QR step.
            for k in range(m, i):
                three = k + 2 <= i
                if k > m:
                    v1 = h[k, k - 1]
                    v2 = h[k + 1, k - 1]
                    v3 = h[k + 2, k - 1] if three else 0.0 * v1
                beta, v2, v3, t1 = _reflector3(v1, v2, v3, safe, low, high)
                if k > m:
                    h[k, k - 1] = beta
                    h[k + 1, k - 1] = 0
                    if three:
                        h[k + 2, k - 1] = 0
                elif m > l:
                    h[k, k - 1] = h[k, k - 1] * (1 - t1)
                t2 = t1 * v2
                if three:
                    t3 = t1 * v3
                    for j in range(k, i2 + 1):
                        sm = h[k, j] + v2 * h[k + 1, j] + v3 * h[k + 2, j]
                        h[k, j] -= sm * t1
                        h[k + 1, j] -= sm * t2
                        h[k + 2, j] -= sm * t3
                    for j in range(i1, min(k + 3, i) + 1):
                        sm = h[j, k] + v2 * h[j, k + 1] + v3 * h[j, k + 2]
                        h[j, k] -= sm * t1
                        h[j, k + 1] -= sm * t2
                        h[j, k + 2] -= sm * t3
                    if wantz:
                        for j in range(ilo, ihi + 1):
                            sm = z[j, k] + v2 * z[j, k + 1] + v3 * z[j, k + 2]
                            z[j, k] -= sm * t1
                            z[j, k + 1] -= sm * t2
                            z[j, k + 2] -= sm * t3
                else:
                    for j in range(k, i2 + 1):
                        sm = h[k, j] + v2 * h[k + 1, j]
                        h[k, j] -= sm * t1
                        h[k + 1, j] -= sm * t2
                    for j in range(i1, i + 1):
                        sm = h[j, k] + v2 * h[j, k + 1]
                        h[j, k] -= sm * t1
                        h[j, k + 1] -= sm * t2
                    if wantz:
                        for j in range(ilo, ihi + 1):
                            sm = z[j, k] + v2 * z[j, k + 1]
                            z[j, k] -= sm * t1
                            z[j, k + 1] -= sm * t2
        if not converged:
            return i + 1
        if l == i:  # one eigenvalue converged
            w[i] = h[i, i]
        else:  # a 2x2 block: standard form, its eigenvalues
            a, b, c, d, rt1r, rt1i, rt2r, rt2i, cs, sn = _standard_block(
                h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i], ulp
            )
            h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i] = a, b, c, d
            w[i - 1] = complex(rt1r, rt1i)
            w[i] = complex(rt2r, rt2i)
            if wantt:
                for j in range(i + 1, i2 + 1):
                    x, y = h[i - 1, j], h[i, j]
                    h[i - 1, j] = cs * x + sn * y
                    h[i, j] = cs * y - sn * x
                for j in range(i1, i - 1):
                    x, y = h[j, i - 1], h[j, i]
                    h[j, i - 1] = cs * x + sn * y
                    h[j, i] = cs * y - sn * x
            if wantz:
                for j in range(ilo, ihi + 1):
                    x, y = z[j, i - 1], z[j, i]
                    z[j, i - 1] = cs * x + sn * y
                    z[j, i] = cs * y - sn * x
        kdefl = 0
        i = l - 1
    return 0


@_inline
def _scale_column(h, col, first, last, factor):
    for j in range(first, last + 1):
        h[j, col] = h[j, col] * factor


@_inline
def _scale_row(h, row, first, last, factor):
    for j in range(first, last + 1):
        h[row, j] = h[row, j] * factor


@_njit
def _hqr_complex(h, z, w, n, ilo, ihi, wantt, wantz, norms):
    """``xLAHQR`` for a complex Hessenberg ``h`` (``ZLAHQR``); as :func:`_hqr_real`."""
    ulp, safmin, low, high = norms
    if ilo == ihi:
        w[ilo] = h[ilo, ilo]
        return 0
    for j in range(ilo, ihi - 2):
        h[j + 2, j] = 0
        h[j + 3, j] = 0
    if ilo <= ihi - 2:
        h[ihi, ihi - 2] = 0
    jlo, jhi = (0, n - 1) if wantt else (ilo, ihi)
    # Real subdiagonal entries.
    for i in range(ilo + 1, ihi + 1):
        if h[i, i - 1].imag != 0:
            sc = _over(h[i, i - 1], _abs1(h[i, i - 1]))
            sc = _over(sc.conjugate(), _modulus(sc))
            h[i, i - 1] = _modulus(h[i, i - 1])
            _scale_row(h, i, i, jhi, sc)
            _scale_column(h, i, jlo, min(jhi, i + 1), sc.conjugate())
            if wantz:
                _scale_column(z, i, ilo, ihi, sc.conjugate())
    nh = ihi - ilo + 1
    smlnum = safmin * (nh / ulp)
    safe = safmin / (ulp / 2)
    i1, i2 = 0, n - 1
    itmax = ITERATIONS * max(10, nh)
    kdefl = 0
    i = ihi
    while i >= ilo:
        l = ilo
        converged = False
        for _ in range(itmax + 1):
            l = _small_subdiagonal(h, i, l, ilo, ihi, ulp, smlnum)
            if l > ilo:
                h[l, l - 1] = 0
            if l >= i:
                converged = True
                break
            kdefl += 1
            if not wantt:
                i1, i2 = l, i
            if kdefl % (2 * _EXCEPTIONAL_COMPLEX) == 0:
                t = 0.75 * abs(h[i, i - 1].real) + h[i, i]
            elif kdefl % _EXCEPTIONAL_COMPLEX == 0:
                t = 0.75 * abs(h[l + 1, l].real) + h[l, l]
            else:  # Wilkinson's shift
                t = h[i, i]
                u = _sqrt(h[i - 1, i]) * _sqrt(h[i, i - 1])
                s = _abs1(u)
                if s != 0:
                    x = 0.5 * (h[i - 1, i - 1] - t)
                    sx = _abs1(x)
                    s = max(s, sx)
                    xs, us = _over(x, s), _over(u, s)
                    y = s * _sqrt(xs * xs + us * us)
                    if sx > 0:
                        xx = _over(x, sx)
                        if xx.real * y.real + xx.imag * y.imag < 0:
                            y = -y
                    t = t - u * (u / (x + y))
            # Two consecutive small subdiagonal entries?
            m = i - 1
            while True:
                h11 = h[m, m]
                h22 = h[m + 1, m + 1]
                h11s = h11 - t
                h21 = h[m + 1, m].real
                s = _abs1(h11s) + abs(h21)
                h11s = _over(h11s, s)
                h21 = h21 / s
                v1 = h11s
                v2 = h21 + 0 * h11s
                if m == l:
                    break
                h10 = h[m, m - 1].real
                if abs(h10) * abs(h21) <= ulp * (_abs1(h11s) * (_abs1(h11) + _abs1(h22))):
                    break
                m -= 1
            # Single-shift QR step.
            for k in range(m, i):
                if k > m:
                    v1 = h[k, k - 1]
                    v2 = h[k + 1, k - 1]
                beta, v2, _, t1 = _reflector3(v1, v2, 0 * v2, safe, low, high)
                if k > m:
                    h[k, k - 1] = beta
                    h[k + 1, k - 1] = 0
                t2 = (t1 * v2).real
                for j in range(k, i2 + 1):
                    sm = t1.conjugate() * h[k, j] + _times(t2, h[k + 1, j])
                    h[k, j] -= sm
                    h[k + 1, j] -= sm * v2
                for j in range(i1, min(k + 2, i) + 1):
                    sm = t1 * h[j, k] + _times(t2, h[j, k + 1])
                    h[j, k] -= sm
                    h[j, k + 1] -= sm * v2.conjugate()
                if wantz:
                    for j in range(ilo, ihi + 1):
                        sm = t1 * z[j, k] + _times(t2, z[j, k + 1])
                        z[j, k] -= sm
                        z[j, k + 1] -= sm * v2.conjugate()
                if k == m and m > l:  # keep h[m, m-1] real
                    temp = 1 - t1
                    temp = _over(temp, _modulus(temp))
                    h[m + 1, m] = h[m + 1, m] * temp.conjugate()
                    if m + 2 <= i:
                        h[m + 2, m + 1] = h[m + 2, m + 1] * temp
                    for j in range(m, i + 1):
                        if j != m + 1:
                            if i2 > j:
                                _scale_row(h, j, j + 1, i2, temp)
                            _scale_column(h, j, i1, j - 1, temp.conjugate())
                            if wantz:
                                _scale_column(z, j, ilo, ihi, temp.conjugate())
            # Keep h[i, i-1] real.
            temp = h[i, i - 1]
            if temp.imag != 0:
                rtemp = _modulus(temp)
                h[i, i - 1] = rtemp
                temp = _over(temp, rtemp)
                if i2 > i:
                    _scale_row(h, i, i + 1, i2, temp.conjugate())
                _scale_column(h, i, i1, i - 1, temp)
                if wantz:
                    _scale_column(z, i, ilo, ihi, temp)
        if not converged:
            return i + 1
        w[i] = h[i, i]
        kdefl = 0
        i = l - 1
    return 0


def _hqr(h, z, w, n, ilo, ihi, wantt, wantz, norms):
    """The QR iteration for ``h``'s kind: :func:`_hqr_real` or :func:`_hqr_complex`."""
    function = _hqr_complex if np.iscomplexobj(h) else _hqr_real
    return function(h, z, w, n, ilo, ihi, wantt, wantz, norms)


@overload(_hqr, jit_options=NO_REFERENCE_COUNTS)  # as _njit: no reference counts
def _hqr_kernel(h, z, w, n, ilo, ihi, wantt, wantz, norms):
    complex_ = isinstance(h.dtype, types.Complex)
    function = _hqr_complex if complex_ else _hqr_real

    def hqr(h, z, w, n, ilo, ihi, wantt, wantz, norms):
        return function(h, z, w, n, ilo, ihi, wantt, wantz, norms)

    return hqr


# --- eigenvectors (xTREVC, xGEBAK, xGEEV's normalisation) ----------------------------


@_inline
def _rescale(x, top, factor):
    for k in range(top + 1):
        x[k] = _times(x[k], factor)


@_njit
def _solve2(a11, a12, a21, a22, b1, b2, smin, bignum):
    """``[[a11, a12], [a21, a22]] [x1, x2] = scale [b1, b2]`` by Gaussian elimination with
    complete pivoting, pivots below ``smin`` raised to it (as ``xLALN2``); ``(x1, x2,
    scale)`` with ``scale <= 1`` keeping the solution below ``bignum``."""
    p11, p12, p21, p22 = _abs1(a11), _abs1(a12), _abs1(a21), _abs1(a22)
    cmax = max(p11, p12, p21, p22)
    if cmax < smin:
        scale = 1.0
        bnorm = max(_abs1(b1), _abs1(b2))
        if smin < 1 and bnorm > 1 and bnorm > bignum * smin:
            scale = 1 / bnorm
        return b1 * (scale / smin), b2 * (scale / smin), scale
    swap_cols = p12 == cmax or p22 == cmax
    if swap_cols:
        a11, a12, a21, a22 = a12, a11, a22, a21
    swap_rows = _abs1(a21) > _abs1(a11)
    if swap_rows:
        a11, a12, a21, a22 = a21, a22, a11, a12
        b1, b2 = b2, b1
    l21 = a21 / a11
    u22 = a22 - l21 * a12
    if _abs1(u22) < smin:
        u22 = smin + 0 * u22
    y2 = b2 - l21 * b1
    scale = 1.0
    u = _abs1(u22)
    size = max(_abs1(y2), _abs1(b1))
    if u < 1 and size > 1 and size > bignum * u:
        scale = 1 / size
        b1 = b1 * scale
        y2 = y2 * scale
    x2 = y2 / u22
    x1 = (b1 - a12 * x2) / a11
    if swap_cols:
        x1, x2 = x2, x1
    return x1, x2, scale


@_njit
def _back_substitute(t, x, top, rows, lam, smin, bignum, colnorm, pairs):
    """Solve rows ``0..rows-1`` of ``(T - lam) x = 0`` for ``x``, whose entries
    ``rows..top`` are set and whose others hold the right-hand side; rescales all of
    ``x[:top + 1]`` where it would overflow (``xTREVC``)."""
    j = rows - 1
    while j >= 0:
        if pairs and j > 0 and t[j, j - 1] != 0:
            x1, x2, scale = _solve2(
                t[j - 1, j - 1] - lam,
                t[j - 1, j],
                t[j, j - 1],
                t[j, j] - lam,
                x[j - 1],
                x[j],
                smin,
                bignum,
            )
            if scale != 1:
                _rescale(x, top, scale)
            xmax = max(_abs1(x1), _abs1(x2))
            if xmax > 1 and max(colnorm[j - 1], colnorm[j]) > bignum / xmax:
                x1, x2 = _over(x1, xmax), _over(x2, xmax)
                _rescale(x, top, 1 / xmax)
            x[j - 1] = x1
            x[j] = x2
            for k in range(j - 1):
                x[k] -= _times(x1, t[k, j - 1]) + _times(x2, t[k, j])
            j -= 2
        else:
            d = t[j, j] - lam
            if _abs1(d) < smin:
                d = smin + 0 * d
            r = x[j]
            size = _abs1(r)
            if _abs1(d) < 1 and size > 1 and size > bignum * _abs1(d):
                _rescale(x, top, 1 / size)
                r = x[j]
            xj = r / d
            size = _abs1(xj)
            if size > 1 and colnorm[j] > bignum / size:
                xj = _over(xj, size)
                _rescale(x, top, 1 / size)
            x[j] = xj
            for k in range(j):
                x[k] -= _times(xj, t[k, j])
            j -= 1


@_inline
def _transform(z, x, v, n, col, top):
    """``v[:, col] = z[:, :top + 1] x[:top + 1]``."""
    for r in range(n):
        s = 0j * x[0]
        for k in range(top + 1):
            s += _times(z[r, k], x[k])
        v[r, col] = s


@_njit
def _eigenvectors(t, z, v, n, x, colnorm, pairs, norms):
    """``xTREVC`` with back transformation: the eigenvectors of ``z t z^H`` into the
    columns of ``v`` (complex), for the (quasi-)triangular ``t`` (2x2 blocks only where
    ``pairs``, a real ``t``)."""
    ulp, safmin, _, _ = norms
    smlnum = safmin * (n / ulp)
    bignum = (1 - ulp) / smlnum
    for j in range(n):
        total = 0.0
        for k in range(j):
            total += _abs1(t[k, j])
        colnorm[j] = total
    ki = n - 1
    while ki >= 0:
        if pairs and ki > 0 and t[ki, ki - 1] != 0:  # a complex pair, rows ki-1 and ki
            wr = t[ki, ki].real
            wi = math.sqrt(abs(t[ki - 1, ki].real)) * math.sqrt(abs(t[ki, ki - 1].real))
            lam = complex(wr, wi)
            smin = max(ulp * (abs(wr) + abs(wi)), smlnum)
            if abs(t[ki - 1, ki]) >= abs(t[ki, ki - 1]):
                x[ki - 1] = 1
                x[ki] = complex(0, wi / t[ki - 1, ki].real)
            else:
                x[ki - 1] = -wi / t[ki, ki - 1].real
                x[ki] = 1j
            for k in range(ki - 1):
                x[k] = -_times(x[ki - 1], t[k, ki - 1]) - _times(x[ki], t[k, ki])
            _back_substitute(t, x, ki, ki - 1, lam, smin, bignum, colnorm, pairs)
            _transform(z, x, v, n, ki - 1, ki)
            for r in range(n):
                v[r, ki] = v[r, ki - 1].conjugate()
            ki -= 2
        else:
            lam = t[ki, ki] + 0j
            smin = max(ulp * _abs1(lam), smlnum)
            x[ki] = 1
            for k in range(ki):
                x[k] = -t[k, ki]
            _back_substitute(t, x, ki, ki, lam, smin, bignum, colnorm, pairs)
            _transform(z, x, v, n, ki, ki)
            ki -= 1


@_njit
def _normalise(v, w, n, real_input):
    """``xGEEV``'s normalisation of every column of ``v``: unit Euclidean norm, then (but
    for the real eigenvectors of a real matrix) the component of largest modulus made
    real (positive for a complex matrix, of its real part's sign for a real one)."""
    for j in range(n):
        big = 0.0
        for r in range(n):
            big = max(big, _abs1(v[r, j]))
        if big == 0 or big != big:
            continue
        inv = _inverse_pow2(big)
        total = 0.0
        for r in range(n):
            total += _abs2(v[r, j] * inv)
        factor = inv / math.sqrt(total)
        for r in range(n):
            v[r, j] = _times(v[r, j], factor)
        if real_input and w[j].imag == 0:
            continue
        k = 0
        size = _abs2(v[0, j])
        for r in range(1, n):
            s = _abs2(v[r, j])
            if s > size:
                k, size = r, s
        phase = _over(v[k, j].conjugate(), math.sqrt(size))
        if real_input and v[k, j].real < 0:
            phase = -phase
        for r in range(n):
            v[r, j] = v[r, j] * phase
        v[k, j] = v[k, j].real


# --- the kernel ------------------------------------------------------------------------


@_inline
def _fill_nan(w, v, n, vectors):
    for i in range(n):
        w[i] = np.nan
        if vectors:
            for j in range(n):
                v[i, j] = np.nan


@_njit
def _geev_one(h, z, w, v, tau, scale, x, colnorm, n, vectors, norms, range_low, range_high):
    """One matrix, copied into ``h``: its eigenvalues into ``w``, eigenvectors into ``v``;
    returns ``info``."""
    ulp, safmin, _, _ = norms
    largest = _largest_entry(h, n)
    if largest != largest:  # an inf or NaN entry: nothing converges
        _fill_nan(w, v, n, vectors)
        return n
    exponent = _scale_into_range(h, n, largest, range_low, range_high)
    ilo, ihi = _balance(h, n, scale, ulp, safmin, norms[2], norms[3])
    _hessenberg(h, n, ilo, ihi, tau, safmin, norms[2], norms[3])
    if vectors:
        _hessenberg_q(h, n, ilo, ihi, tau, z)
    for i in range(ilo):
        w[i] = h[i, i]
    for i in range(ihi + 1, n):
        w[i] = h[i, i]
    info = _hqr(h, z, w, n, ilo, ihi, vectors, vectors, norms)
    if info:
        _fill_nan(w, v, n, vectors)
        return info
    real_input = not np.iscomplexobj(h)
    if vectors:
        _eigenvectors(h, z, v, n, x, colnorm, real_input, norms)
        _unbalance(v, n, scale, ilo, ihi)
        _normalise(v, w, n, real_input)
    if exponent:
        for i in range(n):
            w[i] = complex(math.ldexp(w[i].real, -exponent), math.ldexp(w[i].imag, -exponent))
    return info


@batch_kernel(options=("vectors",))
def _geev_kernel(start, stop, n, a, w, v, info, vectors):
    # Each matrix is copied into thread-local arrays: the helpers are never handed a view
    # of the shared operands (whose reference count every thread would update).
    real = np.empty(0, w.real.dtype)  # the real type, for np.finfo
    h = np.empty((n, n), a.dtype)
    z = np.empty((n, n) if vectors else (1, 1), a.dtype)
    tau = np.empty(max(n, 1), a.dtype)
    scale = np.empty(max(n, 1), real.dtype)
    colnorm = np.empty(max(n, 1), real.dtype)
    x = np.empty(max(n, 1), w.dtype)
    values = np.empty(max(n, 1), w.dtype)
    vecs = np.empty((n, n) if vectors else (1, 1), w.dtype)
    finfo = np.finfo(real.dtype)
    ulp, safmin = finfo.eps, finfo.tiny
    # Sums of squares in [low, high] did not over- or underflow.
    norms = (ulp, safmin, safmin / ulp, finfo.max * ulp)
    # xGEEV's range for the largest entry.
    range_low = math.sqrt(safmin) / ulp
    range_high = 1 / range_low
    for m in range(start, stop):
        for i in range(n):
            for j in range(n):
                h[i, j] = a[m, i, j]
        info[m] = _geev_one(
            h, z, values, vecs, tau, scale, x, colnorm, n, vectors, norms, range_low, range_high
        )
        for i in range(n):
            w[m, i] = values[i]
        if vectors:
            for i in range(n):
                for j in range(n):
                    v[m, i, j] = vecs[i, j]


def _complex_dtype(dtype):
    return np.result_type(np.dtype(dtype), np.complex64)


def geev(pattern):
    """Eigenvalues (and right eigenvectors when option ``vectors``) of general matrices."""
    n = pattern.dim("n")
    vectors = bool(pattern.option("vectors"))
    kernel = _geev_kernel.sized(n, vectors=vectors)
    dtype = np.dtype(pattern.np_dtype)
    complex_ = _complex_dtype(dtype)

    def run(a):
        batch, n = a.shape[0], a.shape[1]
        w = np.empty((batch, n), complex_)
        v = np.empty((batch, n, n) if vectors else (batch, 0, 0), complex_)
        info = np.empty(batch, np.int32)
        # About 10 n^3 for the eigenvalues (most of it the QR iteration), 25 n^3 with vectors.
        launch(kernel, batch, (25 if vectors else 10) * n**3, a, w, v, info)
        return (w, v, info) if vectors else (w, info)

    return run


# --- NumPy's LAPACK -------------------------------------------------------------------


def _unpack_real(wr, wi, vr):
    """LAPACK's real eigenvectors (a complex pair as its real and imaginary columns) as
    complex columns."""
    v = vr.astype(np.result_type(vr.dtype, np.complex64))
    j, n = 0, len(wr)
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            v[:, j] = vr[:, j] + 1j * vr[:, j + 1]
            v[:, j + 1] = np.conj(v[:, j])
            j += 2
        else:
            j += 1
    return v


def geev_per_matrix(pattern):
    """LAPACK ``xGEEV`` (SciPy's) on one matrix; ``info`` as its, and all-NaN results for a
    matrix that failed or has an inf or NaN entry (``info`` ``n``), as the kernel gives."""
    vectors = bool(pattern.option("vectors"))
    dtype = np.dtype(pattern.np_dtype)
    complex_ = _complex_dtype(dtype)
    function = lapack_function("geev", dtype)

    def nan_results(n, info):
        w = np.full(n, np.nan, complex_)
        return (w, np.full((n, n), np.nan, complex_), info) if vectors else (w, info)

    def run(a):
        n = a.shape[0]
        if not np.isfinite(a).all():
            return nan_results(n, n)
        if dtype.kind == "c":
            w, _, vr, info = function(a, compute_vl=0, compute_vr=int(vectors))
            v = vr
        else:
            wr, wi, _, vr, info = function(a, compute_vl=0, compute_vr=int(vectors))
            w = wr + 1j * wi
            v = _unpack_real(wr, wi, vr) if vectors else None
        if info > 0:
            return nan_results(n, int(info))
        w = w.astype(complex_)
        return (w, v.astype(complex_), int(info)) if vectors else (w, int(info))

    return run


def geev_numpy(pattern):
    """``numpy.linalg.eig`` or ``eigvals``'s gufunc; a slice with an inf or NaN raises
    ``LinAlgError`` instead (LAPACK refuses such a matrix), so that the per-matrix calls
    report which."""
    compute = numpy_linalg("eig" if pattern.option("vectors") else "eigvals", pattern.np_dtype)

    def finite_only(a):
        if not np.isfinite(a).all():
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs")
        return compute(a)

    return finite_only
