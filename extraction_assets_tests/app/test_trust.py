"""The trust features end to end: real ingests through the Dagster asset graph, the DuckDB
views, LanceDB and the ``colours`` / ``review`` commands (the issue's "done when")."""

from __future__ import annotations

import json

import duckdb
import lancedb
import pytest
from typer.testing import CliRunner

from extraction_assets.app.cli import app
from extraction_assets.app.ingest import ingest_paths
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.chat_server import chat_server
from extraction_assets_tests.pipeline.test_trust import SECRETS, _team_workbook
from extraction_assets_tests.trust_workbooks import (
    customers_workbook,
    legend_workbook,
    with_duplicate_cell,
)

pytestmark = pytest.mark.integration  # the workbooks ingested through the asset graph

runner = CliRunner()


def sql(root, query: str, *args) -> list[tuple]:
    with duckdb.connect(str(DataStore(root).warehouse_path), read_only=True) as con:
        return con.execute(query, list(args)).fetchall()


def cli(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    base = tmp_path_factory.mktemp("trust")
    files = base / "files"
    files.mkdir()
    (files / "invoices.xlsx").write_bytes(legend_workbook())
    (files / "customers.xlsx").write_bytes(customers_workbook())
    (files / "ledger.xlsx").write_bytes(with_duplicate_cell(
        legend_workbook(), "xl/worksheets/sheet1.xml", "C2", "1200", "1250"))
    (files / "team.xlsx").write_bytes(_team_workbook())
    root = base / "data"
    root.mkdir()
    with chat_server(lambda rows: 2) as server:
        (root / "trust.toml").write_text(
            '[redaction]\nrules = ["email", "card"]\n\n'
            f'[header_detector]\nprovider = "openai"\nmodel = "test-model"\n'
            f'base_url = "{server.url}"\napi_key_env = ""\n')
        results = ingest_paths(sorted(files.glob("*.xlsx")), root)
    assert [r.status for r in results] == ["success"] * 4, [r.error for r in results]
    return root, files, server


def test_legend_drafts_tag_nothing_until_confirmed(ingested):
    root, files, _ = ingested
    invoices = str((files / "invoices.xlsx").resolve())
    drafts = sql(root, "SELECT fill_rgb, tag, status, actor, mapping_id FROM colour_mappings "
                       "WHERE scope = ? ORDER BY fill_rgb", invoices)
    assert [d[:4] for d in drafts] == [("00B050", "status: paid", "draft", "extraction-assets"),
                                       ("FF0000", "status: overdue", "draft",
                                        "extraction-assets")]
    assert sql(root, "SELECT count(*) FROM cell_tags") == [(0,)]
    assert "⟦status" not in json.dumps(sql(root, "SELECT display FROM records"))
    unconfirmed = sql(root, "SELECT ref FROM extraction_issues WHERE code = "
                            "'colour_mapping_unconfirmed' ORDER BY ref")
    assert unconfirmed == [("F3",), ("F3",), ("F4",), ("F4",)]  # invoices and ledger
    listed = cli("colours", "list", "--data-dir", str(root))
    assert "draft" in listed and drafts[0][4] in listed

    for *_, mapping_id in drafts:
        out = cli("colours", "confirm", mapping_id[:8], "--data-dir", str(root),
                  "--actor", "alice", "--note", "legend checked")
        assert f"confirmed {mapping_id}" in out
    (result,) = ingest_paths([files / "invoices.xlsx"], root, force=True)
    assert result.status == "success"
    tags = sql(root, "SELECT c.sheet_name, c.ref, c.tag, c.mapping_version FROM cell_tags c "
                     "JOIN workbooks w USING (workbook_hash) WHERE w.filename = 'invoices.xlsx' "
                     "ORDER BY c.row, c.col")
    # exactly the red and green cells; D3 is red but inside a conditional-format range
    assert tags == [("Invoices", "A2", "status: overdue", 1), ("Invoices", "A3", "status: paid", 1),
                    ("Invoices", "A4", "status: paid", 1), ("Invoices", "A5", "status: overdue", 1)]
    shown = sql(root, "SELECT r.row, r.display FROM records r JOIN workbooks w "
                      "USING (workbook_hash) WHERE w.filename = 'invoices.xlsx' AND r.row <= 6 "
                      "ORDER BY r.row")
    assert [json.loads(d)["Invoice"] for _, d in shown] == [
        "INV-1001 ⟦status: overdue⟧", "INV-1002 ⟦status: paid⟧", "INV-1003 ⟦status: paid⟧",
        "INV-1004 ⟦status: overdue⟧", "INV-1005"]
    (chunk,) = sql(root, "SELECT c.text FROM chunks c JOIN workbooks w USING (workbook_hash) "
                         "WHERE w.filename = 'invoices.xlsx'")
    assert "| INV-1004 ⟦status: overdue⟧ | Umbrella |" in chunk[0]
    units = lancedb.connect(str(DataStore(root).lancedb_uri)).open_table("units").to_arrow()
    assert any("INV-1001 ⟦status: overdue⟧" in t for t in units.column("text").to_pylist())


def test_redaction_reaches_chunks_and_lancedb(ingested):
    root, _, _ = ingested
    chunks = json.dumps(sql(root, "SELECT text FROM chunks"), ensure_ascii=False)
    units = lancedb.connect(str(DataStore(root).lancedb_uri)).open_table("units").to_arrow()
    texts = json.dumps(units.column("text").to_pylist(), ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in chunks and secret not in texts
    assert "⟦redacted:email⟧" in texts and "⟦redacted:card⟧" in texts
    assert sql(root, "SELECT i.sheet_name, i.ref, i.message FROM extraction_issues i JOIN "
                     "workbooks w USING (workbook_hash) WHERE i.code = 'redacted_values'") == [
        ("Customers", "A1:F4", "5 cells redacted in this table block (card: 2, email: 3)")]
    assert sql(root, "SELECT count(*) FROM cells WHERE display_text LIKE '%ada@example.com%' "
                     "OR raw_value LIKE '%ada@example.com%'") == [(0,)]


def test_conflicting_reads_land_in_the_review_queue(ingested):
    root, _, _ = ingested
    queue = sql(root, "SELECT status, priority, reason, filename, sheet_name, ref, first_value, "
                      "second_value, item_id FROM review_queue")
    assert [q[:8] for q in queue] == [("open", 1, "conflict", "ledger.xlsx", "Invoices", "C2",
                                       "1200", "1250")]
    item = queue[0][8]
    assert item in cli("review", "list", "--data-dir", str(root))
    out = cli("review", "resolve", item[:8], "--decision", "first", "--data-dir", str(root),
              "--actor", "carol", "--note", "the first copy is the ledger's")
    assert f"resolved {item}" in out and "first = '1200'" in out
    assert sql(root, "SELECT status, decision, resolved_value, actor FROM review_queue") == [
        ("resolved", "first", "1200", "carol")]
    assert "nothing to review" in cli("review", "list", "--data-dir", str(root))
    # the source is untouched
    assert sql(root, "SELECT first_value, second_value FROM review_items") == [("1200", "1250")]


def test_llm_header_seam_version_in_provenance(ingested):
    root, _, server = ingested
    reasons = sql(root, "SELECT b.header_row_count, b.reasons FROM blocks b JOIN workbooks w "
                        "USING (workbook_hash) WHERE w.filename = 'team.xlsx' AND b.kind = "
                        "'table' ORDER BY b.sheet_name DESC")
    assert reasons[0][0] == 2
    assert reasons[0][1][-1].startswith("header detector openai-compatible/1:test-model: 2 "
                                        "header rows")
    assert all(len(rows) <= 6 for rows in server.sent_rows())
