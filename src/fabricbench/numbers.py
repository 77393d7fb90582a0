"""The one number formatter: every figure the terminal, Markdown, HTML, CSV and plots show.

Rules (``number``), by magnitude so that a table column lines up:

    |v| >= 100 000      whole number, thousands grouped       168,000
    100 <= |v| < 1e5    one decimal, grouped                   11,013.4
    1 <= |v| < 100      two decimals                           2.00   42.17
    0.001 <= |v| < 1    three significant digits               0.105  0.0877
    |v| < 0.001         three significant digits, exponent     2.15e-5
    integers (int)      as they are, grouped                   1,048,576

``signed`` adds the sign (differences), ``percent`` one decimal, ``improvement_pct`` a
'% better' that turns into a factor past 10x (a latency 18,856 times worse is "18,856x worse",
not "-1885529.3%"), ``ratio`` two decimals and an x, ``size`` bytes grouped, ``binary_size``
KiB/MiB, ``size_tick`` 64K on plot axes, ``exact`` a catalogue constant with every digit
(14.0625), ``machine`` a CSV cell (full precision, no grouping), ``duration`` 1m05s.
Missing values (None, NaN) are "-" everywhere but CSV, where they are empty.

Named styles for the other places a number is written (``STYLES`` is the table; ``render(style,
v)`` looks one up), so that no module outside this one writes a format spec:

    scientific    exponent form, N significant digits                      1.235e+07
    short         Python's general form, N significant digits (default 6)  0.5  16  2.5e-07
    fixed         a fixed number of decimals                               0.38  12.500000
    grouped       grouped, a fixed number of decimals (default 0)          12,500
    share         a fraction as a percentage (default whole)               0.9 -> 90%
    percent_share a percentage in a sentence: whole from 10%, <0.1% for a trace  74%  3.7%
    fraction_pct  a fraction as a percentage for a sentence                0.029 -> 2.9%, 0.12 -> 12%
    factor        a ratio B/A or a "times": 3 significant digits, whole from 100, 2 below 0.01
    difference    a signed difference B - A: +1,204  +0.13  -0.0042
    interval      a ratio's confidence interval: 0.91-1.12, "0" and ">999" at the ends
    seconds       a timeout or an elapsed time in whole seconds                30
    padded        an index with leading zeros                                  07
    gib           a memory size in GiB: 12 GiB, 1.5 GiB
    size styles   bytes 1,048,576 | binary 16 KiB | exact_binary 4 MiB, 1000 B (binary units only
                  when exact) | sentence 0-byte, 16 KiB | tick 64K
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional

MISSING = "-"


def _finite(v: Any) -> Optional[float]:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _exp(v: float, digits: int) -> str:
    mant, _, exp = f"{v:.{digits - 1}e}".partition("e")
    return f"{mant}e{int(exp)}"


def number(v: Any) -> str:
    """A measured value (see the module's rules); '-' when missing."""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    f = _finite(v)
    if f is None:
        return str(v) if isinstance(v, str) else MISSING
    a = abs(f)
    if a == 0:
        return "0"
    if a >= 1e5:
        return f"{f:,.0f}"
    if a >= 100:
        return f"{f:,.1f}"
    if a >= 1:
        return f"{f:.2f}"
    if a >= 1e-3:
        return f"{f:.{2 - math.floor(math.log10(a))}f}"
    return _exp(f, 3)


def signed(v: Any) -> str:
    """A difference: number() with its sign, '+0.130', '-1,204.5'; '0' for no difference."""
    f = _finite(v)
    if f is None:
        return MISSING
    text = number(f)
    return text if text.startswith("-") or text == "0" else "+" + text


def percent(p: Any, signed: bool = False, decimals: int = 1) -> str:
    """A percentage, one decimal unless told: '40.5%', or '+40.5%' when signed."""
    f = _finite(p)
    if f is None:
        return MISSING
    return f"{f:+,.{decimals}f}%" if signed else f"{f:,.{decimals}f}%"


FACTOR_FROM = 10.0  # an improvement of 10x or more reads better as a factor than as a percentage


def improvement_pct(p: Any) -> str:
    """'% better' (positive: better; from analysis.direction.improvement x 100): '+68.0%',
    '-104.1%', and past 10x a factor: '18,856x worse', '12.5x better'."""
    f = _finite(p)
    if f is None:
        return MISSING
    factor = 1.0 + abs(f) / 100.0
    if factor >= FACTOR_FROM:
        return f"{ratio(factor, suffix='')}x {'better' if f > 0 else 'worse'}"
    return percent(f, signed=True)


def ratio(r: Any, suffix: str = "x") -> str:
    """A ratio or speedup: '3.80x'; '18,856x' when large."""
    f = _finite(r)
    if f is None:
        return MISSING
    return (f"{f:.2f}" if abs(f) < 100 else f"{f:,.0f}") + suffix


def fixed(v: Any, decimals: int = 2) -> str:
    """A fraction with a fixed number of decimals (efficiencies: '0.38')."""
    f = _finite(v)
    return MISSING if f is None else f"{f:.{decimals}f}"


def count(n: Any) -> str:
    """A whole count, grouped: '1,234' (an int exactly, however large)."""
    if isinstance(n, int) and not isinstance(n, bool):
        return f"{n:,}"
    f = _finite(n)
    return MISSING if f is None else f"{int(round(f)):,}"


def size(n: Any) -> str:
    """A message size in bytes, grouped: '1,048,576'; other text as it is."""
    if isinstance(n, (int, float)) and not isinstance(n, bool):
        return f"{int(n):,}"
    return MISSING if n is None else str(n)


def binary_size(n: Any) -> str:
    """Bytes in binary units, as message sizes are usually powers of two: 16384 -> '16 KiB'."""
    f = _finite(n)
    if f is None:
        return MISSING
    if abs(f) < 1024:
        return f"{f:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        f /= 1024.0
        if abs(f) < 1024 or unit == "PiB":
            text = f"{f:.3g}"
            return f"{f:.0f} {unit}" if "e" in text else f"{text} {unit}"
    raise AssertionError("unreachable")


def size_tick(n: float, zero_below: float = 0.5) -> str:
    """A message-size axis tick: 0, 1, 512, 1K, 64K, 1M, 1G (binary multiples)."""
    if n <= zero_below:
        return "0"
    for unit, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"


EXACT_DIGITS = 9  # a constant with more significant digits than this is a repeating fraction, shown to 6


def exact(v: Any) -> str:
    """A constant with every digit it has, never in exponent form: 14.0625, 25.78125, 12500
    (a repeating fraction such as 133.33.../1000 to six significant digits: 0.133333)."""
    f = _finite(v)
    if f is None:
        return MISSING
    if f.is_integer() and abs(f) < 1e16:
        return str(int(f))
    text = repr(f)
    if "e" in text:
        text = f"{f:.17f}".rstrip("0").rstrip(".")
    if len(text.replace("-", "").replace(".", "").lstrip("0")) > EXACT_DIGITS:
        text = _sig(f, 6).rstrip("0").rstrip(".")
    return text


def machine(v: Any) -> str:
    """A CSV or JSON-ish cell: full precision, no grouping; empty when missing."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return str(v)


def duration(seconds: Optional[float]) -> str:
    """A time left or taken: '42s', '1m05s', '2h03m'."""
    f = _finite(seconds)
    if f is None:
        return MISSING
    s = int(round(f))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def axis_value(v: float, fractions: bool = False) -> str:
    """A value-axis tick: '0', '250', '12k', '3.5M'; on a base-2 axis (fractions=True) the powers
    of two below 1 as '1/64', not 0.015625."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    if a < 1 and fractions:
        frac = Fraction(a).limit_denominator(1 << 20)
        if frac.numerator == 1 and frac.denominator & (frac.denominator - 1) == 0 and float(frac) == a:
            return f"{'-' if v < 0 else ''}1/{frac.denominator}"
    return f"{v:g}"


def distinct_labels(values, render=number, max_digits: int = 8):
    """Labels for axis or colour-bar ticks that tell every tick apart: as few significant digits
    as make them distinct (3 at least), so close values are never shown as the same number."""
    values = [float(v) for v in values]
    if len(set(values)) < 2:
        return [render(v) for v in values]
    for digits in range(3, max_digits + 1):
        labels = [_sig(v, digits) for v in values]
        if len(set(labels)) == len(labels):
            return labels
    return [repr(v) for v in values]


def _sig(v: float, digits: int) -> str:
    """v with `digits` significant digits, grouped, no exponent for ordinary magnitudes."""
    if v == 0:
        return "0"
    a = abs(v)
    if a < 1e-3 or a >= 1e15:
        return _exp(v, digits)
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    return f"{v:,.{decimals}f}"


# -- named styles ------------------------------------------------------------------------------

def short(v: Any, digits: int = 6) -> str:
    """Python's general form with `digits` significant digits: 16, 0.5, 1.5e+07 (a scale, a
    threshold, a command-line value)."""
    if v is None or isinstance(v, bool):
        return MISSING
    return format(float(v), f".{digits}g")  # inf and nan as Python writes them, as before


def scientific(v: Any, digits: int = 4) -> str:
    """Exponent form with `digits` significant digits: 1.235e+07 (a model coefficient far from 1)."""
    f = _finite(v)
    return MISSING if f is None else format(f, f".{digits - 1}e")


def grouped(v: Any, decimals: int = 0) -> str:
    """Grouped with a fixed number of decimals: '12,500', '1,250.5' (a catalogue rate in a sentence)."""
    f = _finite(v)
    return MISSING if f is None else format(f, f",.{decimals}f")


def share(v: Any, decimals: int = 0) -> str:
    """A fraction as a percentage: 0.9 -> '90%' (a share of a ceiling, a threshold)."""
    f = _finite(v)
    return MISSING if f is None else format(f, f".{decimals}%")


def percent_share(x: Any) -> str:
    """A share (already in percent) in a sentence: whole percent from 10% ('74%'), one decimal
    below ('3.7%'), '<0.1%' for a trace, '0%' for none."""
    f = _finite(x)
    if f is None:
        return MISSING
    if f >= 10 or f == 0:
        return percent(f, decimals=0)
    if f >= 0.1:
        return percent(f)
    return "<0.1%"


def fraction_pct(x: Any) -> str:
    """A fraction as a percentage for a sentence: 0.029 -> '2.9%', 0.12 -> '12%', 2.2 -> '220%'."""
    f = _finite(x)
    if f is None:
        return MISSING
    v = f * 100
    return f"{v:.1f}%" if v < 10 else f"{v:,.0f}%"


def factor(x: Any) -> str:
    """A ratio or 'times' in words: 3 significant digits ('1.23', '0.456'), whole and grouped from
    100 ('1,234'), 2 significant digits below 0.01 ('0.0042')."""
    f = _finite(x)
    if f is None:
        return MISSING
    if abs(f) >= 100:
        return f"{f:,.0f}"
    return f"{f:.2g}" if abs(f) < 0.01 else f"{f:.3g}"


def difference(d: Any) -> str:
    """A signed difference B - A: '+1,204', '+0.13', '-0.0042'."""
    f = _finite(d)
    if f is None:
        return MISSING
    if abs(f) >= 100:
        return f"{f:+,.0f}"
    return f"{f:+.2f}" if abs(f) >= 1 else f"{f:+.3g}"


def interval(ci: Any) -> str:
    """A ratio's confidence interval, readable when very wide: '0.91-1.12', '0-3.4', '0.5->999';
    empty when there is none."""
    if ci is None:
        return ""
    lo = "0" if ci[0] < 0.0001 else factor(ci[0])
    hi = ">999" if ci[1] > 999 else factor(ci[1])
    return f"{lo}-{hi}"


def seconds(v: Any) -> str:
    """A timeout or time waited, whole seconds: '30' (the caller writes the unit)."""
    return fixed(v, 0)


def padded(n: int, width: int = 2) -> str:
    """An index with leading zeros: 7 -> '07'."""
    return str(int(n)).zfill(width)


def gib(n: Any) -> Optional[str]:
    """A memory size: '12 GiB', '1.5 GiB'; None when unknown or not positive."""
    if not isinstance(n, (int, float)) or isinstance(n, bool) or n <= 0:
        return None
    g = n / 2**30
    return f"{g:.0f} GiB" if g >= 10 else f"{g:.1f} GiB"


def exact_binary_size(n: Optional[int]) -> str:
    """4194304 -> '4 MiB', 65536 -> '64 KiB', 1000 -> '1000 B' (binary units only when exact)."""
    if n is None:
        return MISSING
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def sentence_size(n: float) -> str:
    """A message size in a sentence: '0-byte', '8 B', '16 KiB'."""
    return "0-byte" if n <= 0 else binary_size(n)


SIZE_STYLES = {
    "bytes": size,
    "binary": binary_size,
    "exact_binary": exact_binary_size,
    "sentence": sentence_size,
    "tick": size_tick,
}

# The table of formats: every style a number is written in, by name.
STYLES = {
    "number": number, "signed": signed, "percent": percent, "improvement": improvement_pct,
    "ratio": ratio, "fixed": fixed, "count": count, "exact": exact, "machine": machine,
    "duration": duration, "axis": axis_value, "short": short, "grouped": grouped, "share": share,
    "fraction_pct": fraction_pct, "percent_share": percent_share, "factor": factor, "difference": difference, "interval": interval,
    "scientific": scientific, "seconds": seconds, "padded": padded, "gib": gib,
    **{f"size:{k}": v for k, v in SIZE_STYLES.items()},
}


def render(style: str, v: Any, *args: Any, **kwargs: Any) -> Any:
    """`v` written in the named style of ``STYLES``: render('share', 0.9) -> '90%'."""
    try:
        fn = STYLES[style]
    except KeyError:
        raise ValueError(f"unknown number style '{style}' (known: {', '.join(sorted(STYLES))})") from None
    return fn(v, *args, **kwargs)
