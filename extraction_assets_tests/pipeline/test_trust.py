"""The trust features through the stages (:func:`run_pipeline`, no Dagster): redaction in
every table, colour tags in records and chunks, the dual read, the header detector seam
against a local OpenAI-compatible server."""

from __future__ import annotations

import io
import json

import pyarrow.compute as pc
import pytest
from openpyxl import Workbook, load_workbook

from extraction_assets.core.open import open_workbook
from extraction_assets.core.render.escape import without_escapes
from extraction_assets.core.trust.llm_headers import OpenAIHeaderDetector
from extraction_assets.core.trust.redact import ColumnRule, RedactionPolicy
from extraction_assets.pipeline import run_pipeline
from extraction_assets_tests.chat_server import chat_server
from extraction_assets_tests.trust_workbooks import (
    GREEN,
    RED,
    customers_workbook,
    legend_workbook,
    solid_fill,
    with_duplicate_cell,
)


def words(text: str) -> int:
    return len(text.split())


def all_text(tables, *names) -> str:
    """The tables as JSON, the Markdown escapes of the chunks left out, so that a value is
    found as its cells hold it."""
    return without_escapes(json.dumps({n: tables[n].to_pylist() for n in names},
                                      ensure_ascii=False, default=str))


SECRETS = ["ada@example.com", "alan.turing@example.org", "4111 1111 1111 1111",
           "5500-0000-0000-0004"]


def test_default_policy_changes_nothing():
    data = customers_workbook()
    plain = run_pipeline(data, count_tokens=words)
    again = run_pipeline(data, count_tokens=words, redaction=RedactionPolicy())
    assert plain["chunks"].equals(again["chunks"])
    assert all(s in all_text(plain, "chunks") for s in SECRETS)


def test_redaction_reaches_every_table_and_counts_per_block():
    policy = RedactionPolicy(("email", "card"), (ColumnRule("tax id", r"\d+", "tax_id"),))
    tables = run_pipeline(customers_workbook(), count_tokens=words, redaction=policy)
    text = all_text(tables, "parsed_cells", "cells", "records", "record_units", "renderings",
                    "chunks", "extraction_issues")
    assert not any(s in text for s in SECRETS)
    assert "4111111111111112" in text  # fails Luhn: not a card number
    assert "+44 20 7946 0958" in text  # phone numbers were not asked for
    records = [json.loads(r) for r in tables["records"].column("record").to_pylist()]
    assert [r["Tax ID"] for r in records] == ["TX-⟦redacted:tax_id⟧"] * 3
    assert records[0]["Card"] == "⟦redacted:card⟧"
    issues = tables["extraction_issues"].filter(
        pc.equal(tables["extraction_issues"].column("code"), "redacted_values")).to_pylist()
    assert [(i["ref"], i["message"]) for i in issues] == [
        ("A1:F4", "8 cells redacted in this table block (card: 2, email: 3, tax_id: 3)")]


def test_keep_raw_values_keeps_them_in_parsed_cells_only():
    policy = RedactionPolicy(("email",), keep_raw_values=True)
    tables = run_pipeline(customers_workbook(), count_tokens=words, redaction=policy)
    assert "ada@example.com" in all_text(tables, "parsed_cells")
    assert "ada@example.com" not in all_text(tables, "cells", "records", "record_units",
                                             "renderings", "chunks")


