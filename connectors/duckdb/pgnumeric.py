"""PostgreSQL's ``numeric`` division, ``avg`` and ``variance``/``stddev`` in exact arithmetic, for DuckDB.

DuckDB divides decimals in double precision; PostgreSQL divides exactly and rounds the quotient at a result
scale chosen from the *values* (``select_div_scale`` in ``src/backend/utils/adt/numeric.c``: at least 16
significant digits, never fewer fractional digits than either operand's display scale), half away from zero.
``avg`` of integers and numerics is that division of the exact sum by the count; ``var_samp``/``var_pop`` divide
the exact ``N * sum(x*x) - sum(x)^2`` by ``N * (N - 1)`` (or ``N * N``) the same way, and ``stddev`` takes the
square root of that variance, rounded at the same scale.

The operands arrive as DuckDB's exact text of decimals or integers (a ``DECIMAL(p, s)`` prints with exactly
``s`` fractional digits: PostgreSQL's display scale of such a value), the results leave as text with at most
``scale`` fractional digits, which the gateway casts to ``DECIMAL(38, scale)``. A quotient that needs more
fractional digits than ``scale`` at PostgreSQL's rounding, or more than 38 digits in all, is an error that says
so: never a rounded or floating-point answer. Written by hand (Python's integers are exact); registered as
vectorised (Arrow) DuckDB functions by :mod:`lakegate.connectors.duckdb.pgmacros`.
"""

from __future__ import annotations

import math
import struct
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from fractions import Fraction

MIN_SIG_DIGITS = 16  #: NUMERIC_MIN_SIG_DIGITS
DEC_DIGITS = 4  #: decimal digits per base-10000 digit of PostgreSQL's numeric
MAX_DIGITS = 38  #: DuckDB's DECIMAL


class NumericError(ValueError):
    """A result DuckDB's decimal cannot hold exactly."""


def parse(text: str) -> tuple[int, int]:
    """Exact decimal text -> (unscaled integer, display scale)."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise NumericError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise NumericError(f"{text} has no exact decimal value")
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    exponent = int(exponent)
    if exponent > 0:
        return unscaled * 10**exponent, 0
    return unscaled, -exponent


def _weight_and_first(unscaled: int, scale: int) -> tuple[int, int]:
    """PostgreSQL's weight (position of the first base-10000 digit) and that digit; (0, 0) for zero."""
    magnitude = abs(unscaled)
    if magnitude == 0:
        return 0, 0
    exponent = len(str(magnitude)) - 1 - scale  # decimal exponent of the leading digit
    weight = exponent // DEC_DIGITS
    shift = DEC_DIGITS * weight - (-scale)  # magnitude * 10**-scale / 10000**weight
    first = magnitude // 10**shift if shift >= 0 else magnitude * 10**-shift
    return weight, first


def div_scale(a: tuple[int, int], b: tuple[int, int]) -> int:
    """select_div_scale(): the result scale of ``a / b`` (each (unscaled, display scale))."""
    weight1, first1 = _weight_and_first(*a)
    weight2, first2 = _weight_and_first(*b)
    qweight = weight1 - weight2
    if first1 <= first2:
        qweight -= 1
    rscale = MIN_SIG_DIGITS - qweight * DEC_DIGITS
    return min(max(rscale, a[1], b[1], 0), 1000)


def _round(value: Fraction, scale: int) -> int:
    """``value`` * 10**scale rounded half away from zero (PostgreSQL's numeric rounding)."""
    scaled = value * 10**scale
    magnitude = (abs(scaled.numerator) * 2 + scaled.denominator) // (2 * scaled.denominator)
    return -magnitude if scaled < 0 else magnitude


def _text(unscaled: int, rscale: int, scale: int, what: str) -> str:
    """The value unscaled / 10**rscale as text with its ``rscale`` fractional digits (PostgreSQL's display
    scale), or an error where ``DECIMAL(38, scale)`` cannot hold it exactly (digits beyond ``scale`` that are
    zeros are kept in the text: DuckDB's cast drops them exactly)."""
    kept = unscaled
    if rscale > scale:
        shift = 10 ** (rscale - scale)
        if unscaled % shift:
            raise NumericError(
                f"{what} has {rscale} fractional digits at PostgreSQL's result scale, more than the {scale} "
                "the lake route's decimal keeps"
            )
        kept //= shift
    digits = len(str(abs(kept))) - min(rscale, scale) + scale
    if digits > MAX_DIGITS:
        raise NumericError(f"{what} needs {digits} digits at scale {scale}, more than DuckDB's decimal holds")
    sign = "-" if unscaled < 0 else ""
    body = str(abs(unscaled)).rjust(rscale + 1, "0")
    return f"{sign}{body[:-rscale]}.{body[-rscale:]}" if rscale else f"{sign}{body}"


def divide(a_text: str, b_text: str, scale: int) -> str:
    """PostgreSQL's ``a / b`` for numerics, as text with at most ``scale`` fractional digits."""
    a, b = parse(a_text), parse(b_text)
    if b[0] == 0:
        raise ZeroDivisionError("division by zero")
    rscale = div_scale(a, b)
    quotient = Fraction(a[0], 10 ** a[1]) / Fraction(b[0], 10 ** b[1])
    return _text(_round(quotient, rscale), rscale, scale, f"the quotient {a_text} / {b_text}")


