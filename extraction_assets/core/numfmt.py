"""Render cell values through their number format, as Excel (en-US) displays them.

Follows the number-format grammar of ECMA-376 Part 1, §18.8.31: up to four ``;``-separated
sections (positive; negative; zero; text), optional ``[colour]``/``[condition]``/``[$cur-locale]``
brackets, quoted literals, ``\\`` escapes, ``_x`` padding and ``*x`` fill. Numbers: ``0``/``#``/``?``
digit placeholders, ``,`` thousands separator (and trailing ``,`` scaling by 1,000), ``%``,
scientific ``E+``/``E-``. Dates and times: ``yyyy yy mmmm mmm mm m dddd ddd dd d hh h mm ss
AM/PM [h] [mm] [ss]`` and fractional seconds. Serial dates use the 1900 system with Excel's
fictitious 1900-02-29 (serial 60), or the 1904 system.

``General`` follows Excel's rule for a standard-width cell: at most 11 significant characters,
integers shown without a decimal point, scientific notation beyond that.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

_EPOCH_1900 = dt.datetime(1899, 12, 30)
_EPOCH_1904 = dt.datetime(1904, 1, 1)

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

_BRACKET_RE = re.compile(r"\[[^\]]*\]")
_DATE_TOKENS = re.compile(r"(?i)(yyyy|yy|e|mmmmm|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|"
                          r"am/pm|a/p|\[h+\]|\[m+\]|\[s+\]|\.0+)")


def serial_to_datetime(serial: float, date1904: bool = False) -> dt.datetime:
    """Convert an Excel serial date-time to a naive ``datetime``.

    In the 1900 system serial 1 is 1900-01-01 and serial 60 is Excel's fictitious 1900-02-29,
    which is shown as 1900-03-01 here; fractions are the time of day, rounded to the millisecond.

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


def _split_sections(code: str) -> list[str]:
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


def _strip_literals(section: str) -> str:
    """The section with quoted text, escapes and brackets removed (for classification)."""
    s = re.sub(r'"[^"]*"', "", section)
    s = re.sub(r"\\.", "", s)
    s = re.sub(r"[_*].", "", s)
    return _BRACKET_RE.sub(lambda m: m.group(0) if re.fullmatch(r"\[(h+|m+|s+)\]", m.group(0), re.I) else "", s)


@lru_cache(maxsize=4096)
def is_date_format(code: str) -> bool:
    """Whether the first section of a number format code displays a date or time."""
    if not code or code == "General":
        return False
    section = _strip_literals(_split_sections(code)[0])
    return bool(re.search(r"(?i)[dmyhs]|\[(h+|m+|s+)\]", section)) and not re.search(r"[0#?]", re.sub(r"\.0+", "", section))


def _condition(section: str) -> tuple[str, float] | None:
    m = re.search(r"\[(<=|>=|<>|<|>|=)\s*(-?[\d.]+)\]", section)
    return (m.group(1), float(m.group(2))) if m else None


def _holds(cond: tuple[str, float], v: float) -> bool:
    op, x = cond
    return {"<": v < x, ">": v > x, "=": v == x, "<=": v <= x, ">=": v >= x, "<>": v != x}[op]


def _pick_section(code: str, value: float) -> tuple[str, float]:
    """Choose the section for a number and the value to render (sign dropped for section 2)."""
    sections = _split_sections(code)
    if any(_condition(s) for s in sections[:2]):
        for s in sections[:3]:
            cond = _condition(s)
            if cond is None or _holds(cond, value):
                return s, (abs(value) if cond and value < 0 and "-" not in _strip_literals(s) else value)
        return sections[-1], value
    if value > 0 or len(sections) == 1:
        return sections[0], value
    if value < 0:
        return (sections[1], -value) if len(sections) >= 2 and sections[1] else (sections[0], value)
    return (sections[2] if len(sections) >= 3 else sections[0]), value


def _literal_text(section: str) -> list[tuple[str, str]]:
    """Tokenise a section into ('lit', text) and ('code', text) pieces."""
    out, i = [], 0
    while i < len(section):
        ch = section[i]
        if ch == '"':
            j = section.find('"', i + 1)
            j = len(section) if j < 0 else j
            out.append(("lit", section[i + 1:j]))
            i = j + 1
        elif ch == "\\" and i + 1 < len(section):
            out.append(("lit", section[i + 1]))
            i += 2
        elif ch == "_" and i + 1 < len(section):
            out.append(("lit", " "))
            i += 2
        elif ch == "*" and i + 1 < len(section):
            i += 2
        elif ch == "[":
            j = section.find("]", i)
            j = len(section) if j < 0 else j
            inner = section[i + 1:j]
            if inner.startswith("$"):
                symbol = inner[1:].split("-", 1)[0]
                out.append(("lit", symbol))
            elif re.fullmatch(r"(?i)h+|m+|s+", inner):
                out.append(("code", section[i:j + 1]))
            i = j + 1
        else:
            out.append(("code", ch))
            i += 1
    return out


