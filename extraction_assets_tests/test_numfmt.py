"""Cell text through number formats, as Excel (en-US) shows it: extraction_assets.core.numfmt.

The expected strings are the ones users checked in Excel (acceptance cases B11, B12, B14 of
``../shared/cases/EXPECTED.md``) plus Excel's General rule, half-up display rounding and the
1900 / 1904 date systems.
"""

from __future__ import annotations

import datetime as dt

import pytest

from extraction_assets.core.numfmt import (
    format_general,
    format_text,
    format_value,
    is_date_format,
    serial_to_datetime,
)


# -- B11: number formats ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        pytest.param(0.653035934239184, "0%", "65%", id="cap-rate"),
        pytest.param(56701.0309278351, '"$"#,##0.00', "$56,701.03", id="loan-amount"),
        pytest.param(56701.0309278351, "[$$-409]#,##0.00", "$56,701.03", id="loan-amount-locale"),
        pytest.param(1234567, "#,##0", "1,234,567", id="units"),
        pytest.param(0.0575, "0.00%", "5.75%", id="fixed-rate"),
        pytest.param(-1234.5, "#,##0.00;(#,##0.00)", "(1,234.50)", id="variance"),
        pytest.param(1234.5, '#,##0.00 "EUR"', "1,234.50 EUR", id="fee"),
        pytest.param(0.3333333, "0.0", "0.3", id="ratio"),
        pytest.param(123456789, "0.00E+00", "1.23E+08", id="population"),
    ],
)
def test_b11_number_formats(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (1234.5, "#,##0.00_);(#,##0.00)", "1,234.50"),  # _) pads, trailing space stripped
        (-1234.5, '"$"#,##0.00', "-$1,234.50"),  # one section: the sign goes in front
        (0, '_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)', "-"),  # accounting zero
        (0, '0;-0;"zero"', "zero"),
        (-3, '0;-0;"zero"', "-3"),
        (5, '[<10]"small";"big"', "small"),
        (50, '[<10]"small";"big"', "big"),
        (1234567, "#,##0,", "1,235"),  # trailing comma scales by 1,000
        (1234567, '#,##0.0,,"M"', "1.2M"),
        (1234.5, "#,##0.00 [$€-407]", "1,234.50 €"),
        (0.00012, "0.00E+00", "1.20E-04"),
        (999.5, "#,##0", "1,000"),
    ],
)
def test_sections_literals_and_scaling(value, code, text):
    assert format_value(value, code) == text


# -- B12: dates and times ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("serial", "code", "text"),
    [
        (45365, "yyyy-mm-dd", "2024-03-14"),
        (45366, "d-mmm-yyyy", "15-Mar-2024"),
        (45369, "m/d/yyyy", "3/18/2024"),  # built-in format 14, en-US
        (45365.3958333333, "yyyy-mm-dd hh:mm", "2024-03-14 09:30"),
        (45366.7118055556, "yyyy-mm-dd hh:mm", "2024-03-15 17:05"),
        (45369.3333333333, "yyyy-mm-dd hh:mm", "2024-03-18 08:00"),
        (0.0104166666666667, "hh:mm:ss", "00:15:00"),
        (0.0625, "hh:mm:ss", "01:30:00"),
        (0.000520833333333333, "hh:mm:ss", "00:00:45"),
        (0.5, "h:mm AM/PM", "12:00 PM"),
        (1.5, "[h]:mm:ss", "36:00:00"),
        (45365.5, "dddd, mmmm d, yyyy", "Thursday, March 14, 2024"),
        (45365, "[$-409]mmmm d, yyyy", "March 14, 2024"),
    ],
)
def test_b12_dates_and_times(serial, code, text):
    assert is_date_format(code)
    assert format_value(serial, code) == text


@pytest.mark.parametrize("serial", [45365, 45366, 45369])
def test_b12_general_serial_is_not_a_date(serial):
    assert not is_date_format("General")
    assert format_value(serial, "General") == str(serial)


@pytest.mark.parametrize(
    ("code", "is_date"),
    [
        ("yyyy-mm-dd", True), ("mm:ss", True), ("[h]:mm", True), ("dd/mm/yyyy;@", True),
        ("[$-F800]dddd, mmmm dd, yyyy", True),
        ("General", False), ("0.00", False), ("@", False), ("0.00E+00", False),
        ('0.00"h"', False), ('#,##0 "days"', False), ("[Red]0", False), ("[Blue]General", False),
        ('#,##0;-#,##0;"-"', False), ("[$EUR ]#,##0", False),
    ],
)
def test_is_date_format(code, is_date):
    assert is_date_format(code) is is_date


