"""Redaction of cell text before anything is rendered: built-in rules for e-mail addresses,
phone numbers, IBANs and payment card numbers, and user rules per column header.

A match is replaced by a marker naming the rule (``⟦redacted:email⟧``), so a reader sees that
something was removed and why, never what. Built-in rules are validated past their pattern:

* ``card``: 13-19 digits (single spaces or hyphens between them allowed) that pass the Luhn
  check (ISO/IEC 7812-1 Annex B) and start with a major issuer's prefix (Visa 4, Mastercard
  51-55 and 2221-2720, American Express 34/37, Discover 6011/644-649/65, JCB 3528-3589,
  Diners Club 300-305/36/38); a 16-digit order number that happens to pass Luhn but starts
  with 9 is kept.
* ``iban``: a country code, two check digits and 11-30 letters or digits (spaces allowed every
  four) whose ISO 13616 mod-97 check equals 1.
* ``email``: ``local@domain.tld`` (RFC 5322's dot-atom form, a TLD of at least two letters).
* ``phone``: 9-15 digits (ITU-T E.164's longest number is 15), written with a leading ``+``,
  parentheses around an area code, or separators (space, ``-``, ``.``, ``/``) between digit
  groups; text starting with a date (``12/31/2024 10:30``) and amounts grouped by thousands
  (``1 234 567.89``) are no phone numbers; digits alone (``5551234567``) are not taken.

Rules run in that order on each text (a card number is never taken for a phone number).
Candidates are found column-wise with Arrow's RE2 kernels; only the texts that may match are
looked at in Python.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The marker put in place of a match: ``⟦redacted:<rule>⟧``.
MARKER = "⟦redacted:{}⟧"
#: Finds markers (and the rule each names) in a text.
MARKER_RE = re.compile(r"⟦redacted:([\w.-]+)⟧")

_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_EMAIL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
                    r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?<![\w+.,/-])(?:\+|\(\d)?\d*(?:[ .\-/()]{1,2}\d+)+(?![\w.,/:-])")
#: Dates and grouped amounts look like phone numbers to the pattern above.
_DATE_START = re.compile(r"\d{4}([-/.])\d{1,2}\1\d{1,2}(?!\d)|\d{1,2}([-/.])\d{1,2}\2\d{2,4}(?!\d)")
_GROUPED_AMOUNT = re.compile(r"\d{1,3}([ .,])\d{3}(?:\1\d{3})*(?:[.,]\d+)?")

#: RE2 patterns that every text a rule can match also matches (the column-wise pre-filter).
_PREFILTER = {
    "card": r"\d(?:[ -]?\d){12}",
    "iban": r"[A-Z]{2}\d{2}",
    "email": r"@[A-Za-z0-9]",
    "phone": r"\d(?:[ .\-/()+]*\d){8}",
}
BUILTIN_RULES = ("card", "iban", "email", "phone")

_CARD_PREFIXES = (("4",), ("51", "52", "53", "54", "55"), ("34", "37"), ("6011", "65"),
                  ("36", "38", "300", "301", "302", "303", "304", "305"))


def luhn_valid(digits: str) -> bool:
    """Whether a digit string passes the Luhn check (ISO/IEC 7812-1 Annex B)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _issuer_prefix(digits: str) -> bool:
    if any(digits.startswith(p) for group in _CARD_PREFIXES for p in group):
        return True
    head4, head3 = int(digits[:4]), int(digits[:3])
    return 2221 <= head4 <= 2720 or 3528 <= head4 <= 3589 or 644 <= head3 <= 649


def card_number(text: str) -> bool:
    """Whether ``text`` (digits with optional single spaces or hyphens) is a payment card
    number: 13-19 digits, a major issuer's prefix and the Luhn check."""
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and _issuer_prefix(digits) and luhn_valid(digits)


def iban_valid(text: str) -> bool:
    """Whether ``text`` (spaces allowed) is an IBAN: 15-34 characters whose ISO 13616 mod-97
    check (the first four characters moved to the end, letters as 10..35) equals 1."""
    iban = text.replace(" ", "")
    if not 15 <= len(iban) <= 34 or not iban[:2].isalpha() or not iban[2:4].isdigit():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def _phone(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text)
    return (9 <= digits <= 15 and not _DATE_START.match(text)
            and not _GROUPED_AMOUNT.fullmatch(text))


_VALIDATE = {"card": card_number, "iban": iban_valid, "email": lambda _: True, "phone": _phone}
_PATTERN = {"card": _CARD, "iban": _IBAN, "email": _EMAIL, "phone": _PHONE}


