"""Date and time serials (1900 and 1904 systems, Excel's fictitious 1900-02-29) and their rendering
through a date/time section."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from extraction_assets.core.numfmt.numbers import HASHES
from extraction_assets.core.numfmt.parse import Section

EPOCH_1900 = dt.datetime(1899, 12, 30)
EPOCH_1904 = dt.datetime(1904, 1, 1)
MAX_SERIAL = 2_958_466  # 10000-01-01 in the 1900 system: the first serial Excel cannot show
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS_FROM_SUNDAY = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def serial_to_datetime(serial: float, date1904: bool = False) -> dt.datetime:
    """Convert an Excel serial date-time to a naive ``datetime``.

    In the 1900 system serial 1 is 1900-01-01 and serial 60 is Excel's fictitious 1900-02-29,
    which is shown as 1900-03-01 here; fractions are the time of day, rounded to the millisecond.
    (:func:`~extraction_assets.core.numfmt.format_value` itself shows serial 60 as 1900-02-29, as Excel does.)

    Raises:
        ValueError: for negative serials or serials beyond year 9999.
    """
    if serial < 0 or serial > 2_958_465.99999999:
        raise ValueError(f"serial {serial} is outside Excel's date range")
    if date1904:
        base = EPOCH_1904
    else:
        base = EPOCH_1900
        if serial < 61:
            # Excel's 1900 leap-year bug: days before 1900-03-01 are shifted by one, and the
            # fictitious 1900-02-29 (serial 60) lands on 1900-03-01 with its time of day kept
            serial += 1
    ms = round(serial * 86_400_000)
    return base + dt.timedelta(milliseconds=ms)


def ymd_weekday(day: int, date1904: bool) -> tuple[int, int, int, int]:
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


def render_date(sec: Section, value: float, date1904: bool) -> str:
    toks = sec.tokens
    elapsed_only = all(t.kind != "date" and t.kind != "ampm" and t.kind != "subsec"
                       for t in toks) and any(t.kind == "elapsed" for t in toks)
    if elapsed_only:
        negative, value = value < 0, abs(value)
    elif value < 0 or value >= MAX_SERIAL:
        return HASHES
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
            digits = str(fraction.quantize(Decimal(1).scaleb(-sub)))[2:2 + sub]
            out.append("." + digits.ljust(sub, "0"))
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
                ymdw = ymd_weekday(day, date1904)
                if ymdw[0] > 9999:
                    return HASHES
            year, month, mday, weekday = ymdw
            if letter == "m":
                name = _MONTHS[month - 1]
                out.append(str(month).zfill(width) if width <= 2 else
                           name[:3] if width == 3 else name[0] if width == 5 else name)
            elif letter == "d":
                name = _DAYS_FROM_SUNDAY[weekday]
                short = str(mday).zfill(width) if width <= 2 else name[:3]
                out.append(name if width > 3 else short)
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