# -- B14: leading zeros -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "code", "text"),
    [(123, "0000000", "0000123"), (12, "0000000", "0000012"), (1, "0000000", "0000001"),
     (2035, "00000", "02035"), (6791, "00000", "06791"), (501, "00000", "00501")],
)
def test_b14_leading_zeros(value, code, text):
    assert format_value(value, code) == text


def test_b14_text_codes_stay_unchanged():
    for text in ("00789", "01234", "00001"):
        assert format_text(text, "@") == text
        assert format_text(text, "General") == text
    assert format_text("42", '"ID-"@') == "ID-42"


# -- General ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (1 / 3, "0.333333333"),
        (-1 / 3, "-0.333333333"),
        (123456789012, "1.23457E+11"),
        (-123456789012, "-1.23457E+11"),
        (99999999999, "99999999999"),
        (1e11, "1E+11"),
        (12345678901.5, "12345678902"),
        (0.1 + 0.2, "0.3"),
        (0.000123456789, "0.000123457"),
        (1e-10, "1E-10"),
        (0, "0"),
    ],
)
def test_general_rule(value, text):
    assert format_general(value) == text
    assert format_value(value, "General") == text


# -- rounding ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (2.5, "0", "3"), (3.5, "0", "4"), (-2.5, "0", "-3"),
        (0.125, "0.00", "0.13"), (1.005, "0.00", "1.01"), (2.675, "0.00", "2.68"),
        (0.005, "0%", "1%"),
    ],
)
def test_display_rounding_is_half_up(value, code, text):
    assert format_value(value, code) == text


# -- date systems -----------------------------------------------------------------------------
def test_1900_system_and_leap_year_bug():
    assert serial_to_datetime(1) == dt.datetime(1900, 1, 1)
    assert serial_to_datetime(59) == dt.datetime(1900, 2, 28)
    # serial 60 is Excel's fictitious 1900-02-29, shown as 1900-03-01 (documented choice)
    assert serial_to_datetime(60) == dt.datetime(1900, 3, 1)
    assert serial_to_datetime(61) == dt.datetime(1900, 3, 1)
    assert serial_to_datetime(62) == dt.datetime(1900, 3, 2)
    assert format_value(59, "yyyy-mm-dd") == "1900-02-28"
    assert format_value(61, "yyyy-mm-dd") == "1900-03-01"
    assert serial_to_datetime(45365.3958333333) == dt.datetime(2024, 3, 14, 9, 30)


def test_1904_system():
    assert serial_to_datetime(0, date1904=True) == dt.datetime(1904, 1, 1)
    # 2024-03-15 is 45366 in the 1900 system and 45366 - 1462 in the 1904 system
    assert serial_to_datetime(43904, date1904=True) == dt.datetime(2024, 3, 15)
    assert format_value(43904, "yyyy-mm-dd", date1904=True) == "2024-03-15"
    assert format_value(43904, "yyyy-mm-dd") == "2020-03-14"


def test_out_of_range_dates():
    with pytest.raises(ValueError):
        serial_to_datetime(-1)
    with pytest.raises(ValueError):
        serial_to_datetime(3_000_000)
    assert format_value(-1, "yyyy-mm-dd") == "#######"
    assert format_value(3_000_000, "yyyy-mm-dd") == "#######"


# -- bugs -------------------------------------------------------------------------------------
def test_number_under_text_format_keeps_its_digits():
    # Excel shows 5; an empty display text makes the cell vanish from blocks and records
    assert format_value(5, "@") == "5"


def test_fractional_seconds_with_several_digits_are_times():
    value = 0.5 + 1.25 / 86400  # 12:00:01.25
    assert is_date_format("h:mm:ss.000")
    assert format_value(value, "h:mm:ss.000") == "12:00:01.250"


@pytest.mark.xfail(strict=True, reason="fraction formats (built-in 12 '# ?/?') are not rendered")
def test_fraction_format():
    assert format_value(1.25, "# ?/?") == "1 1/4"


def test_time_of_day_on_fictitious_leap_day_is_kept():
    assert serial_to_datetime(60.5) == dt.datetime(1900, 3, 1, 12, 0)
