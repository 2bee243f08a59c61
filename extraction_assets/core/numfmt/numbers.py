"""Numbers through a parsed section: digit placeholders, thousands separators and scaling, percent,
scientific and engineering notation, fractions, and General as Excel shows it."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from extraction_assets.core.numfmt.parse import Section, Token, fraction_slash

HASHES = "#######"


def format_general(value: float) -> str:
    """Excel's ``General`` format for a number in a standard-width cell.

    At most 11 characters (sign excluded): integers below 10^11 in full, other numbers rounded to
    as many significant digits as fit; scientific notation with up to six significant digits
    (``1.23457E+11``, ``1E-05``) from 10^11 up and below 10^-4.
    """
    if value == 0:
        return "0"
    if math.isnan(value) or math.isinf(value):
        return "#NUM!"
    value = float(value)
    a = abs(value)
    if a.is_integer() and a < 1e11:
        return str(int(value))
    if not 1e-4 <= a < 1e11:
        return sci_general(value)
    magnitude = int(math.floor(math.log10(a)))
    for digits in range(11, 0, -1):
        decimals = max(0, digits - 1 - magnitude)
        text = f"{a:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if len(text) <= 11:
            break
    if text == "0":
        return sci_general(value)
    return ("-" if value < 0 else "") + text


def sci_general(value: float) -> str:
    mantissa, exp = f"{value:.5E}".split("E")
    mantissa = mantissa.rstrip("0").rstrip(".")
    sign = "-" if int(exp) < 0 else "+"
    return f"{mantissa}E{sign}{abs(int(exp)):02d}"


def round_half_up(value: float, decimals: int) -> str:
    """Fixed-point text of ``value`` rounded half away from zero, as Excel rounds for display."""
    quantum = Decimal(1).scaleb(-decimals)
    return str(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


def fill_integer(digits: str, placeholders: list[str], group: bool = False) -> list[str]:
    """Spread an integer's digits (``""`` for zero) over integer placeholders, right-aligned.

    The leftmost placeholder takes any extra leading digits; missing digits show as ``0`` for
    ``0``, a space for ``?`` and nothing for ``#``. With ``group``, a ``,`` follows every digit
    whose place value is a positive multiple of 1,000.
    """
    n = len(placeholders)
    out = [""] * n
    for k in range(n):  # k: position from the right
        idx = n - 1 - k
        ph = placeholders[idx]
        if k < len(digits):
            chars = digits[:len(digits) - n + 1] if idx == 0 else digits[len(digits) - 1 - k]
        else:
            chars = "0" if ph == "0" else " " if ph == "?" else ""
        if group and chars.strip():
            # chars may hold several digits (leftmost placeholder); their positions end at k
            pieces = []
            for off, ch in enumerate(chars):
                pos = k + len(chars) - 1 - off
                pieces.append(ch + ("," if pos > 0 and pos % 3 == 0 else ""))
            chars = "".join(pieces)
        out[idx] = chars
    return out


def _comma_roles(toks: tuple[Token, ...]) -> dict[int, str]:
    """Role of each comma token: ``sep`` (thousands), ``scale`` (÷1,000) or ``lit``."""
    roles: dict[int, str] = {}
    for i, t in enumerate(toks):
        if t.kind != "comma":
            continue
        j = i
        while j > 0 and toks[j - 1].kind == "comma":
            j -= 1
        after_digit = j > 0 and toks[j - 1].kind == "digit"
        k = i
        while k + 1 < len(toks) and toks[k + 1].kind == "comma":
            k += 1
        before_digit = k + 1 < len(toks) and toks[k + 1].kind == "digit"
        roles[i] = "sep" if after_digit and before_digit else "scale" if after_digit else "lit"
    return roles


def _render_digits(toks: tuple[Token, ...], x: float) -> dict[int, str]:
    """Text for each digit/dot/comma token of a plain number rendering of ``x >= 0``."""
    roles = _comma_roles(toks)
    dot = next((i for i, t in enumerate(toks) if t.kind == "dot"), None)
    int_ph = [i for i, t in enumerate(toks) if t.kind == "digit" and (dot is None or i < dot)]
    frac_ph = [i for i, t in enumerate(toks) if t.kind == "digit" and dot is not None and i > dot]
    group = any(r == "sep" and (dot is None or i < dot) for i, r in roles.items())
    text = round_half_up(x, len(frac_ph))
    ipart, _, fpart = text.partition(".")
    ipart = ipart.lstrip("0")
    out: dict[int, str] = {}
    for i, chars in zip(int_ph, fill_integer(ipart, [toks[i].text for i in int_ph], group)):
        out[i] = chars
    # fraction digits: trailing zeros vanish under # and become spaces under ?
    keep = len(fpart)
    while keep and fpart[keep - 1] == "0" and toks[frac_ph[keep - 1]].text != "0":
        keep -= 1
    for pos, i in enumerate(frac_ph):
        ph = toks[i].text
        out[i] = fpart[pos] if pos < keep else (" " if ph == "?" else "")
    for i, role in roles.items():
        out[i] = "," if role == "lit" else ""
    if dot is not None:  # integer digits without integer placeholders go before the dot
        out[dot] = (ipart if not int_ph else "") + "."
    return out


def emit(toks: tuple[Token, ...], filled: dict[int, str], general: float | None = None) -> str:
    out = []
    for i, t in enumerate(toks):
        if i in filled:
            out.append(filled[i])
        elif t.kind in ("lit", "pad"):
            out.append(t.text)
        elif t.kind == "pct":
            out.append("%")
        elif t.kind == "dot":
            out.append(".")
        elif t.kind in ("general", "at") and general is not None:
            out.append(format_general(general))
        elif t.kind in ("date", "slash", "exp"):
            out.append(t.text)
    return "".join(out)


def _scaled(toks: tuple[Token, ...], x: float) -> float:
    roles = _comma_roles(toks)
    x *= 100 ** sum(t.kind == "pct" for t in toks)
    return x / 1000 ** sum(r == "scale" for r in roles.values())


def render_number(sec: Section, x: float) -> tuple[str, bool]:
    """(text, shows a non-zero value) of ``x >= 0`` in a plain number section."""
    layout = sec.plain_layout
    if layout is not None:
        prefix, suffix, decimals, thousands, percent = layout
        number = Decimal(repr(x * 100 if percent else x)).quantize(
            Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
        digits = format(number, ",f" if thousands else "f")
        return prefix + digits + ("%" if percent else "") + suffix, digits.strip("0.,") != ""
    x = _scaled(sec.tokens, x)
    filled = _render_digits(sec.tokens, x)
    nonzero = any(ch in "123456789" for s in filled.values() for ch in s)
    return emit(sec.tokens, filled), nonzero


def render_scientific(sec: Section, x: float) -> tuple[str, bool]:
    toks = sec.tokens
    e_at = next(i for i, t in enumerate(toks) if t.kind == "exp")
    mant = toks[:e_at]
    x = x * 100 ** sum(t.kind == "pct" for t in toks)
    dot = next((i for i, t in enumerate(mant) if t.kind == "dot"), None)
    n_int = sum(t.kind == "digit" and (dot is None or i < dot) for i, t in enumerate(mant))
    n_frac = sum(t.kind == "digit" and dot is not None and i > dot for i, t in enumerate(mant))
    step = max(n_int, 1)
    exp = 0
    if x:
        exp = math.floor(math.log10(x))
        if n_int > 1:  # engineering style: the exponent is a multiple of the integer places
            exp -= exp % n_int
        if n_int == 0:
            exp += 1
    mantissa = float(Decimal(repr(x)).scaleb(-exp)) if x else 0.0
    if float(round_half_up(mantissa, n_frac)) >= 10 ** step:
        exp += step
        mantissa = float(Decimal(repr(x)).scaleb(-exp))
    filled = _render_digits(mant, mantissa)
    exp_ph = []
    j = e_at + 1
    while j < len(toks) and toks[j].kind == "digit":
        exp_ph.append(j)
        j += 1
    for i, chars in zip(exp_ph, fill_integer(str(abs(exp)), [toks[i].text for i in exp_ph])):
        filled[i] = chars
    sign = "-" if exp < 0 else "+" if toks[e_at].text[1] == "+" else ""
    filled[e_at] = toks[e_at].text[0] + sign  # the E keeps the case written
    nonzero = any(ch in "123456789" for i, s in filled.items() if i < e_at for ch in s)
    return emit(toks, filled), nonzero


def _convergent(x: float, max_den: int) -> tuple[int, int]:
    """The last continued-fraction convergent of ``0 <= x < 1`` with denominator ≤ ``max_den``."""
    p0, q0, p1, q1 = 0, 1, 1, 0  # convergents n-2 and n-1
    b = x
    while True:
        a = math.floor(b)
        p, q = a * p1 + p0, a * q1 + q0
        if q > max_den:
            return p1, q1
        p0, q0, p1, q1 = p1, q1, p, q
        if b - a < 5e-8 or q == max_den:
            return p1, q1
        b = 1 / (b - a)


def render_fraction(sec: Section, x: float) -> tuple[str, bool]:
    toks = sec.tokens
    slash = fraction_slash(toks)
    num_start = slash
    while num_start > 0 and toks[num_start - 1].kind == "digit":
        num_start -= 1
    den_end = slash + 1
    while den_end < len(toks) and (toks[den_end].kind == "digit" or toks[den_end].text.isdigit()):
        den_end += 1
    num_ph = list(range(num_start, slash))
    den_toks = toks[slash + 1:den_end]
    int_ph = [i for i in range(num_start) if toks[i].kind == "digit"]
    x = x * 100 ** sum(t.kind == "pct" for t in toks)
    whole = math.floor(x) if int_ph else 0
    part = x - whole
    if any(t.kind == "lit" for t in den_toks):  # fixed denominator, e.g. ?/8 or ??/100
        den = int("".join(t.text for t in den_toks))
        num = int(Decimal(repr(part * den)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    else:
        num, den = _convergent(part - math.floor(part), 10 ** len(den_toks) - 1)
        num += math.floor(part) * den
    if int_ph and num == den:
        whole, num = whole + 1, 0
    filled: dict[int, str] = {}
    int_digits = str(whole) if whole else ("" if num else "0")
    for i, chars in zip(int_ph, fill_integer(int_digits, [toks[i].text for i in int_ph])):
        filled[i] = chars
    if int_ph and num == 0:
        for i in range(num_start, den_end):
            filled[i] = " " * max(len(toks[i].text), 1)
    else:
        for i, chars in zip(num_ph, fill_integer(str(num), [toks[i].text for i in num_ph])):
            filled[i] = chars
        filled[slash] = "/"
        if any(t.kind == "lit" for t in den_toks):
            for k in range(slash + 1, den_end):
                filled[k] = toks[k].text
        else:
            digits = str(den)
            for pos, k in enumerate(range(slash + 1, den_end)):
                ph = toks[k].text
                if pos == 0:
                    filled[k] = digits[:max(1, len(digits) - len(den_toks) + 1)]
                    digits = digits[len(filled[k]):]
                elif digits:
                    filled[k], digits = digits[0], digits[1:]
                else:
                    filled[k] = " " if ph == "?" else "0" if ph == "0" else ""
    return emit(toks, filled), bool(whole or num)
