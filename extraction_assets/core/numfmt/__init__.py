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

Modules: :mod:`.parse` (codes into sections), :mod:`.numbers` (numeric sections, General),
:mod:`.dates` (serials and date/time sections); this module chooses the section and renders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from extraction_assets.core.numfmt.dates import render_date, serial_to_datetime
from extraction_assets.core.numfmt.numbers import (
    emit,
    format_general,
    render_fraction,
    render_number,
    render_scientific,
)
from extraction_assets.core.numfmt.parse import Section, is_date_format, parse_format

__all__ = [
    "format_general",
    "format_text",
    "format_value",
    "format_values",
    "is_date_format",
    "is_valid_format",
    "serial_to_datetime",
]


def _holds(cond: tuple[str, float], v: float) -> bool:
    op, x = cond
    return {"<": v < x, ">": v > x, "=": v == x, "<=": v <= x, ">=": v >= x, "<>": v != x}[op]


def _choose(numeric: tuple[Section, ...], value: float) -> tuple[Section, bool]:
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


def _render(sec: Section, x: float) -> tuple[str, bool]:
    """(text, shows a non-zero value) of ``x >= 0`` in a number, scientific, fraction or
    literal-only section."""
    if sec.kind == "number":
        return render_number(sec, x)
    if sec.kind == "scientific":
        return render_scientific(sec, x)
    if sec.kind == "fraction":
        return render_fraction(sec, x)
    return emit(sec.tokens, {}), False  # literal-only or empty section: no sign either


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
        numeric, _ = parse_format(code)
        if not numeric:
            return format_general(value)
        sec, minus = _choose(numeric, value)
        if sec.kind == "invalid":
            return format_general(value)
        if sec.kind == "date":
            return render_date(sec, -abs(value) if minus else abs(value), date1904).strip()
        if sec.kind in ("general", "text"):  # General keeps its own sign: "Total: -5"
            return emit(sec.tokens, {}, general=-abs(value) if minus else abs(value)).strip()
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
        numeric, _ = parse_format(code)
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
        numeric, _ = parse_format(code)
        if any(sec.kind == "invalid" for sec in numeric):
            return False
        for sample in (-1234.5, 0.0, 0.25, 45365.5):
            sec, minus = _choose(numeric, sample)
            if sec.kind == "date":
                render_date(sec, -abs(sample) if minus else abs(sample), False)
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
        _, sec = parse_format(code)
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