def test_active_tags_mark_exactly_the_coloured_cells():
    tags = {RED: "status: overdue", GREEN: "status: paid"}
    tables = run_pipeline(legend_workbook(), count_tokens=words, colour_tags=tags)
    shown = {r["row"]: json.loads(r["display"])["Invoice"] for r in tables["records"].to_pylist()
             if r["sheet_name"] == "Invoices" and r["row"] <= 6}
    assert shown == {2: "INV-1001 ⟦status: overdue⟧", 3: "INV-1002 ⟦status: paid⟧",
                     4: "INV-1003 ⟦status: paid⟧", 5: "INV-1004 ⟦status: overdue⟧",
                     6: "INV-1005"}
    record = json.loads(tables["records"].column("record")[0].as_py())
    assert record["Invoice"] == "INV-1001"  # typed values stay as they are
    chunk = "\n".join(tables["chunks"].column("text").to_pylist())
    assert chunk.count("⟦status: overdue⟧") == 2 and chunk.count("⟦status: paid⟧") == 2
    untagged = run_pipeline(legend_workbook(), count_tokens=words)
    assert "⟦" not in all_text(untagged, "records", "chunks")


def test_tagged_headers_and_titles_are_no_lost_values():
    """A header cell and a title cell of a confirmed colour show their tag in the cells the
    records are built from; the no-value-lost check still finds their text (it was reported
    as ``value_not_in_output`` errors, one per tagged header cell)."""
    wb = load_workbook(io.BytesIO(legend_workbook()))
    ws = wb.active
    ws.insert_rows(1, 2)
    ws["A1"] = "Open invoices 2024"
    for ref in ("A1", "A3", "B3"):
        ws[ref].fill = solid_fill(RED)
    out = io.BytesIO()
    wb.save(out)
    tables = run_pipeline(out.getvalue(), count_tokens=words,
                          colour_tags={RED: "status: overdue", GREEN: "status: paid"})
    errors = [i for i in tables["extraction_issues"].to_pylist() if i["severity"] == "error"]
    assert errors == []
    records = [json.loads(r["display"]) for r in tables["records"].to_pylist()]
    assert records[0]["Invoice"] == "INV-1001 ⟦status: overdue⟧"  # the data are tagged


def test_dual_read_lands_a_conflict():
    data = _duplicate_amount()
    tables = run_pipeline(data, until="parsed_sheets", dual_read_max_cells=1000)
    items = tables["review_items"].to_pylist()
    assert [(i["ref"], i["reason"], i["priority"], i["first_value"], i["second_value"])
            for i in items] == [("C2", "conflict", 1, "1200", "1250")]
    assert run_pipeline(data, until="parsed_sheets")["review_items"].num_rows == 0  # off


def _duplicate_amount() -> bytes:
    return with_duplicate_cell(legend_workbook(), "xl/worksheets/sheet1.xml", "C2", "1200",
                               "1250")


def test_dual_read_skips_large_workbooks_with_an_issue():
    tables = run_pipeline(_duplicate_amount(), until="parsed_sheets", dual_read_max_cells=5)
    assert tables["review_items"].num_rows == 0
    assert "dual_read_skipped" in tables["extraction_issues"].column("code").to_pylist()


def test_the_review_items_are_redacted_too():
    data = with_duplicate_cell(legend_workbook(), "xl/worksheets/sheet1.xml", "C2", "1200",
                               "4111111111111111")
    tables = run_pipeline(data, until="parsed_sheets", dual_read_max_cells=1000,
                          redaction=RedactionPolicy(("card",)))
    (item,) = tables["review_items"].to_pylist()
    assert (item["first_value"], item["second_value"]) == ("1200", "⟦redacted:card⟧")


def test_date1904_is_not_reset_by_an_extension_element(corpus_dir):
    path = corpus_dir / "files" / "sheetjs" / "1904_1904.xlsx"
    if not path.exists():
        pytest.skip("1904_1904.xlsx not in the corpus")
    data = path.read_bytes()
    wb = open_workbook(data)
    assert wb.date1904
    wb.close()
    assert run_pipeline(data, until="parsed_sheets",
                        dual_read_max_cells=1000)["review_items"].num_rows == 0


