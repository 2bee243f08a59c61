"""Render cell values through their number format, as Excel (en-US) displays them.

Follows the number-format grammar of ECMA-376 Part 1, §18.8.31, and Excel's published behaviour.
A code is split into up to four ``;``-separated sections (positive; negative; zero; text), each
section is tokenised once (cached) and rendered by a small renderer for its kind:

* **number**: ``0``/``#``/``?`` digit placeholders (digits spread over placeholders separated by
  literals, as in ``000\\-00\\-0000``), ``.``, ``,`` as thousands separator between integer
  placeholders and as ×1/1,000 scaling after the last placeholder, ``%`` (×100).
* **scientific**: ``E+``/``E-``; with several integer placeholders (``##0.0E+0``) the exponent is
  a multiple of their count (engineering notation).
* **fraction**: ``# ?/?``, ``# ??/??``, ``?/?`` (improper), fixed denominators ``# ?/8``,
  ``# ??/100``. The fraction is the last continued-fraction convergent whose denominator fits
  the placeholders, which is what Excel shows (e.g. 0.3 with ``?/?`` is 1/3, not 2/7); a zero
  fraction leaves blanks, a fraction that rounds to 1 carries into the integer.
* **date/time**: ``y yy yyyy e b`` (``e``/``b`` as a four-digit year), ``m mm mmm mmmm mmmmm``
  (``m``/``mm`` are minutes after an hour or before a second token), ``d dd ddd dddd``,
  ``h hh s ss``, ``AM/PM``/``A/P`` (12-hour clock; ``A/P`` keeps the case written), fractional
  seconds ``.0``-``.000``, elapsed ``[h] [mm] [ss]``. The value is rounded half-up to the finest
  unit shown (seconds, or the fractional digits) before it is split into fields. In the 1900
  system serial 0 shows as 1900-01-00 and serial 60 as the fictitious 1900-02-29, and weekdays
  before March 1900 follow Excel's calendar (serial 1 is a Sunday).
* **General**, also inside a section with literals (``"Total: "General``), and **text** (``@``).

Brackets: ``[Red]``/``[Color7]`` colours, ``[DBNum1]``-style and unknown codes are ignored;
``[<=100]``-style conditions choose the section; ``[$€-407]`` shows its currency text and
``[$-409]`` only sets a locale; ``[$-F800]``/``[$-F400]`` (system long date / system time) show
as en-US ``dddd, mmmm d, yyyy`` / ``h:mm:ss AM/PM``. Literals: ``"..."``, ``\\x``, and any other
character not listed above; ``_x`` pads one space and ``*x`` fills nothing.

Section choice: without conditions, positives (and zero without a third section) use section 1,
negatives section 2 without their sign (section 1 with a ``-`` in front when there is only
one), zero section 3. A last section holding ``@`` (or the fourth) is the text section, not a
numeric one, so ``m/d/yyyy;@`` shows every number as a date; a number under a text-only format
shows as General. With conditions, the first section whose condition holds is used (the third
when the first two both have conditions and both fail, else the second), and negative values
keep their ``-``. An empty section shows nothing, and a section of literals only (``"-"``,
``""``) shows them without a sign.

Out of range: a negative value or one past 9999-12-31 under a date format shows ``#######``;
formats made only of elapsed fields (``[h]``, ``[ss]``) show negative durations with a ``-``.

Deviations, on purpose: spaces produced by ``_x`` padding, ``*x`` fill and blank ``?``
placeholders are stripped at both ends of a number's text (layout, not content); ``General`` uses
the standard column width (11 characters) whatever the real width. An unknown or broken code
never raises: it falls back to ``General`` (as does an elapsed field after a smaller one, e.g.
``HH[M]``, which Excel rejects).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import cached_property, lru_cache

_EPOCH_1900 = dt.datetime(1899, 12, 30)
_EPOCH_1904 = dt.datetime(1904, 1, 1)
_MAX_SERIAL = 2_958_466  # 10000-01-01 in the 1900 system: the first serial Excel cannot show
_HASHES = "#######"

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS_FROM_SUNDAY = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

# [$-F800] / [$-F400]: the system long date and system time, as en-US Windows shows them
_SYSTEM_LONG_DATE = "dddd, mmmm d, yyyy"
_SYSTEM_TIME = "h:mm:ss AM/PM"

_CONDITION = re.compile(r"(<=|>=|<>|<|>|=)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_ELAPSED = re.compile(r"(?i)(h+|m+|s+)")
_DATE_LETTERS = "ymdhseb"


def serial_to_datetime(serial: float, date1904: bool = False) -> dt.datetime:
    """Convert an Excel serial date-time to a naive ``datetime``.

    In the 1900 system serial 1 is 1900-01-01 and serial 60 is Excel's fictitious 1900-02-29,
    which is shown as 1900-03-01 here; fractions are the time of day, rounded to the millisecond.
    (:func:`format_value` itself shows serial 60 as 1900-02-29, as Excel does.)

    Raises:
        ValueError: for negative serials or serials beyond year 9999.
    """
    if serial < 0 or serial > 2_958_465.99999999:
        raise ValueError(f"serial {serial} is outside Excel's date range")
    if date1904:
        base = _EPOCH_1904
    else:
        base = _EPOCH_1900
        if serial < 61:
            # Excel's 1900 leap-year bug: days before 1900-03-01 are shifted by one, and the
            # fictitious 1900-02-29 (serial 60) lands on 1900-03-01 with its time of day kept
            serial += 1
    ms = round(serial * 86_400_000)
    return base + dt.timedelta(milliseconds=ms)


# -- tokenizer --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Tok:
    """One token of a section.

    Kinds: ``lit`` (text shown as is), ``pad`` (``_x``: one space), ``fill`` (``*x``: nothing),
    ``digit`` (``0``, ``#`` or ``?``), ``dot``, ``comma``, ``pct``, ``exp`` (``E+``/``E-``),
    ``slash``, ``at``, ``general``, ``date`` (a run of one date letter, e.g. ``mmm``),
    ``elapsed`` (``[h]``, ``[mm]``...), ``ampm`` (``AM/PM`` or ``A/P`` as written) and ``subsec``
    (``.0``-``.000`` after seconds).
    """

    kind: str
    text: str


@dataclass(frozen=True)
class _Section:
    tokens: tuple[_Tok, ...]
    kind: str  # number, scientific, fraction, date, general, text, literal, empty, invalid
    condition: tuple[str, float] | None = None

    def has(self, kind: str) -> bool:
        return any(t.kind == kind for t in self.tokens)

    @cached_property
    def plain_layout(self) -> tuple[str, str, int, bool, bool] | None:
        """See :func:`_plain_layout` (computed once per parsed section)."""
        return _plain_layout(self)


def _split_sections(code: str) -> list[str]:
    """The ``;``-separated sections of a code (quotes and ``\\`` escapes respected)."""
    sections, buf, quote, i = [], [], False, 0
    while i < len(code):
        ch = code[i]
        if ch == '"':
            quote = not quote
        elif ch == "\\" and not quote and i + 1 < len(code):
            buf.append(code[i:i + 2])
            i += 2
            continue
        elif ch == ";" and not quote:
            sections.append("".join(buf))
            buf = []
            i += 1
            continue
        buf.append(ch)
        i += 1
    sections.append("".join(buf))
    return sections


def _tokenize(section: str) -> tuple[list[_Tok], tuple[str, float] | None, str | None]:
    """Tokens of one section, its ``[condition]`` and a system format (F800/F400) if any."""
    toks: list[_Tok] = []
    condition, system = None, None
    i, n = 0, len(section)
    while i < n:
        ch = section[i]
        low = section[i:i + 7].lower()
        if ch == '"':
            j = section.find('"', i + 1)
            j = n if j < 0 else j
            toks.append(_Tok("lit", section[i + 1:j]))
            i = j + 1
        elif ch == "\\":
            toks.append(_Tok("lit", section[i + 1:i + 2]))
            i += 2
        elif ch == "_":
            toks.append(_Tok("pad", " "))
            i += 2
        elif ch == "*":
            toks.append(_Tok("fill", ""))
            i += 2
        elif ch == "[":
            j = section.find("]", i)
            if j < 0:
                toks.append(_Tok("lit", section[i + 1:]))
                break
            inner = section[i + 1:j]
            if _ELAPSED.fullmatch(inner):
                toks.append(_Tok("elapsed", f"[{inner.lower()}]"))
            elif m := _CONDITION.fullmatch(inner.strip()):
                condition = (m.group(1), float(m.group(2)))
            elif inner.startswith("$"):
                currency, _, locale = inner[1:].partition("-")
                if currency:
                    toks.append(_Tok("lit", currency))
                locale = locale.upper()
                if locale.endswith("F800") or locale == "X-SYSDATE":
                    system = _SYSTEM_LONG_DATE
                elif locale.endswith("F400") or locale == "X-SYSTIME":
                    system = _SYSTEM_TIME
            # colours, [DBNum1], [Color10] and unknown codes are ignored
            i = j + 1
        elif low == "general":
            toks.append(_Tok("general", section[i:i + 7]))
            i += 7
        elif low.startswith("am/pm"):
            toks.append(_Tok("ampm", "AM/PM"))
            i += 5
        elif low.startswith("a/p"):
            toks.append(_Tok("ampm", section[i:i + 3]))
            i += 3
        elif (ch in "eE" and i + 1 < n and section[i + 1] in "+-"
              and any(t.kind == "digit" for t in toks)):  # else e- is a year and a literal
            toks.append(_Tok("exp", section[i:i + 2]))
            i += 2
        elif ch.lower() in _DATE_LETTERS:
            j = i
            while j < n and section[j].lower() == ch.lower():
                j += 1
            toks.append(_Tok("date", section[i:j].lower()))
            i = j
        else:
            kind = {"0": "digit", "#": "digit", "?": "digit", ".": "dot", ",": "comma",
                    "%": "pct", "/": "slash", "@": "at"}.get(ch, "lit")
            toks.append(_Tok(kind, ch))
            i += 1
    return toks, condition, system


def _merge_subseconds(toks: list[_Tok]) -> list[_Tok]:
    """Turn ``.0``/``.00``/``.000`` right after a seconds field into one ``subsec`` token."""
    out: list[_Tok] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        prev = next((p for p in reversed(out) if p.kind in ("date", "elapsed", "ampm")), None)
        if (t.kind == "dot" and prev is not None and prev.text.strip("[]").startswith("s")
                and i + 1 < len(toks) and toks[i + 1].text == "0"):
            j = i + 1
            while j < len(toks) and toks[j].text == "0" and toks[j].kind == "digit":
                j += 1
            out.append(_Tok("subsec", "." + "0" * (j - i - 1)))
            i = j
            continue
        out.append(t)
        i += 1
    return out


@lru_cache(maxsize=4096)
def _parse_section(text: str) -> _Section:
    toks, condition, system = _tokenize(text)
    if system is not None:  # the system format replaces the whole section
        toks = _tokenize(system)[0]
    if not text:
        return _Section((), "empty", condition)
    kinds = {t.kind for t in toks}
    if kinds & {"date", "elapsed", "ampm"}:
        merged = _merge_subseconds(toks)
        if "digit" not in {t.kind for t in merged} and "general" not in kinds:
            return _Section(tuple(merged), _date_kind(merged), condition)
    if "general" in kinds:
        kind = "general"
    elif _decimal_places(toks) > MAX_DECIMAL_PLACES:
        kind = "invalid"
    elif "digit" in kinds:
        kind = "scientific" if "exp" in kinds else "fraction" if _fraction_slash(toks) else "number"
    elif "at" in kinds:
        kind = "text"
    else:
        kind = "literal"
    return _Section(tuple(toks), kind, condition)


#: Most digit placeholders Excel accepts after the decimal point of a number format.
MAX_DECIMAL_PLACES = 30
#: Most characters Excel accepts in a number format code.
MAX_FORMAT_CHARS = 255


def _decimal_places(toks: list[_Tok]) -> int:
    """Digit placeholders after the first decimal point of a section (before any exponent)."""
    places, after = 0, False
    for t in toks:
        if t.kind == "dot":
            after = True
        elif t.kind == "exp":
            break
        elif after and t.kind == "digit":
            places += 1
    return places


def _date_kind(toks: list[_Tok]) -> str:
    """``date``, or ``invalid`` when an elapsed field follows a time field (``HH[M]``)."""
    seen_time = False
    for t in toks:
        if t.kind == "elapsed" and seen_time:
            return "invalid"
        if t.kind == "date" and t.text[0] in "hms":
            seen_time = True
    return "date"


@lru_cache(maxsize=4096)
def _parse(code: str) -> tuple[tuple[_Section, ...], _Section | None]:
    """(numeric sections, text section or ``None``) of a code; at most four sections count.

    Raises:
        ValueError: the code is longer than :data:`MAX_FORMAT_CHARS` (Excel refuses it).
    """
    if len(code) > MAX_FORMAT_CHARS:
        raise ValueError(f"number format code longer than {MAX_FORMAT_CHARS} characters")
    sections = [_parse_section(s) for s in _split_sections(code)[:4]]
    if len(sections) == 4:
        return tuple(sections[:3]), sections[3]
    if sections[-1].has("at") and sections[-1].kind in ("text", "literal"):
        return tuple(sections[:-1]), sections[-1]
    return tuple(sections), None


def is_date_format(code: str) -> bool:
    """Whether a number format code shows numbers as a date or time (its first numeric section
    is a date/time section; a trailing ``;@`` text section does not count)."""
    if not code or code.lower() == "general":
        return False
    try:
        numeric, _ = _parse(code)
    except Exception:  # noqa: BLE001 - a broken code is simply not a date format
        return False
    return bool(numeric) and numeric[0].kind == "date"


# -- section choice ---------------------------------------------------------------------------
def _holds(cond: tuple[str, float], v: float) -> bool:
    op, x = cond
    return {"<": v < x, ">": v > x, "=": v == x, "<=": v <= x, ">=": v >= x, "<>": v != x}[op]


def _choose(numeric: tuple[_Section, ...], value: float) -> tuple[_Section, bool]:
    """The section for a number and whether a ``-`` goes in front of its absolute value."""
    first = numeric[0]
    second = numeric[1] if len(numeric) > 1 else None
    if first.condition or (second is not None and second.condition):
        if first.condition and _holds(first.condition, value):
            chosen = first
        elif second is not None and second.condition and _holds(second.condition, value):
            chosen = second
        elif first.condition and second is not None and second.condition:
            chosen = numeric[2] if len(numeric) > 2 else first
        else:
            chosen = second if second is not None else first
        return chosen, value < 0
    if value > 0 or second is None:
        return first, value < 0
    if value < 0:
        return second, False
    return (numeric[2] if len(numeric) > 2 else first), False


# -- General ----------------------------------------------------------------------------------
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
        return _sci_general(value)
    magnitude = int(math.floor(math.log10(a)))
    for digits in range(11, 0, -1):
        decimals = max(0, digits - 1 - magnitude)
        text = f"{a:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if len(text) <= 11:
            break
    if text == "0":
        return _sci_general(value)
    return ("-" if value < 0 else "") + text


def _sci_general(value: float) -> str:
    mantissa, exp = f"{value:.5E}".split("E")
    mantissa = mantissa.rstrip("0").rstrip(".")
    sign = "-" if int(exp) < 0 else "+"
    return f"{mantissa}E{sign}{abs(int(exp)):02d}"


# -- numbers ----------------------------------------------------------------------------------
def _round_half_up(value: float, decimals: int) -> str:
    """Fixed-point text of ``value`` rounded half away from zero, as Excel rounds for display."""
    quantum = Decimal(1).scaleb(-decimals)
    return str(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


def _fill_integer(digits: str, placeholders: list[str], group: bool = False) -> list[str]:
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


def _comma_roles(toks: tuple[_Tok, ...]) -> dict[int, str]:
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


def _render_digits(toks: tuple[_Tok, ...], x: float) -> dict[int, str]:
    """Text for each digit/dot/comma token of a plain number rendering of ``x >= 0``."""
    roles = _comma_roles(toks)
    dot = next((i for i, t in enumerate(toks) if t.kind == "dot"), None)
    int_ph = [i for i, t in enumerate(toks) if t.kind == "digit" and (dot is None or i < dot)]
    frac_ph = [i for i, t in enumerate(toks) if t.kind == "digit" and dot is not None and i > dot]
    group = any(r == "sep" and (dot is None or i < dot) for i, r in roles.items())
    text = _round_half_up(x, len(frac_ph))
    ipart, _, fpart = text.partition(".")
    ipart = ipart.lstrip("0")
    out: dict[int, str] = {}
    for i, chars in zip(int_ph, _fill_integer(ipart, [toks[i].text for i in int_ph], group)):
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


def _emit(toks: tuple[_Tok, ...], filled: dict[int, str], general: float | None = None) -> str:
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


def _scaled(toks: tuple[_Tok, ...], x: float) -> float:
    roles = _comma_roles(toks)
    x *= 100 ** sum(t.kind == "pct" for t in toks)
    return x / 1000 ** sum(r == "scale" for r in roles.values())


def _plain_layout(sec: _Section) -> tuple[str, str, int, bool, bool] | None:
    """(prefix, suffix, decimals, thousands, percent) when ``sec`` is a plain fixed-point number
    (literals, then ``0`` / ``#,##0`` with at most one ``0``, then ``.0...0``, ``%``, literals),
    the shape of most real formats; ``None`` for anything else."""
    toks = sec.tokens
    i, n = 0, len(toks)
    prefix, suffix = [], []
    while i < n and toks[i].kind in ("lit", "pad"):
        prefix.append(toks[i].text)
        i += 1
    integer = []
    while i < n and toks[i].kind in ("digit", "comma"):
        integer.append(toks[i])
        i += 1
    digits = [t.text for t in integer if t.kind == "digit"]
    if not digits or digits[-1] != "0" or any(d != "#" for d in digits[:-1]):
        return None
    if integer[0].kind == "comma" or integer[-1].kind == "comma":
        return None
    decimals = 0
    if i < n and toks[i].kind == "dot":
        i += 1
        while i < n and toks[i].kind == "digit" and toks[i].text == "0":
            decimals += 1
            i += 1
    percent = i < n and toks[i].kind == "pct"
    i += percent
    while i < n and toks[i].kind in ("lit", "pad"):
        suffix.append(toks[i].text)
        i += 1
    if i != n:
        return None
    thousands = any(t.kind == "comma" for t in integer)
    return "".join(prefix), "".join(suffix), decimals, thousands, percent


def _render_number(sec: _Section, x: float) -> tuple[str, bool]:
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
    return _emit(sec.tokens, filled), nonzero


def _render_scientific(sec: _Section, x: float) -> tuple[str, bool]:
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
    if float(_round_half_up(mantissa, n_frac)) >= 10 ** step:
        exp += step
        mantissa = float(Decimal(repr(x)).scaleb(-exp))
    filled = _render_digits(mant, mantissa)
    exp_ph = []
    j = e_at + 1
    while j < len(toks) and toks[j].kind == "digit":
        exp_ph.append(j)
        j += 1
    for i, chars in zip(exp_ph, _fill_integer(str(abs(exp)), [toks[i].text for i in exp_ph])):
        filled[i] = chars
    sign = "-" if exp < 0 else "+" if toks[e_at].text[1] == "+" else ""
    filled[e_at] = toks[e_at].text[0] + sign  # the E keeps the case written
    nonzero = any(ch in "123456789" for i, s in filled.items() if i < e_at for ch in s)
    return _emit(toks, filled), nonzero


def _fraction_slash(toks: list[_Tok] | tuple[_Tok, ...]) -> int | None:
    """Index of the slash of a fraction (digit placeholders before, digits after), if any."""
    for i, t in enumerate(toks):
        if (t.kind == "slash" and 0 < i < len(toks) - 1 and toks[i - 1].kind == "digit"
                and (toks[i + 1].kind == "digit" or toks[i + 1].text.isdigit())):
            return i
    return None


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


def _render_fraction(sec: _Section, x: float) -> tuple[str, bool]:
    toks = sec.tokens
    slash = _fraction_slash(toks)
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
    for i, chars in zip(int_ph, _fill_integer(int_digits, [toks[i].text for i in int_ph])):
        filled[i] = chars
    if int_ph and num == 0:
        for i in range(num_start, den_end):
            filled[i] = " " * max(len(toks[i].text), 1)
    else:
        for i, chars in zip(num_ph, _fill_integer(str(num), [toks[i].text for i in num_ph])):
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
    return _emit(toks, filled), bool(whole or num)


# -- dates and times --------------------------------------------------------------------------
def _ymd_weekday(day: int, date1904: bool) -> tuple[int, int, int, int]:
    """(year, month, day, weekday with 0 = Sunday) of a serial day number, Excel's calendar."""
    if date1904:
        d = dt.date(1904, 1, 1) + dt.timedelta(days=day)
        return d.year, d.month, d.day, (d.weekday() + 1) % 7
    weekday = (day + 6) % 7
    if day == 0:
        return 1900, 1, 0, weekday
    if day == 60:
        return 1900, 2, 29, weekday
    d = dt.date(1899, 12, 31 if day < 60 else 30) + dt.timedelta(days=day)
    return d.year, d.month, d.day, weekday


def _render_date(sec: _Section, value: float, date1904: bool) -> str:
    toks = sec.tokens
    elapsed_only = all(t.kind != "date" and t.kind != "ampm" and t.kind != "subsec"
                       for t in toks) and any(t.kind == "elapsed" for t in toks)
    if elapsed_only:
        negative, value = value < 0, abs(value)
    elif value < 0 or value >= _MAX_SERIAL:
        return _HASHES
    else:
        negative = False
    sub = max((len(t.text) - 1 for t in toks if t.kind == "subsec"), default=0)
    # round once, half up, to the finest unit shown; then split into fields
    total = (Decimal(repr(value)) * 86400).quantize(Decimal(1).scaleb(-sub), rounding=ROUND_HALF_UP)
    seconds = int(total)
    fraction = total - seconds
    day, secs = divmod(seconds, 86400)
    hour, rem = divmod(secs, 3600)
    minute, second = divmod(rem, 60)
    has_ampm = any(t.kind == "ampm" for t in toks)
    fields = [i for i, t in enumerate(toks) if t.kind in ("date", "elapsed", "subsec", "ampm")]
    ymdw = None
    out = []
    for i, t in enumerate(toks):
        if t.kind in ("lit", "pad"):
            out.append(t.text)
            continue
        if t.kind == "subsec":
            out.append("." + str(fraction.quantize(Decimal(1).scaleb(-sub)))[2:2 + sub].ljust(sub, "0"))
            continue
        if t.kind == "ampm":
            pm = hour >= 12
            if t.text.upper() == "AM/PM":
                out.append("PM" if pm else "AM")
            else:
                out.append(t.text[2] if pm else t.text[0])
            continue
        if t.kind == "elapsed":
            unit, width = t.text[1], len(t.text) - 2
            amount = {"h": seconds // 3600, "m": seconds // 60, "s": seconds}[unit]
            out.append(str(amount).zfill(width))
            continue
        if t.kind != "date":
            out.append(t.text if t.kind in ("dot", "comma", "pct", "slash") else "")
            continue
        letter, width = t.text[0], len(t.text)
        if letter == "m" and width <= 2:  # minutes right after an hour or before a second
            k = fields.index(i)
            prev = toks[fields[k - 1]].text.strip("[") if k > 0 else ""
            nxt = toks[fields[k + 1]].text.strip("[") if k + 1 < len(fields) else ""
            if prev.startswith("h") or nxt.startswith("s"):
                out.append(str(minute).zfill(width))
                continue
        if letter in "ymdeb":
            if ymdw is None:
                ymdw = _ymd_weekday(day, date1904)
                if ymdw[0] > 9999:
                    return _HASHES
            year, month, mday, weekday = ymdw
            if letter == "m":
                name = _MONTHS[month - 1]
                out.append(str(month).zfill(width) if width <= 2 else
                           name[:3] if width == 3 else name[0] if width == 5 else name)
            elif letter == "d":
                name = _DAYS_FROM_SUNDAY[weekday]
                out.append(str(mday).zfill(width) if width <= 2 else name[:3] if width == 3 else name)
            elif letter == "y" and width <= 2:
                out.append(f"{year % 100:02d}")
            else:  # yyy, yyyy, e, b: four-digit year
                out.append(f"{year:04d}")
        elif letter == "h":
            h = hour % 12 or 12 if has_ampm else hour
            out.append(str(h).zfill(min(width, 2)))
        elif letter == "s":
            out.append(str(second).zfill(min(width, 2)))
    text = "".join(out)
    return "-" + text if negative else text


# -- public API -------------------------------------------------------------------------------
def _render(sec: _Section, x: float) -> tuple[str, bool]:
    """(text, shows a non-zero value) of ``x >= 0`` in a number, scientific, fraction or
    literal-only section."""
    if sec.kind == "number":
        return _render_number(sec, x)
    if sec.kind == "scientific":
        return _render_scientific(sec, x)
    if sec.kind == "fraction":
        return _render_fraction(sec, x)
    return _emit(sec.tokens, {}), False  # literal-only or empty section: no sign either


def format_value(value: float, code: str, date1904: bool = False) -> str:
    """Display text of a numeric cell value under number format ``code`` (en-US).

    Never raises: a value outside the date range under a date format gives ``#######`` as
    Excel shows it, and an unknown or broken code falls back to ``General``. Spaces from
    padding, fill and blank ``?`` placeholders are stripped at both ends.
    """
    value = float(value)
    if not code or code.lower() == "general" or not math.isfinite(value):
        return format_general(value)
    try:
        numeric, _ = _parse(code)
        if not numeric:
            return format_general(value)
        sec, minus = _choose(numeric, value)
        if sec.kind == "invalid":
            return format_general(value)
        if sec.kind == "date":
            return _render_date(sec, -abs(value) if minus else abs(value), date1904).strip()
        if sec.kind in ("general", "text"):  # General keeps its own sign: "Total: -5"
            return _emit(sec.tokens, {}, general=-abs(value) if minus else abs(value)).strip()
        text, nonzero = _render(sec, abs(value))
        text = text.strip()
        return "-" + text if minus and nonzero else text
    except Exception:  # noqa: BLE001 - a display must never fail: fall back to General
        return format_general(value)


def format_values(values: Sequence[float], code: str, date1904: bool = False) -> list[str]:
    """``[format_value(v, code, date1904) for v in values]``, with a faster path for the
    sections of plain numbers (fixed decimals, optional thousands separator and percent, literal
    text around: ``0.00``, ``#,##0``, ``"$"#,##0.00``, ``0%``): a value that needs no rounding
    at the section's decimals (its shortest decimal form has no more digits after the point)
    is written from its scaled integer; any other goes through :func:`format_value`.
    Never raises."""
    if not code or code.lower() == "general":
        return [format_value(v, code, date1904) for v in values]
    try:
        numeric, _ = _parse(code)
    except Exception:  # noqa: BLE001 - format_value falls back to General
        numeric = ()
    out = []
    for value in values:
        value = float(value)
        sec, minus = _choose(numeric, value) if numeric and math.isfinite(value) else (None, False)
        layout = sec.plain_layout if sec is not None and sec.kind == "number" else None
        if layout is not None:
            prefix, suffix, decimals, thousands, percent = layout
            x = abs(value) * 100 if percent else abs(value)
            scale = 10 ** decimals
            k = round(x * scale)
            # below 2**50 the decimal k/scale is the only one of its length that rounds to x,
            # so it is x's shortest form and rounding half up at `decimals` keeps it
            if k < 2 ** 50 and k / scale == x:
                whole, fraction = divmod(k, scale)
                digits = (f"{whole:,}" if thousands else str(whole)) + (
                    f".{fraction:0{decimals}d}" if decimals else "")
                text = (prefix + digits + ("%" if percent else "") + suffix).strip()
                out.append("-" + text if minus and k else text)
                continue
        out.append(format_value(value, code, date1904))
    return out


def is_valid_format(code: str) -> bool:
    """Whether Excel would accept ``code``: it parses, no section is invalid (such as an elapsed
    field after a time field, ``HH[M]``) and sample values render without error. ``General`` and
    the empty code are valid. Cells under an invalid code are shown as ``General``."""
    if not code or code.lower() == "general":
        return True
    try:
        numeric, _ = _parse(code)
        if any(sec.kind == "invalid" for sec in numeric):
            return False
        for sample in (-1234.5, 0.0, 0.25, 45365.5):
            sec, minus = _choose(numeric, sample)
            if sec.kind == "date":
                _render_date(sec, -abs(sample) if minus else abs(sample), False)
            elif sec.kind not in ("general", "text"):
                _render(sec, abs(sample))
        return True
    except Exception:  # noqa: BLE001 - any failure to parse or render means "not valid"
        return False


def format_text(text: str, code: str) -> str:
    """Display text of a string cell under ``code``.

    The text section is the fourth section, or the last one when it holds ``@``; ``@`` is
    replaced by the text and literals are kept (``"ID-"@`` shows ``ID-42``), padding spaces at
    the ends are dropped. Without a text section the text shows unchanged.
    """
    if not code or code.lower() == "general":
        return text
    try:
        _, sec = _parse(code)
    except Exception:  # noqa: BLE001
        return text
    if sec is None:
        return text
    pieces = [(t.kind == "at", text if t.kind == "at" else t.text)
              for t in sec.tokens if t.kind in ("at", "lit", "pad")]
    # padding and literal spaces at the ends go; the cell's own text is kept as it is
    lead = next((k for k, (is_text, _) in enumerate(pieces) if is_text), len(pieces))
    trail = max((k for k, (is_text, _) in enumerate(pieces) if is_text), default=-1)
    head = "".join(s for _, s in pieces[:lead]).lstrip()
    middle = "".join(s for _, s in pieces[lead:trail + 1])
    tail = "".join(s for _, s in pieces[max(lead, trail + 1):]).rstrip()
    return head + middle + tail