def integral(a_text: str, b_text: str) -> str:
    """PostgreSQL's ``div(a, b)``: the quotient truncated toward zero."""
    a, b = parse(a_text), parse(b_text)
    if b[0] == 0:
        raise ZeroDivisionError("division by zero")
    quotient = Fraction(a[0], 10 ** a[1]) / Fraction(b[0], 10 ** b[1])
    whole = abs(quotient.numerator) // quotient.denominator
    return _text(-whole if quotient < 0 else whole, 0, 0, f"div({a_text}, {b_text})")


def variance(
    n_text: str, sum_text: str, squares_text: str, sample: bool, root: bool, scale: int
) -> str | None:
    """PostgreSQL's numeric ``var_samp``/``var_pop`` (``root``: ``stddev_samp``/``stddev_pop``) from the count,
    the exact sum and the exact sum of squares; None where PostgreSQL's is NULL (no rows; one row, sampled)."""
    n = int(n_text)
    if n == 0 or (sample and n == 1):
        return None
    total, squares = parse(sum_text), parse(squares_text)
    rscale = total[1] * 2
    numerator = Fraction(n) * Fraction(squares[0], 10 ** squares[1]) - Fraction(total[0], 10 ** total[1]) ** 2
    numerator = Fraction(_round(numerator, rscale), 10**rscale)
    what = "stddev" if root else "variance"
    if numerator <= 0:
        return _text(0, 0, scale, what)
    denominator = n * (n - 1) if sample else n * n
    num_var = (int(numerator * 10**rscale), rscale)
    rscale = div_scale(num_var, (denominator, 0))
    value = Fraction(_round(numerator / denominator, rscale), 10**rscale)
    if root:
        return _text(_sqrt(value, rscale), rscale, scale, what)
    return _text(int(value * 10**rscale), rscale, scale, what)


def _sqrt(value: Fraction, rscale: int) -> int:
    """sqrt(value) * 10**rscale rounded half up (value >= 0)."""
    scaled = value * 10 ** (2 * rscale) * 4  # sqrt(4 v 10^2r) = 2 sqrt(v) 10^r: one more bit to round with
    root = math.isqrt(scaled.numerator // scaled.denominator)  # floor(sqrt(floor(x))) = floor(sqrt(x))
    return (root + 1) // 2


def shown(text: str, scale: int) -> str:
    """The exact decimal ``text`` written with ``scale`` fractional digits (PostgreSQL's display scale of the
    value); an error if that would drop a nonzero digit (the scale computed for it was wrong)."""
    unscaled, own = parse(text)
    if own > scale:
        shift = 10 ** (own - scale)
        if unscaled % shift:
            raise NumericError(f"{text} has more fractional digits than its display scale {scale}")
        unscaled //= shift
    else:
        unscaled *= 10 ** (scale - own)
    sign = "-" if unscaled < 0 else ""
    body = str(abs(unscaled)).rjust(scale + 1, "0")
    return f"{sign}{body[:-scale]}.{body[-scale:]}" if scale else f"{sign}{body}"


def float_text(value: float, single: bool) -> str:
    """PostgreSQL's output of a float8 (``single``: a float4): the shortest digits that read back as the same
    value (``float8out``/``float4out`` with ``extra_float_digits`` 1, Ryu), written as ``printf``'s ``%g`` would
    lay them out — positional for decimal exponents from -4 to 14 (float4: 5), else ``1.5e+300``; ``NaN``,
    ``Infinity``, ``-Infinity`` and ``-0``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exponent = _shortest(value, single)
    point = exponent + 1  #: digits before the decimal point
    if -4 <= exponent < (6 if single else 15):
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits))
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _shortest(value: float, single: bool) -> tuple[str, int]:
    """The fewest significant digits whose decimal lies strictly inside the interval of reals that round to
    ``value`` (Ryu's rule, bounds excluded as PostgreSQL's Ryu excludes them: ``85587104::float4`` keeps its
    eight digits), the closest such decimal, and the decimal exponent of its first digit."""
    x = abs(value)
    below, above = _neighbours(x, single)
    exact = Fraction(x)
    down = (exact - Fraction(below)) / 2
    up = (Fraction(above) - exact) / 2 if above is not None else down  # the largest float: the gap below
    for precision in range(1, 18):
        found: list[tuple[Fraction, int, Decimal]] = []
        for rounding in (ROUND_CEILING, ROUND_FLOOR):
            with localcontext() as context:
                context.prec, context.rounding = precision, rounding
                candidate = +Decimal(x)
            distance = Fraction(candidate) - exact
            if -down < distance < up:
                found.append((abs(distance), candidate.as_tuple().digits[-1] % 2, candidate))  # a tie: even
        if found:
            best = min(found)[2]
            sign, numbers, exponent = best.normalize().as_tuple()
            digits = "".join(map(str, numbers))
            return digits, int(exponent) + len(digits) - 1
    raise AssertionError(f"no shortest text of {value!r}")


def _neighbours(x: float, single: bool) -> tuple[float, float | None]:
    """The floats next to ``x`` (> 0) below and above (None: ``x`` is the largest finite one)."""
    if single:
        bits = struct.unpack("I", struct.pack("f", x))[0]
        below = struct.unpack("f", struct.pack("I", bits - 1))[0]
        above = struct.unpack("f", struct.pack("I", bits + 1))[0]
    else:
        below, above = math.nextafter(x, 0.0), math.nextafter(x, math.inf)
    return below, (above if math.isfinite(above) else None)
