"""Cell text through number formats, as Excel (en-US) shows it: extraction_assets.core.numfmt.

The expected strings are the ones users checked in Excel (acceptance cases B11, B12, B14 of
``../shared/cases/EXPECTED.md``) plus Excel's General rule, half-up display rounding and the
1900 / 1904 date systems. The cases per fault kind at the end come from Excel 2016's own CSV
export of SheetJS's ``number_format.xlsm`` and ``LONumbers.xlsx`` (the corpus oracle, see
``tools.display_check``) where the oracle has them; trailing padding spaces of the
export are stripped, as the formatter does.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction_assets.core.numfmt import (
    format_general,
    format_text,
    format_value,
    format_values,
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


def test_fraction_format():
    assert format_value(1.25, "# ?/?") == "1 1/4"


def test_time_of_day_on_fictitious_leap_day_is_kept():
    assert serial_to_datetime(60.5) == dt.datetime(1900, 3, 1, 12, 0)


# -- fault kinds (oracle: Excel 2016 CSV export of SheetJS number_format.xlsm / LONumbers.xlsx) --
V = 12345.6789  # the value used throughout SheetJS's number_format.xlsm


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (V, "# ?/?", "12345 2/3"),
        (V, "# ??/??", "12345 55/81"),
        (-V, "# ??/??", "-12345 55/81"),
        (12.3, "# ?/?", "12 1/3"),  # last convergent 1/3, not the closer 2/7
        (-1.2, "# ??/??", "-1  1/5"),  # numerator padded by ?, denominator too (stripped)
        (1234.567, "#\\ ???/???", "1234  55/97"),
        (-12345.67891, "#\\ ???/???", "-12345 573/844"),
        (1, "# ?/?", "1"),  # zero fraction: blanks
        (0, "# ?/?", "0"),
        (0.5, "# ?/?", "1/2"),
        (0.99, "# ?/?", "1"),  # rounds to 1: carried into the integer
        (1.25, "?/?", "5/4"),  # no integer part: improper fraction
        (12.3, "#\\ ?/2", "12 1/2"),
        (-1.2, "#\\ ?/2", "-1"),
        (123.45, "#\\ ?/4", "123 2/4"),  # fixed denominators are not reduced
        (-12.34, "#\\ ?/8", "-12 3/8"),
        (12.3, "#\\ ??/16", "12  5/16"),
        (-1.2, "#\\ ?/10", "-1 2/10"),
        (-123.456, "#\\ ??/100", "-123 46/100"),
    ],
)
def test_fractions(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (1, "00000\\-0000", "00000-0001"),  # digits spread over placeholders around literals
        (V, "00000\\-0000", "00001-2346"),
        (-V, "000\\-00\\-0000", "-000-01-2346"),
        (1, "#.##", "1."),
        (0.5, ".00", ".50"),
        (12.5, ".00", "12.50"),
        (1, "[GREEN]#,###", "1"),
        (1234.567, "[GREEN]#,###", "1,235"),
        (-1234.5678, "[MAGENTA]0.00", "-1234.57"),
        (5, "0;;", "5"),
        (0, "0;-0;", ""),  # empty section: nothing shown
        (-5, "0;", ""),
        (1234.5, "[$USD] #,##0", "USD 1,235"),
        (1234.5, "[$-409]#,##0.00", "1,234.50"),
        (45365, "[DBNum1][$-804]0", "45365"),  # unknown brackets are ignored
        (1234.5, '_("$"* #,##0.00_)', "$1,234.50"),
    ],
)
def test_placeholders_literals_and_brackets(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (150, "[>=100]0.0;0", "150.0"),
        (5, "[>=100]0.0;0", "5"),
        (1, "[<=9999999]###\\-####;\\(###\\)\\ ###\\-####", "-1"),
        (V, "[<=9999999]###\\-####;\\(###\\)\\ ###\\-####", "1-2346"),
        (-1.2, "[<=9999999]###\\-####;\\(###\\)\\ ###\\-####", "--1"),  # conditions keep the sign
        (-1e-8, '[<0]"";0%', ""),  # a literal-only section gets no sign
        (0.00046875, "[=0]?;[<4.16666666666667][hh]:mm:ss;[hh]:mm", "00:00:41"),
    ],
)
def test_conditions(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (V, "[h]:mm:ss", "296296:17:37"),
        (V, "mm:ss", "17:37"),
        (V, "mmss.0", "1737.0"),  # rounded to the tenth before splitting: 36.96 s -> 37.0
        (V, "mm:ss.0;@", "17:37.0"),
        (12.3, "[HH]", "295"),
        (-1.2, "[H]", "-28"),  # elapsed-only formats show negative durations
        (-1234.5678, "[SS]", "-106666658"),
        (1234.567, "[S]", "106666589"),
        (-1.2, "[h]:mm:ss;@", "#######"),
        (0.01, "[mm]:ss", "14:24"),
        (0.00046875, "[hh]:mm:ss", "00:00:41"),  # 40.5 s rounds half up
        (1, "HH[M]", "1"),  # an elapsed field after an hour is rejected by Excel: General
    ],
)
def test_elapsed_and_subseconds(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (V, "##0.0E+0", "12.3E+3"),  # engineering: exponent a multiple of 3
        (0.00012, "##0.0E+0", "120.0E-6"),
        (V, "0.00E+00", "1.23E+04"),
        (V, "0.00e+00", "1.23e+04"),
        (1, "0.0E+0", "1.0E+0"),
        (0, "0.00E+00", "0.00E+00"),
    ],
)
def test_scientific_and_engineering(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (V, "h:mm AM/PM", "4:17 PM"),
        (V, "h:mm:ss AM/PM", "4:17:37 PM"),
        (1234.567, "AM/PM", "PM"),
        (12.3, "A/P", "A"),
        (0.75, "h:mm a/p", "6:00 p"),  # A/P keeps the case written
        (0.75, "hh:mm:ss AM/PM", "06:00:00 PM"),
        (-12.34, "A/P", "#######"),
        (V, "YYMMM", "33Oct"),
        (V, "YYMMMMM", "33O"),
        (V, "HHM", "1617"),  # m after an hour is minutes
        (1, "YYM", "001"),  # m after a year is the month
        (45365, "e-mm-dd", "2024-03-14"),  # e is the year, not an exponent
        (45365, "bbbb/mm/dd", "2024/03/14"),
        (45365, "[DBNum1][$-804]yyyy-mm-dd", "2024-03-14"),
    ],
)
def test_am_pm_and_date_tokens(value, code, text):
    assert is_date_format(code)
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (1, "DDDD", "Sunday"),  # Excel's calendar: serial 1 (1900-01-01) is a Sunday
        (12.3, "DDD", "Thu"),
        (61, "ddd", "Thu"),  # 1900-03-01, a real Thursday
        (0, "d-mmm-yy", "0-Jan-00"),  # serial 0 is 1900-01-00
        (60, "yyyy-mm-dd", "1900-02-29"),  # Excel's fictitious leap day
        (1, "[$-F800]dddd\\,\\ mmmm\\ dd\\,\\ yyyy", "Sunday, January 1, 1900"),  # system long date
        (123.45, "[$-F800]dddd\\,\\ mmmm\\ dd\\,\\ yyyy", "Wednesday, May 2, 1900"),
        (0.5, "[$-F400]h:mm:ss\\ AM/PM", "12:00:00 PM"),  # en-US system time
        (-V, "h:mm", "#######"),
        (2_958_466, "yyyy", "#######"),
        (45366, "dddd", "Friday"),  # 2024-03-15
    ],
)
def test_excel_calendar_and_system_formats(value, code, text):
    assert format_value(value, code) == text


def test_1904_weekday():
    assert format_value(0, "dddd yyyy-mm-dd", date1904=True) == "Friday 1904-01-01"


@pytest.mark.parametrize(
    ("value", "code", "text"),
    [
        (V, "@", "12345.6789"),
        (V, "[BLACK]@", "12345.6789"),
        (-1.2, "[BLUE]GENERAL", "-1.2"),
        (5, '"Total: "General', "Total: 5"),
        (-5, '"Total: "General', "Total: -5"),
        (-5, "General;(General)", "(5)"),
        (V, "m/d/yyyy;@", "10/18/1933"),  # a trailing @ section is the text section only
        (-6.2115468608681113e-6, "General", "-6.21155E-06"),  # below 1E-4: scientific
        (0.00001, "General", "1E-05"),
        (0.0001, "General", "0.0001"),
    ],
)
def test_general_and_text_sections(value, code, text):
    assert format_value(value, code) == text


@pytest.mark.parametrize(
    ("text", "code", "shown"),
    [
        ("abc", '0;-0;0;"["@"]"', "[abc]"),
        ("abc", '0;-0;0;"text"', "text"),  # a fourth section without @ replaces the text
        (" x ", "_(@_)", " x "),  # padding goes, the cell's own spaces stay
        ("x", "0.00", "x"),
        ("Height", '_(* #,##0_);_(* \\(#,##0\\);_(* "-"??_);_(@_)', "Height"),
    ],
)
def test_text_sections(text, code, shown):
    assert format_text(text, code) == shown


@pytest.mark.parametrize(
    "code",
    ['"unterminated', "[Red", "0.00\\", "[", ";;;;;;", "0.0.0", "#,##0E+", "?/", "[h", "E+0",
     "yyyy-mm-dd hh:mm:ss.000000", "[<>abc]0", "[$-F800]", "General General", "\\"],
)
@pytest.mark.parametrize("value", [0, 1.5, -2.25, 1e20, -1e-20, 45365.5])
def test_broken_codes_never_raise(code, value):
    assert isinstance(format_value(value, code), str)
    assert isinstance(format_text("x", code), str)
    assert isinstance(is_date_format(code), bool)


PLAIN_CODES = ["0", "0.00", "#,##0", "#,##0.00", "0%", "0.00%", '"$"#,##0.00', "#,##0.000 \"kg\"",
               '[$€-407]#,##0.00', "#,##0.00;(#,##0.00)", '_("$"* #,##0.00_);_("$"* (#,##0.00)']


@pytest.mark.parametrize("code", PLAIN_CODES)
def test_plain_number_fast_path_equals_the_general_renderer(code, monkeypatch):
    import random

    from extraction_assets.core import numfmt
    from extraction_assets.core.numfmt import parse

    rng = random.Random(7)
    values = [0.0, 0.5, 2.5, -2.5, 1234.5, -0.004, 0.005, 1e15, 123456789.125] + [
        round(rng.uniform(-1e7, 1e7), rng.randint(0, 6)) for _ in range(300)]
    fast = [numfmt.format_value(v, code) for v in values]
    try:
        monkeypatch.setattr(parse, "number_layout", lambda sec: None)
        parse.parse_format.cache_clear()
        parse._parse_section.cache_clear()
        assert parse.parse_format(code)[0][0].plain_layout is None
        slow = [numfmt.format_value(v, code) for v in values]
    finally:
        monkeypatch.undo()
        parse.parse_format.cache_clear()
        parse._parse_section.cache_clear()
    assert fast == slow


# -- many values at once --------------------------------------------------------------------------
_PLAIN_AND_OTHER_CODES = [
    "0.00", "#,##0", '"$"#,##0.00', "0%", "0.0%", "#,##0.00;[Red]-#,##0.00", "0.00;(0.00)",
    '"USD "#,##0.000" net"', "#,##0.00_);(#,##0.00)", "0", "#,##0;-#,##0;\"-\"",
    "[>100]0.0;0.00", "0.000E+00", "yyyy-mm-dd", "# ?/?", "0.00 \"kg\"", "General",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e17, max_value=1e17),
    st.integers(-10**9, 10**9).map(lambda n: n / 100),  # two decimals, as prices are written
    st.integers(-10**6, 10**6).map(lambda n: n / 1000 + 0.0005)), min_size=1, max_size=40),
    st.sampled_from(_PLAIN_AND_OTHER_CODES))
def test_format_values_is_format_value_of_each(values, code):
    assert format_values(values, code) == [format_value(v, code) for v in values]


def test_format_values_rounds_half_up_like_format_value():
    # 2.675 is 2.67499999... in binary; Excel (and format_value) shows 2.68
    assert format_values([2.675, 1.005, 0.125, 12.25, -7.5], "0.00") == [
        "2.68", "1.01", "0.13", "12.25", "-7.50"]