@dataclass(frozen=True)
class ColumnRule:
    """A user rule: in the columns whose header matches ``header`` (a regular expression,
    searched case-insensitively in the column's full header path, e.g. ``Customer > Tax ID``),
    every match of ``pattern`` (searched in the cell's display text; default: the whole text)
    is replaced by the marker of ``name``."""

    header: str
    pattern: str = r"(?s).+"
    name: str = "column"

    def header_matches(self, header: str) -> bool:
        return re.search(self.header, header, re.IGNORECASE) is not None


@dataclass(frozen=True)
class RedactionPolicy:
    """What is redacted: ``rules`` (names among :data:`BUILTIN_RULES`), ``columns`` (user
    rules by column header) and ``keep_raw_values`` (the value as written stays in
    ``parsed_cells``; otherwise it is redacted there too). The default policy redacts nothing.

    Raises:
        ValueError: an unknown rule name, or a user rule whose regular expression does not
            compile.
    """

    rules: tuple[str, ...] = ()
    columns: tuple[ColumnRule, ...] = field(default=())
    keep_raw_values: bool = False

    def __post_init__(self):
        unknown = sorted(set(self.rules) - set(BUILTIN_RULES))
        if unknown:
            raise ValueError(f"unknown redaction rule(s) {', '.join(unknown)}; built-in rules "
                             f"are {', '.join(BUILTIN_RULES)}")
        for rule in self.columns:
            for text in (rule.header, rule.pattern):
                try:
                    re.compile(text)
                except re.error as exc:
                    raise ValueError(f"redaction rule {rule.name!r}: bad regular expression "
                                     f"{text!r}: {exc}") from None
            if not re.fullmatch(r"[\w.-]+", rule.name):
                raise ValueError(f"redaction rule name {rule.name!r}: use letters, digits, "
                                 "'_', '.' or '-'")

    @property
    def active(self) -> bool:
        """Whether the policy redacts anything at all."""
        return bool(self.rules or self.columns)

    @property
    def value_rules(self) -> tuple[str, ...]:
        """The built-in rules in the order they run (card, iban, email, phone)."""
        return tuple(r for r in BUILTIN_RULES if r in self.rules)


def redact_text(text: str, rules: tuple[str, ...]) -> tuple[str, Counter]:
    """``text`` with every validated match of the built-in ``rules`` replaced by its marker,
    and how many matches each rule replaced."""
    counts: Counter = Counter()
    for name in BUILTIN_RULES:
        if name not in rules:
            continue
        validate = _VALIDATE[name]

        def replace(match: re.Match, name=name, validate=validate) -> str:
            if not validate(match.group()):
                return match.group()
            counts[name] += 1
            return MARKER.format(name)
        text = _PATTERN[name].sub(replace, text)
    return text, counts


def redact_with(text: str, rule: ColumnRule) -> str:
    """``text`` with every match of a user rule's pattern replaced by its marker."""
    return re.sub(rule.pattern, MARKER.format(rule.name), text)


def candidates(texts: pa.Array, rules: tuple[str, ...]) -> np.ndarray:
    """Positions of the texts that a built-in rule may match (RE2 pre-filter, column-wise)."""
    if not rules or not len(texts):
        return np.zeros(0, np.int64)
    hit = None
    for name in rules:
        found = pc.fill_null(pc.match_substring_regex(texts, _PREFILTER[name]), False)
        hit = found if hit is None else pc.or_(hit, found)
    return np.flatnonzero(hit.to_numpy(zero_copy_only=False))


def redact_array(texts: pa.Array, rules: tuple[str, ...]) -> tuple[pa.Array, np.ndarray]:
    """A string array with the built-in ``rules`` applied to each text, and the positions of
    the texts that changed (ascending)."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    positions = candidates(texts, rules)
    if not len(positions):
        return texts, positions
    old = texts.take(pa.array(positions)).to_pylist()
    new = [redact_text(t, rules)[0] for t in old]
    changed = np.array([a != b for a, b in zip(old, new)], bool)
    if not changed.any():
        return texts, np.zeros(0, np.int64)
    positions = positions[changed]
    mask = np.zeros(len(texts), bool)
    mask[positions] = True
    values = pa.array([t for t, c in zip(new, changed) if c], pa.string())
    return pc.replace_with_mask(texts, pa.array(mask), values), positions


def marker_counts(text: str) -> Counter:
    """How many markers of each rule ``text`` holds."""
    return Counter(MARKER_RE.findall(text))
