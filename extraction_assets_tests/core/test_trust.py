"""The trust features' pure parts: redaction rules, legends, the dual read's comparison and
the header detector seam."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pytest
from openpyxl import Workbook, load_workbook

from extraction_assets.core.trust.dual_read import compare_sheet
from extraction_assets.core.trust.headers import RulesHeaderDetector, uses_rules
from extraction_assets.core.trust.llm_headers import (
    HeaderDetectorError,
    OpenAIHeaderDetector,
    parse_answer,
)
from extraction_assets.core.trust.redact import (
    BUILTIN_RULES,
    ColumnRule,
    RedactionPolicy,
    card_number,
    iban_valid,
    luhn_valid,
    redact_array,
    redact_text,
)
from extraction_assets.pipeline import run_pipeline
from extraction_assets_tests.trust_workbooks import GREEN, RED, legend_workbook, solid_fill


@pytest.mark.parametrize("text, expected", [
    ("mail ada@example.com today", "mail ⟦redacted:email⟧ today"),
    ("4111 1111 1111 1111", "⟦redacted:card⟧"),
    ("5500-0000-0000-0004", "⟦redacted:card⟧"),
    ("378282246310005", "⟦redacted:card⟧"),  # American Express test number
    ("4111111111111112", "4111111111111112"),  # fails Luhn
    ("9111111111111113", "9111111111111113"),  # passes Luhn, no issuer starts with 9
    ("GB82 WEST 1234 5698 7654 32", "⟦redacted:iban⟧"),
    ("DE89370400440532013000", "⟦redacted:iban⟧"),
    ("DE89370400440532013001", "DE89370400440532013001"),  # mod-97 check fails
    ("call +44 20 7946 0958", "call ⟦redacted:phone⟧"),
    ("(555) 123-4567", "⟦redacted:phone⟧"),
    ("2024-01-15", "2024-01-15"), ("12/31/2024 10:30", "12/31/2024 10:30"),
    ("1 234 567.89", "1 234 567.89"), ("INV-1001", "INV-1001"), ("5551234567", "5551234567"),
])
def test_builtin_rules(text, expected):
    assert redact_text(text, BUILTIN_RULES)[0] == expected


def test_checksums():
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")
    assert card_number("4012 8888 8888 1881") and not card_number("1234 5678 9012 3456")
    assert iban_valid("FR14 2004 1010 0505 0001 3M02 606") and not iban_valid("FR14 2004")


def test_only_the_rules_asked_for_run():
    text = "ada@example.com 4111111111111111"
    assert redact_text(text, ("card",)) == ("ada@example.com ⟦redacted:card⟧", {"card": 1})


def test_redact_array_changes_only_matching_texts():
    texts = pa.array(["a@b.io", None, "plain", "x 4111-1111-1111-1111"])
    out, changed = redact_array(texts, ("email", "card"))
    assert out.to_pylist() == ["⟦redacted:email⟧", None, "plain", "x ⟦redacted:card⟧"]
    assert changed.tolist() == [0, 3]


def test_policy_refuses_unknown_rules_and_bad_regexes():
    with pytest.raises(ValueError, match="unknown redaction rule"):
        RedactionPolicy(("ssn",))
    with pytest.raises(ValueError, match="bad regular expression"):
        RedactionPolicy(columns=(ColumnRule("tax(", ".+"),))
    assert not RedactionPolicy().active and RedactionPolicy(("email",)).active


def test_legend_gives_entries_and_clusters_leave_out_conditional_formats():
    tables = run_pipeline(legend_workbook(), until="normalized_grids")
    legends = tables["colour_legends"].to_pylist()
    assert [(r["fill_rgb"], r["tag"], r["swatch_ref"], r["label_ref"], r["n_cells"],
             r["n_cf_cells"]) for r in legends] == [
        (RED, "status: overdue", "F3", "G3", 2, 1),  # D3 is red but in D2:D6's rule
        (GREEN, "status: paid", "F4", "G4", 2, 0)]


def test_one_filled_cell_beside_a_word_is_no_legend():
    wb = Workbook()
    ws = wb.active
    ws.append(["Item", "Qty"])
    ws.append(["bolt", 3])
    ws["D2"].fill = solid_fill(RED)
    ws["E2"] = "urgent"
    out = io.BytesIO()
    wb.save(out)
    assert run_pipeline(out.getvalue(), until="normalized_grids")["colour_legends"].num_rows == 0


def test_a_legend_in_hidden_columns_is_no_legend():
    """Labels nobody sees (their column hidden) propose no colour meaning."""
    wb = load_workbook(io.BytesIO(legend_workbook()))
    wb.active.column_dimensions["G"].hidden = True
    out = io.BytesIO()
    wb.save(out)
    assert run_pipeline(out.getvalue(), until="normalized_grids")["colour_legends"].num_rows == 0


def _cells(rows):
    return pa.table({"row": pa.array([r[0] for r in rows], pa.int32()),
                     "col": pa.array([r[1] for r in rows], pa.int32()),
                     "data_type": [r[2] for r in rows], "value": [r[3] for r in rows]})


def test_compare_sheet_reasons_and_agreements():
    ours = _cells([(1, 1, "s", "Item"), (1, 2, "n", "10"), (2, 1, "n", "45306"),
                   (2, 2, "e", "#DIV/0!"), (3, 1, "s", " padded "), (3, 2, "n", "-1.25"),
                   (4, 1, "n", "7"), (5, 3, "s", "beyond")])
    theirs = [["Item", 99.0], [dt.date(2024, 1, 15), ""], ["padded", dt.time(18, 0)],
              ["", ""], ["", "", ""], ["", "only theirs"]]
    items = compare_sheet("S", ours, theirs, date1904=False)
    assert [(i.ref, i.reason, i.priority, i.first_value, i.second_value) for i in items] == [
        ("B1", "conflict", 1, "10", "99"),
        ("A4", "first_read_only", 2, "7", None),
        ("C5", "first_read_only", 2, "beyond", None),
        ("B6", "second_read_only", 2, None, "only theirs")]


def test_compare_sheet_in_the_1904_date_system():
    ours = _cells([(1, 1, "n", "1")])
    assert compare_sheet("S", ours, [[dt.date(1904, 1, 2)]], date1904=True) == []
    assert compare_sheet("S", ours, [[dt.date(1904, 1, 2)]], date1904=False)[0].reason == \
        "conflict"


def test_an_iso_date_cell_agrees_with_its_serial_or_date():
    """A cell written as an ISO 8601 date (``t="d"``): calamine gives its serial or its date."""
    ours = _cells([(1, 1, "d", "2024-01-05T00:00:00"), (1, 2, "d", "2024-01-05T12:00:00")])
    assert compare_sheet("S", ours, [[45296, dt.datetime(2024, 1, 5, 12)]], False) == []
    (item,) = compare_sheet("S", ours, [[45297, dt.datetime(2024, 1, 5, 12)]], False)
    assert (item.ref, item.reason, item.first_value, item.second_value) == (
        "A1", "conflict", "45296", "45297")
    assert compare_sheet("S", _cells([(1, 1, "d", "1904-01-02")]), [[1]], True) == []


def test_parse_answer():
    assert parse_answer('{"header_rows": 2}') == 2
    assert parse_answer("There are 3 header rows.") == 3
    assert parse_answer("none") is None


def test_rules_are_the_default_detector(monkeypatch):
    assert uses_rules(None) and uses_rules(RulesHeaderDetector())
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(HeaderDetectorError, match="NO_SUCH_KEY_VAR"):
        OpenAIHeaderDetector("m", api_key_env="NO_SUCH_KEY_VAR")
    detector = OpenAIHeaderDetector("gpt-test", "http://127.0.0.1:9/v1", api_key_env="")
    assert not uses_rules(detector) and detector.version == "openai-compatible/1:gpt-test"