def _team_workbook() -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "Team"
    for row in [["Name", "Role", "Team"], ["(full name)", "(job title)", "(squad)"],
                ["Ada", "Engineer", "Core"], ["Alan", "Analyst", "Data"],
                ["Grace", "Admiral", "Navy"], ["Edsger", "Professor", "Algo"],
                ["Barbara", "Engineer", "Lang"], ["Ken", "Engineer", "Unix"]]:
        ws.append(row)
    ws2 = wb.create_sheet("Sales")
    for row in [["Region", "Units"], ["North", 10], ["South", 12]]:
        ws2.append(row)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def test_llm_header_seam_against_a_local_server():
    with chat_server(lambda rows: 2) as server:
        detector = OpenAIHeaderDetector("test-model", server.url, api_key_env="")
        tables = run_pipeline(_team_workbook(), until="segmented_blocks",
                              header_detector=detector)
    assert server.sent_rows() == [[["Name", "Role", "Team"], ["(full name)", "(job title)",
                                                              "(squad)"],
                                    ["Ada", "Engineer", "Core"], ["Alan", "Analyst", "Data"],
                                    ["Grace", "Admiral", "Navy"],
                                    ["Edsger", "Professor", "Algo"]]]  # the first six rows
    assert server.requests[0]["model"] == "test-model"
    team, sales = tables["blocks"].to_pylist()
    assert team["header_row_count"] == 2
    assert team["reasons"][-1] == ("header detector openai-compatible/1:test-model: 2 header "
                                   "rows (the rules found 1), from the first 6 rows")
    assert not any("header detector" in r for r in sales["reasons"])  # not ambiguous
    headers = tables["block_columns"].filter(pc.equal(tables["block_columns"].column("block_id"),
                                                      team["block_id"])).column("header")
    assert headers.to_pylist() == ["Name > (full name)", "Role > (job title)", "Team > (squad)"]
    rules = run_pipeline(_team_workbook(), until="segmented_blocks")["blocks"].to_pylist()
    assert rules[0]["header_row_count"] == 1


def test_a_failing_detector_keeps_the_rules_and_says_so():
    detector = OpenAIHeaderDetector("m", "http://127.0.0.1:9/v1", api_key_env="",
                                    timeout_seconds=2, max_retries=0)
    tables = run_pipeline(_team_workbook(), until="segmented_blocks", header_detector=detector)
    assert tables["blocks"].column("header_row_count").to_pylist()[0] == 1
    issues = tables["extraction_issues"].to_pylist()
    assert [i["code"] for i in issues] == ["header_detector_failed"]
    assert "openai-compatible/1:m failed" in issues[0]["message"]


def _docx(paragraphs: list[tuple[str, int | None]]) -> bytes:
    """A Word document of (text, heading level or None for a paragraph)."""
    import docx

    d = docx.Document()
    for text, level in paragraphs:
        if level is None:
            d.add_paragraph(text)
        else:
            d.add_heading(text, level)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def test_redaction_reaches_the_text_of_documents():
    data = _docx([("Vendor contract", 0), ("Contact: ada@example.com for questions.", None),
                  ("Pricing", 1), ("Write to bob@example.com.", None)])
    tables = run_pipeline(data, filename="c.docx", count_tokens=words,
                          redaction=RedactionPolicy(("email",)))
    text = all_text(tables, "blocks", "records", "renderings", "chunks", "extraction_issues")
    assert "@example.com" not in text and text.count("⟦redacted:email⟧") >= 2
    codes = tables["extraction_issues"].column("code").to_pylist()
    assert codes.count("redacted_values") == 2 and "value_not_in_output" not in codes


def test_a_document_title_alone_on_its_section_is_in_a_chunk():
    data = _docx([("Vendor Contract Summary", 0), ("Pricing", 1), ("Fixed for two years.", None)])
    tables = run_pipeline(data, filename="c.docx", count_tokens=words)
    chunks = tables["chunks"].column("text").to_pylist()
    assert any("Vendor Contract Summary" in chunk for chunk in chunks)
    assert any("Fixed for two years." in chunk for chunk in chunks)