def format_general(value: float) -> str:
    """Excel's ``General`` format for a number in a standard-width cell.

    At most 11 characters (sign excluded): integers below 10^11 in full, other numbers rounded to
    as many significant digits as fit, scientific notation (``1.23457E+11``) beyond that range.
    """
    if value == 0:
        return "0"
    if math.isnan(value) or math.isinf(value):
        return "#NUM!"
    value = float(value)
    a = abs(value)
    if a.is_integer() and a < 1e11:
        return str(int(value))
    if not 1e-9 <= a < 1e11:
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


def _format_number(section: str, value: float) -> str:
    pieces = _literal_text(section)
    code = "".join(t for k, t in pieces if k == "code")
    percent = code.count("%")
    value *= 100 ** percent
    sci = re.search(r"[Ee][+-]", code)
    if sci:
        return _format_scientific(pieces, code, value)
    # trailing commas after the last digit placeholder scale by 1,000 each
    m = re.search(r"[0#?](,+)(?![0#?])", code)
    if m:
        value /= 1000 ** len(m.group(1))
    int_part, _, frac_part = code.partition(".")
    frac_digits = len(re.findall(r"[0#?]", frac_part))
    min_frac = len(re.findall(r"0", frac_part))
    min_int = len(re.findall(r"0", int_part))
    thousands = bool(re.search(r"[0#?],[0#?]", int_part))
    negative = value < 0
    rounded = _round_half_up(abs(value), frac_digits)
    ipart, _, fpart = rounded.partition(".")
    if frac_digits > min_frac:
        fpart = fpart.rstrip("0")
        if len(fpart) < min_frac:
            fpart = fpart.ljust(min_frac, "0")
    ipart = ipart.lstrip("0")
    if len(ipart) < min_int:
        ipart = ipart.rjust(min_int, "0")
    if thousands and ipart:
        ipart = f"{int(ipart):,}".rjust(len(ipart), "0") if ipart.isdigit() else ipart
    number = ipart + ("." + fpart if fpart or "." in code and frac_digits else "")
    if "." in code and not fpart and frac_digits == 0:
        number = ipart + "."
    out, placed = [], False
    for kind, text in pieces:
        if kind == "lit":
            out.append(text)
        elif text in "0#?,.":
            if not placed:
                out.append(number)
                placed = True
        elif text == "%":
            out.append("%")
        else:
            out.append(text)
    if not placed:
        out.append(number)
    result = "".join(out)
    if negative and float(rounded) != 0:
        result = "-" + result
    return result


