"""Number-format codes parsed (ECMA-376 Part 1 §18.8.31): sections, tokens and what each section
shows (number, scientific, fraction, date/time, General, text), cached per code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

# [$-F800] / [$-F400]: the system long date and system time, as en-US Windows shows them
_SYSTEM_LONG_DATE = "dddd, mmmm d, yyyy"
_SYSTEM_TIME = "h:mm:ss AM/PM"
_CONDITION = re.compile(r"(<=|>=|<>|<|>|=)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_ELAPSED = re.compile(r"(?i)(h+|m+|s+)")
_DATE_LETTERS = "ymdhseb"


@dataclass(frozen=True)
class Token:
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
class Section:
    """One parsed section: its tokens, what it shows (``kind``: number, scientific, fraction,
    date, general, text, literal, empty or invalid) and its ``[<=100]``-style condition."""

    tokens: tuple[Token, ...]
    kind: str  # number, scientific, fraction, date, general, text, literal, empty, invalid
    condition: tuple[str, float] | None = None

    def has(self, kind: str) -> bool:
        return any(t.kind == kind for t in self.tokens)

    @cached_property
    def plain_layout(self) -> tuple[str, str, int, bool, bool] | None:
        """See :func:`number_layout` (computed once per parsed section)."""
        return number_layout(self)


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


def _tokenize(section: str) -> tuple[list[Token], tuple[str, float] | None, str | None]:
    """Tokens of one section, its ``[condition]`` and a system format (F800/F400) if any."""
    toks: list[Token] = []
    condition, system = None, None
    i, n = 0, len(section)
    while i < n:
        ch = section[i]
        low = section[i:i + 7].lower()
        if ch == '"':
            j = section.find('"', i + 1)
            j = n if j < 0 else j
            toks.append(Token("lit", section[i + 1:j]))
            i = j + 1
        elif ch == "\\":
            toks.append(Token("lit", section[i + 1:i + 2]))
            i += 2
        elif ch == "_":
            toks.append(Token("pad", " "))
            i += 2
        elif ch == "*":
            toks.append(Token("fill", ""))
            i += 2
        elif ch == "[":
            j = section.find("]", i)
            if j < 0:
                toks.append(Token("lit", section[i + 1:]))
                break
            inner = section[i + 1:j]
            if _ELAPSED.fullmatch(inner):
                toks.append(Token("elapsed", f"[{inner.lower()}]"))
            elif m := _CONDITION.fullmatch(inner.strip()):
                condition = (m.group(1), float(m.group(2)))
            elif inner.startswith("$"):
                currency, _, locale = inner[1:].partition("-")
                if currency:
                    toks.append(Token("lit", currency))
                locale = locale.upper()
                if locale.endswith("F800") or locale == "X-SYSDATE":
                    system = _SYSTEM_LONG_DATE
                elif locale.endswith("F400") or locale == "X-SYSTIME":
                    system = _SYSTEM_TIME
            # colours, [DBNum1], [Color10] and unknown codes are ignored
            i = j + 1
        elif low == "general":
            toks.append(Token("general", section[i:i + 7]))
            i += 7
        elif low.startswith("am/pm"):
            toks.append(Token("ampm", "AM/PM"))
            i += 5
        elif low.startswith("a/p"):
            toks.append(Token("ampm", section[i:i + 3]))
            i += 3
        elif (ch in "eE" and i + 1 < n and section[i + 1] in "+-"
              and any(t.kind == "digit" for t in toks)):  # else e- is a year and a literal
            toks.append(Token("exp", section[i:i + 2]))
            i += 2
        elif ch.lower() in _DATE_LETTERS:
            j = i
            while j < n and section[j].lower() == ch.lower():
                j += 1
            toks.append(Token("date", section[i:j].lower()))
            i = j
        else:
            kind = {"0": "digit", "#": "digit", "?": "digit", ".": "dot", ",": "comma",
                    "%": "pct", "/": "slash", "@": "at"}.get(ch, "lit")
            toks.append(Token(kind, ch))
            i += 1
    return toks, condition, system


def _merge_subseconds(toks: list[Token]) -> list[Token]:
    """Turn ``.0``/``.00``/``.000`` right after a seconds field into one ``subsec`` token."""
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        prev = next((p for p in reversed(out) if p.kind in ("date", "elapsed", "ampm")), None)
        if (t.kind == "dot" and prev is not None and prev.text.strip("[]").startswith("s")
                and i + 1 < len(toks) and toks[i + 1].text == "0"):
            j = i + 1
            while j < len(toks) and toks[j].text == "0" and toks[j].kind == "digit":
                j += 1
            out.append(Token("subsec", "." + "0" * (j - i - 1)))
            i = j
            continue
        out.append(t)
        i += 1
    return out


@lru_cache(maxsize=4096)
def _parse_section(text: str) -> Section:
    toks, condition, system = _tokenize(text)
    if system is not None:  # the system format replaces the whole section
        toks = _tokenize(system)[0]
    if not text:
        return Section((), "empty", condition)
    kinds = {t.kind for t in toks}
    if kinds & {"date", "elapsed", "ampm"}:
        merged = _merge_subseconds(toks)
        if "digit" not in {t.kind for t in merged} and "general" not in kinds:
            return Section(tuple(merged), date_kind(merged), condition)
    if "general" in kinds:
        kind = "general"
    elif decimal_places(toks) > MAX_DECIMAL_PLACES:
        kind = "invalid"
    elif "digit" in kinds:
        kind = "scientific" if "exp" in kinds else "fraction" if fraction_slash(toks) else "number"
    elif "at" in kinds:
        kind = "text"
    else:
        kind = "literal"
    return Section(tuple(toks), kind, condition)


#: Most digit placeholders Excel accepts after the decimal point of a number format.
MAX_DECIMAL_PLACES = 30
#: Most characters Excel accepts in a number format code.
MAX_FORMAT_CHARS = 255


def decimal_places(toks: list[Token]) -> int:
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


def date_kind(toks: list[Token]) -> str:
    """``date``, or ``invalid`` when an elapsed field follows a time field (``HH[M]``)."""
    seen_time = False
    for t in toks:
        if t.kind == "elapsed" and seen_time:
            return "invalid"
        if t.kind == "date" and t.text[0] in "hms":
            seen_time = True
    return "date"


@lru_cache(maxsize=4096)
def parse_format(code: str) -> tuple[tuple[Section, ...], Section | None]:
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
        numeric, _ = parse_format(code)
    except Exception:  # noqa: BLE001 - a broken code is simply not a date format
        return False
    return bool(numeric) and numeric[0].kind == "date"


def number_layout(sec: Section) -> tuple[str, str, int, bool, bool] | None:
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


def fraction_slash(toks: list[Token] | tuple[Token, ...]) -> int | None:
    """Index of the slash of a fraction (digit placeholders before, digits after), if any."""
    for i, t in enumerate(toks):
        if (t.kind == "slash" and 0 < i < len(toks) - 1 and toks[i - 1].kind == "digit"
                and (toks[i + 1].kind == "digit" or toks[i + 1].text.isdigit())):
            return i
    return None
