"""The README's audit questions: every query is taken from README.md and run against a real
ingest, and returns the values the README shows."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from openpyxl import Workbook

from extraction_assets.app.ingest import ingest_paths
from extraction_assets.app.samples import build_ledger, workbook_bytes, write_samples
from extraction_assets.store.storage import DataStore

REPO = Path(__file__).resolve().parents[2]


def readme_queries() -> dict[str, str]:
    """SQL blocks of README.md and docs/audit.md preceded by an ``<!-- audit:NAME -->``
    marker (the queries a user copies)."""
    text = "\n".join((REPO / name).read_text(encoding="utf-8")
                     for name in ("README.md", "docs/audit.md") if (REPO / name).exists())
    return dict(re.findall(r"<!-- audit:(\w+) -->\s*```sql\n(.*?)```", text, re.S))


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    base = tmp_path_factory.mktemp("audit")
    files = base / "files"
    samples = write_samples(files)
    notes = files / "notes.xlsx"
    notes.write_text("meeting notes, not a workbook\n")
    hidden = files / "hidden.xlsx"
    wb = Workbook()
    ws = wb.active
    ws.title = "Visible"
    ws.append(["Item", "Qty"])
    ws.append(["secret", 1])
    ws.append(["bolt", 2])
    ws.row_dimensions[2].hidden = True
    archive = wb.create_sheet("Archive")
    archive.append(["old", "data"])
    archive.sheet_state = "hidden"
    wb.save(hidden)
    root = base / "data"
    first = ingest_paths([*samples, notes, hidden], root)
    ledger = files / "ledger.xlsx"
    v2 = build_ledger()
    v2["Ledger"]["D2"] = 4900  # one changed amount: a new version of the same file
    ledger.write_bytes(workbook_bytes(v2))
    second = ingest_paths([ledger], root)
    return root, first, second


def _run(root, name: str) -> list[tuple]:
    with duckdb.connect(str(DataStore(root).warehouse_path), read_only=True) as con:
        return con.execute(readme_queries()[name]).fetchall()


def test_readme_has_every_audit_question():
    assert set(readme_queries()) == {"chunk_source", "record_search_text", "merged_cells",
                                     "uncached_formulas", "formula_dependents",
                                     "version_changes", "failures",
                                     "hidden_content", "lineage"}


@pytest.mark.integration
def test_record_search_text(audited):
    root, _, _ = audited
    (a1_range, text, debit_cell, chunk_ranges), = _run(root, "record_search_text")
    assert (a1_range, debit_cell) == ("A2:E2", "D2")
    assert text == ("Ledger — Date: 2024-01-03; Account: 1200; Description: Invoice INV-1001 "
                    "Harbor Cafe; Debit: $4,900.00")
    assert chunk_ranges == ["A2:E14"]


@pytest.mark.integration
def test_chunk_source(audited):
    root, _, _ = audited
    (filename, source_path, sheet, ranges, rows, heading), = _run(root, "chunk_source")
    assert (filename, sheet, ranges, rows) == ("quarterly_report.xlsx", "Report", ["A13:D17"],
                                               [13, 14, 15, 16, 17])
    assert source_path.endswith("files/quarterly_report.xlsx")
    assert heading[0] == "Report" and heading[-1] == "Top products"


@pytest.mark.integration
def test_merged_cells(audited):
    root, _, _ = audited
    rows = _run(root, "merged_cells")
    assert rows[0] == ("quarterly_report.xlsx", "Report", "B1", "A1", "A1:E1",
                       "Quarterly Sales Report 2024")
    assert {(r[2], r[3], r[4], r[5]) for r in rows} >= {
        ("E1", "A1", "A1:E1", "Quarterly Sales Report 2024"), ("C3", "B3", "B3:C3", "2023"),
        ("E3", "D3", "D3:E3", "2024"), ("A4", "A3", "A3:A4", "Region")}


@pytest.mark.integration
def test_uncached_formulas(audited):
    root, _, _ = audited
    # openpyxl stores the totals without a cached value: computed, the formula kept
    # and version 2, whose D2 is 100 more, has a total 100 more
    assert _run(root, "uncached_formulas") == [
        (1, "Ledger", "D14", "SUM(D2:D13)", "computed", "$16,343.95"),
        (1, "Ledger", "E14", "SUM(E2:E13)", "computed", "$16,343.95"),
        (2, "Ledger", "D14", "SUM(D2:D13)", "computed", "$16,443.95"),
        (2, "Ledger", "E14", "SUM(E2:E13)", "computed", "$16,343.95"),
    ]


@pytest.mark.integration
def test_formula_dependents(audited):
    root, _, _ = audited
    assert _run(root, "formula_dependents") == [("ledger.xlsx", "Ledger", "D14", "SUM(D2:D13)")]


@pytest.mark.integration
def test_version_changes(audited):
    root, _, second = audited
    (version, workbook_hash, added, removed, kept), = _run(root, "version_changes")
    assert (version, workbook_hash) == (2, second[0].workbook_hash)
    assert (added, removed, kept) == (1, 1, 1)


@pytest.mark.integration
def test_failures(audited):
    root, _, _ = audited
    assert _run(root, "failures") == [
        ("notes.xlsx", "workbook", "not_a_spreadsheet",
         "the file is text, not a spreadsheet (no zip or OLE2 signature; text is read as CSV "
         "only with at least 3 rows of the same number of fields)")]


@pytest.mark.integration
def test_hidden_content(audited):
    root, _, _ = audited
    assert _run(root, "hidden_content") == [
        ("hidden.xlsx", "Archive", "hidden_sheet_skipped",
         "hidden sheet 'Archive' with 2 cells is not segmented"),
        ("hidden.xlsx", "Visible", "hidden_cells_skipped",
         "2 non-empty cells in hidden rows or columns are in no block"),
    ]


@pytest.mark.integration
def test_lineage_agrees_with_dagster(audited):
    root, first, second = audited
    rows = _run(root, "lineage")
    first_ledger = next(r for r in first if r.path.endswith("ledger.xlsx"))
    assert [r[0] for r in rows] == ["workbook", "parsed_sheets", "normalized_grids",
                                    "segmented_blocks", "rendered_chunks", "chunk_embeddings"]
    assert {r[2] for r in rows} == {first_ledger.run_id}
    assert all(r[3] for r in rows) and rows[0][4] == 1


@pytest.mark.integration
def test_search_skips_earlier_versions_of_a_file_unless_asked(audited):
    import json
    import subprocess
    import sys

    root, first, second = audited
    old = next(r.workbook_hash for r in first if r.path.endswith("ledger.xlsx"))
    new = second[0].workbook_hash
    assert DataStore(root).superseded_hashes() == {old}

    def hashes(*extra: str) -> set[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "extraction_assets.app.cli", "search", "ledger debit credit total",
             "--data-dir", str(root), "-k", "40", "--json", *extra],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return {hit["workbook_hash"] for hit in json.loads(proc.stdout)}

    assert new in hashes() and old not in hashes()
    assert {new, old} <= hashes("--all-versions")


@pytest.mark.integration
def test_a_hit_is_named_by_the_path_whose_latest_version_it_is(tmp_path):
    """The same bytes ingested as invoices.csv and copy.csv (``duplicate``), then invoices.csv
    changed: the old content is still copy.csv's latest version, so search finds it, but
    names it copy.csv; the new content is invoices.csv."""
    from extraction_assets.search.retrieval import Searcher

    files = tmp_path / "files"
    files.mkdir()
    rows = "invoice,customer,amount\nINV-2001,Acme,120.00\nINV-2002,Globex,{}\n" \
           "INV-2003,Initech,75.50\n"
    invoices, copy = files / "invoices.csv", files / "copy.csv"
    invoices.write_text(rows.format("220.00"))
    copy.write_text(rows.format("220.00"))
    root = tmp_path / "data"
    first = ingest_paths([invoices, copy], root)
    assert [r.status for r in first] == ["success", "duplicate"]
    assert first[1].error == f"same bytes as {invoices}"
    invoices.write_text(rows.format("333.00"))
    (second,) = ingest_paths([invoices], root)
    assert second.status == "success"
    assert DataStore(root).latest_paths() == {first[0].workbook_hash: [str(copy.resolve())],
                                              second.workbook_hash: [str(invoices.resolve())]}

    for all_versions in (False, True):
        hits = Searcher(root, None, all_versions).search("INV-2002 Globex", k=5, mode="text")
        named = sorted((hit["filename"], "333.00" in hit["text"]) for hit in hits)
        assert named == [("copy.csv", False), ("invoices.csv", True)], all_versions


def test_a_path_back_to_earlier_bytes_is_a_new_version(tmp_path):
    from extraction_assets.store.warehouse import refresh_views

    store = DataStore(tmp_path / "data")
    path = tmp_path / "v.xlsx"
    hashes = []
    for content in (b"first version", b"second version", b"first version", b"first version"):
        path.write_bytes(content)
        hashes.append(store.register_source(path)[0])
    first, second = hashes[0], hashes[1]
    assert store.superseded_hashes() == {second}
    warehouse = refresh_views(store)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT version, workbook_hash, previous_hash FROM workbook_versions "
                           "ORDER BY version").fetchall()
    assert rows == [(1, first, None), (2, second, first), (3, first, second)]


def test_views_are_rewritten_only_when_their_sql_changes(tmp_path):
    import datetime as dt

    from extraction_assets.store.warehouse import refresh_views

    store = DataStore(tmp_path / "data")

    def lineage(h):
        when = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        return [dict(workbook_hash=h, asset="workbook", run_id="r", code_version="1",
                     data_version="d", materialized_at=when, row_count=1)]

    def rows(warehouse):
        with duckdb.connect(str(warehouse), read_only=True) as con:
            return con.execute("SELECT count(*) FROM lineage").fetchone()[0]

    warehouse = refresh_views(store)
    first = warehouse.stat().st_mtime_ns
    assert refresh_views(store).stat().st_mtime_ns == first and rows(warehouse) == 0
    # the table's first file turns its empty placeholder into a read of the glob: rewritten
    store.write_table("lineage", "a" * 64, lineage("a" * 64))
    refresh_views(store)
    second = warehouse.stat().st_mtime_ns
    assert second != first and rows(warehouse) == 1
    # a second partition is read through the same glob: the file is left alone
    store.write_table("lineage", "b" * 64, lineage("b" * 64))
    assert refresh_views(store).stat().st_mtime_ns == second and rows(warehouse) == 2
    warehouse.unlink()
    assert rows(refresh_views(store)) == 2


def test_views_that_are_current_need_no_writer_lock(tmp_path, monkeypatch):
    """A run's call to refresh the views while they already read every table's glob returns
    without taking the writers' file lock (held here by another writer): runs side by side do
    not queue on it. A change of the views' SQL still waits for the lock."""
    import datetime as dt

    import filelock

    from extraction_assets.store import warehouse as wh

    store = DataStore(tmp_path / "data")
    when = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    row = dict(asset="workbook", run_id="r", code_version="1", data_version="d",
               materialized_at=when, row_count=1)
    store.write_table("lineage", "a" * 64, [dict(workbook_hash="a" * 64, **row)])
    warehouse = wh.refresh_views(store)
    monkeypatch.setattr(wh, "LOCK_TIMEOUT_SECONDS", 0.2)
    with filelock.FileLock(str(warehouse.with_name(f".{warehouse.name}.lock"))):
        store.write_table("lineage", "b" * 64, [dict(workbook_hash="b" * 64, **row)])
        assert wh.refresh_views(store) == warehouse
        store.write_table("records", "a" * 64, [])  # the records view's SQL changes
        with pytest.raises(filelock.Timeout):
            wh.refresh_views(store)
    with duckdb.connect(str(wh.refresh_views(store)), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM lineage").fetchone()[0] == 2