def _round_half_up(value: float, decimals: int) -> str:
    """Fixed-point text of ``value`` rounded half away from zero, as Excel rounds for display."""
    quantum = Decimal(1).scaleb(-decimals)
    return str(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


def _format_scientific(pieces, code: str, value: float) -> str:
    m = re.search(r"([0#?.,]*)[Ee]([+-])([0#?]+)", code)
    mant, sign_char, exp_digits = m.group(1), m.group(2), len(m.group(3))
    int_places = len(re.findall(r"[0#?]", mant.split(".")[0])) or 1
    frac = len(re.findall(r"[0#?]", mant.split(".")[1])) if "." in mant else 0
    if value == 0:
        exp = 0
    else:
        exp = int(math.floor(math.log10(abs(value))))
        if int_places > 1:  # engineering style: exponent a multiple of the integer places
            exp = exp - (exp % int_places)
    mantissa = value / (10 ** exp) if value else 0.0
    text = f"{mantissa:.{frac}f}"
    if float(text) and abs(float(text)) >= 10 ** int_places:
        exp += int_places
        text = f"{value / 10 ** exp:.{frac}f}"
    sign = "-" if exp < 0 else ("+" if sign_char == "+" else "")
    first_code = next((i for i, p in enumerate(pieces) if p[0] == "code"), len(pieces))
    prefix = "".join(t for _, t in pieces[:first_code])
    return f"{prefix}{text}E{sign}{abs(exp):0{exp_digits}d}"


def _format_date(section: str, value: float, date1904: bool) -> str:
    when = serial_to_datetime(value, date1904)
    pieces = _literal_text(section)
    code_upper = "".join(t for k, t in pieces if k == "code").upper()
    ampm = "AM/PM" in code_upper or "A/P" in code_upper
    # fractional seconds: round before splitting into fields
    frac_m = re.search(r"s+\.(0+)", "".join(t for k, t in pieces if k == "code"), re.I)
    frac_digits = len(frac_m.group(1)) if frac_m else 0
    total_seconds = value * 86400
    if not frac_digits:
        when = serial_to_datetime(round(total_seconds) / 86400, date1904)
    # tokenise the code part into date tokens
    tokens: list[tuple[str, str]] = []
    for kind, text in pieces:
        if kind == "lit":
            tokens.append(("lit", text))
        else:
            if tokens and tokens[-1][0] == "code":
                tokens[-1] = ("code", tokens[-1][1] + text)
            else:
                tokens.append(("code", text))
    flat: list[tuple[str, str]] = []
    for kind, text in tokens:
        if kind == "lit":
            flat.append(("lit", text))
            continue
        pos = 0
        for m in _DATE_TOKENS.finditer(text):
            if m.start() > pos:
                flat.append(("lit", text[pos:m.start()]))
            flat.append(("tok", m.group(0)))
            pos = m.end()
        if pos < len(text):
            flat.append(("lit", text[pos:]))
    out = []
    for i, (kind, tok) in enumerate(flat):
        if kind == "lit":
            out.append(tok)
            continue
        low = tok.lower()
        if low in ("m", "mm"):
            # minutes when after an hour or before a second token
            prev = next((t.lower() for k, t in reversed(flat[:i]) if k == "tok"), "")
            nxt = next((t.lower() for k, t in flat[i + 1:] if k == "tok"), "")
            if prev.startswith("h") or prev.startswith("[h") or nxt.startswith("s"):
                out.append(f"{when.minute:02d}" if low == "mm" else str(when.minute))
            else:
                out.append(f"{when.month:02d}" if low == "mm" else str(when.month))
        elif low == "mmm":
            out.append(_MONTHS[when.month - 1][:3])
        elif low == "mmmm":
            out.append(_MONTHS[when.month - 1])
        elif low == "mmmmm":
            out.append(_MONTHS[when.month - 1][0])
        elif low == "yyyy" or low == "e":
            out.append(f"{when.year:04d}")
        elif low == "yy":
            out.append(f"{when.year % 100:02d}")
        elif low == "d":
            out.append(str(when.day))
        elif low == "dd":
            out.append(f"{when.day:02d}")
        elif low == "ddd":
            out.append(_DAYS[when.weekday()][:3])
        elif low == "dddd":
            out.append(_DAYS[when.weekday()])
        elif low in ("h", "hh"):
            hour = when.hour
            if ampm:
                hour = hour % 12 or 12
            out.append(f"{hour:02d}" if low == "hh" else str(hour))
        elif low in ("s", "ss"):
            out.append(f"{when.second:02d}" if low == "ss" else str(when.second))
        elif low.startswith("."):
            digits = len(low) - 1
            frac = (total_seconds - math.floor(total_seconds))
            out.append("." + f"{frac:.{digits}f}"[2:])
        elif low in ("am/pm", "a/p"):
            upper = when.hour >= 12
            text = ("PM" if upper else "AM") if low == "am/pm" else ("P" if upper else "A")
            out.append(text if tok[0].isupper() else text.lower())
        elif low.startswith("[h"):
            out.append(str(int(total_seconds // 3600)).zfill(len(low) - 2))
        elif low.startswith("[m"):
            out.append(str(int(total_seconds // 60)).zfill(len(low) - 2))
        elif low.startswith("[s"):
            out.append(str(int(round(total_seconds))).zfill(len(low) - 2))
    return "".join(out)


def format_value(value: float, code: str, date1904: bool = False) -> str:
    """Display text of a numeric cell value under number format ``code`` (en-US).

    Never raises: a value outside the date range under a date format gives ``#######`` as
    Excel shows it, and an unparseable code falls back to ``General``.
    """
    value = float(value)
    if not code or code.lower() == "general":
        return format_general(value)
    try:
        section, shown = _pick_section(code, value)
        stripped = _strip_literals(section)
        if section.strip().lower() == "general" or re.fullmatch(r"(?i)\s*general\s*", stripped):
            text = format_general(shown)
            lits = "".join(t for k, t in _literal_text(section) if k == "lit")
            return text if not lits else section.replace("General", text).replace('"', "")
        if is_date_format(section):
            return _format_date(section, shown, date1904)
        if "@" in stripped and not re.search(r"[0#?]", stripped):
            # a number in a Text (@) section shows as General
            return "".join(format_general(shown) if (k == "code" and t == "@") else
                           (t if k == "lit" else "") for k, t in _literal_text(section))
        if not re.search(r"[0#?]", stripped):
            # a section made only of literals (e.g. "-" for zero in accounting formats)
            return "".join(t for k, t in _literal_text(section) if k == "lit" or t not in "@")
        return _format_number(section, shown).strip()
    except ValueError:
        return "#######"
    except (IndexError, StopIteration, AttributeError, OverflowError):
        return format_general(value)


def format_text(text: str, code: str) -> str:
    """Display text of a string cell: the fourth section of the code with ``@`` replaced."""
    if not code or "@" not in code:
        return text
    sections = _split_sections(code)
    section = sections[3] if len(sections) >= 4 else sections[0] if "@" in sections[0] else None
    if section is None:
        return text
    return "".join(text if (k == "code" and t == "@") else (t if k == "lit" else "")
                   for k, t in _literal_text(section))
