"""The whole asset graph end to end: a real Dagster instance in a temp dir, real Parquet, DuckDB
and LanceDB, over the bundled samples, shared corpus files and acceptance cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from dagster import AssetKey

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import CONTRACT_VIEWS
from extraction_assets_tests.app.graph_helpers import warehouse

pytestmark = pytest.mark.integration  # the asset graph and the CLI as a process

CONTRACT_COLUMNS = {
    "workbooks": {"workbook_hash", "source_path", "filename", "size_bytes", "format",
                  "sheet_count", "has_macros", "has_external_links", "ingested_at"},
    "sheets": {"workbook_hash", "sheet_index", "sheet_name", "visibility", "used_range",
               "n_cells", "n_merged_ranges"},
    "cells": {"workbook_hash", "sheet_name", "row", "col", "ref", "value_type", "raw_value",
              "formula", "number_format", "display_text", "bold", "font_size", "fill_rgb",
              "merged_from", "cf_affected"},
    "blocks": {"workbook_hash", "sheet_name", "block_id", "kind", "a1_range", "header_row_count",
               "title", "heading_path"},
    "block_columns": {"workbook_hash", "block_id", "col", "column_letter", "header",
                      "header_levels"},
    "records": {"workbook_hash", "block_id", "sheet_name", "row", "record", "merged_from"},
    "chunks": {"workbook_hash", "chunk_id", "sheet_name", "block_ids", "a1_ranges",
               "heading_path", "text", "n_tokens"},
    "extraction_issues": {"workbook_hash", "stage", "sheet_name", "ref", "severity", "code",
                          "message"},
    "lineage": {"workbook_hash", "asset", "run_id", "code_version", "data_version",
                "materialized_at", "row_count"},
}


def test_samples_materialize_all_six_assets(samples_ingest):
    root, paths, results = samples_ingest
    assert [r.status for r in results] == ["success"] * 3
    store = DataStore(root)
    with open_instance(store) as instance:
        keys = set(instance.get_dynamic_partitions("workbooks"))
        assert keys == {r.workbook_hash for r in results}
        for asset in ALL_ASSETS:
            for key in keys:
                event = instance.get_latest_materialization_event(asset.key)
                assert event is not None, asset.key
            status = instance.get_materialized_partitions(asset.key)
            assert status == keys, asset.key


def test_contract_views_answer_with_their_columns(samples_ingest):
    root, _, _ = samples_ingest
    with warehouse(root) as con:
        for view in CONTRACT_VIEWS:
            columns = {row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()}
            assert CONTRACT_COLUMNS[view] <= columns, (view, CONTRACT_COLUMNS[view] - columns)
        assert con.execute("SELECT count(*) FROM workbooks").fetchone()[0] == 3
        names = con.execute(
            "SELECT filename, sheet_name FROM sheets JOIN workbooks USING (workbook_hash) "
            "ORDER BY filename, sheet_index").fetchall()
        assert names == [("ledger.xlsx", "Ledger"), ("ledger.xlsx", "Accounts"),
                         ("quarterly_report.xlsx", "Report"), ("spec_ja.xlsx", "仕様書")]
        assert con.execute("SELECT count(*) FROM workbooks WHERE ingested_at IS NULL").fetchone()[0] == 0
        lineage = con.execute("SELECT asset, count(*) FROM lineage GROUP BY asset").fetchall()
        assert dict(lineage) == {a.key.path[-1]: 3 for a in ALL_ASSETS}


def test_two_tables_and_merged_header_of_the_report(samples_ingest):
    root, _, _ = samples_ingest
    with warehouse(root) as con:
        tables = con.execute(
            "SELECT a1_range, header_row_count, title, heading_path FROM blocks "
            "JOIN workbooks USING (workbook_hash) WHERE filename = 'quarterly_report.xlsx' "
            "AND kind = 'table' ORDER BY min_row").fetchall()
        assert tables == [
            ("A3:E8", 2, "Quarterly Sales Report 2024", ["Report", "Quarterly Sales Report 2024"]),
            ("A12:D17", 1, "Top products",
             ["Report", "Quarterly Sales Report 2024", "Top products"]),
        ]
        headers = con.execute(
            "SELECT header, header_levels FROM block_columns JOIN blocks USING (workbook_hash, block_id) "
            "WHERE a1_range = 'A3:E8' ORDER BY position").fetchall()
        assert headers[1] == ("2023 > Q1", ["2023", "Q1"])
        assert [h for h, _ in headers] == ["Region", "2023 > Q1", "2023 > Q2", "2024 > Q1", "2024 > Q2"]
        north = con.execute(
            "SELECT record, a1_range, row FROM records "
            "WHERE filename = 'quarterly_report.xlsx' ORDER BY row LIMIT 1").fetchone()
        assert json.loads(north[0]) == {"Region": "North", "2023 > Q1": 1240, "2023 > Q2": 1315,
                                        "2024 > Q1": 1382, "2024 > Q2": 1450}
        assert north[1:] == ("A5:E5", 5)


def test_ledger_records_are_typed_and_total_is_marked(samples_ingest):
    root, _, _ = samples_ingest
    with warehouse(root) as con:
        rows = con.execute(
            "SELECT row, role, record, display FROM records "
            "WHERE filename = 'ledger.xlsx' AND sheet_name = 'Ledger' ORDER BY row").fetchall()
    first = json.loads(rows[0][2])
    assert first == {"Date": "2024-01-03", "Account": 1200,
                     "Description": "Invoice INV-1001 Harbor Cafe", "Debit": 4800, "Credit": None}
    assert json.loads(rows[0][3])["Debit"] == "$4,800.00"
    assert [r[1] for r in rows].count("total") == 1
    assert rows[-1][0] == 14 and rows[-1][1] == "total"
    assert len([r for r in rows if r[1] == "data"]) == 12


def test_chunks_and_vectors_agree_and_search_finds_a_table(samples_ingest):
    root, _, results = samples_ingest
    store = DataStore(root)
    vectors = VectorStore(store.lancedb_uri)
    with warehouse(root) as con:
        per_partition = dict(con.execute(
            "SELECT workbook_hash, count(*) FROM chunks GROUP BY 1").fetchall())
        records = dict(con.execute(
            "SELECT workbook_hash, count(*) FROM records GROUP BY 1").fetchall())
        headings = con.execute("SELECT heading_path, text FROM chunks").fetchall()
    for r in results:
        assert vectors.count(r.workbook_hash, kind="chunk") == per_partition[r.workbook_hash] > 0
        assert vectors.count(r.workbook_hash, kind="record") == records[r.workbook_hash] > 0
        assert vectors.count(r.workbook_hash) == per_partition[r.workbook_hash] + records[
            r.workbook_hash]
    assert all(path and path[0] in text for path, text in headings)
    embedder = LocalEmbedder()
    hits = vectors.search(3, vector=embedder.embed(["Top products revenue by category"])[0])
    assert any(h["filename"] == "quarterly_report.xlsx" and "Top products" in h["heading_path"]
               for h in hits)
    hits = vectors.search(2, vector=embedder.embed(["製品仕様 定格電圧 消費電力"])[0])
    assert hits[0]["filename"] == "spec_ja.xlsx"


def test_rematerializing_is_deterministic_and_never_duplicates(samples_ingest):
    root, paths, results = samples_ingest
    store = DataStore(root)
    tables = ["workbooks", "parsed_cells", "cells", "blocks", "block_columns", "records",
              "record_units", "chunks"]
    before = {(t, r.workbook_hash): store.table_path(t, r.workbook_hash).read_bytes()
              for t in tables for r in results}
    vectors_before = VectorStore(store.lancedb_uri).count()
    unchanged = ingest_paths(paths + [paths[0]], root)
    assert [r.status for r in unchanged] == ["unchanged"] * 3 + ["duplicate"]
    assert unchanged[3].error == "the same file given twice"
    again = ingest_paths(paths, root, force=True)
    assert [r.status for r in again] == ["success"] * 3
    after = {(t, r.workbook_hash): store.table_path(t, r.workbook_hash).read_bytes()
             for t in tables for r in results}
    assert after == before
    assert VectorStore(store.lancedb_uri).count() == vectors_before


def test_bad_file_fails_its_own_partition_and_the_batch_goes_on(tmp_path):
    bad = tmp_path / "report.xlsx"
    bad.write_text("this is a text file, not a workbook\n")
    empty = tmp_path / "empty.xlsx"
    empty.write_bytes(b"")
    from extraction_assets.app.samples import write_samples

    good = write_samples(tmp_path / "samples")[0]
    root = tmp_path / "data"
    results = ingest_paths([bad, empty, tmp_path / "missing.xlsx", good], root)
    assert [r.status for r in results] == ["failed", "failed", "failed", "success"]
    # the ledger's two totals are stored without a cached value: computed
    assert (results[3].counts["formulas_computed"],
            results[3].counts["formulas_not_computed"]) == (2, 0)
    assert "No such file" in results[2].error
    assert "not_a_spreadsheet" in results[0].error
    assert "empty" in results[1].error
    with warehouse(root) as con:
        issues = con.execute(
            "SELECT w.filename, i.stage, i.severity, i.code FROM extraction_issues i "
            "JOIN workbooks w USING (workbook_hash) ORDER BY 1").fetchall()
        assert ("empty.xlsx", "workbook", "error", "not_a_spreadsheet") in issues
        assert ("report.xlsx", "workbook", "error", "not_a_spreadsheet") in issues
        formats = dict(con.execute("SELECT filename, format FROM workbooks").fetchall())
        assert formats["report.xlsx"] == "other" and formats["ledger.xlsx"] == "xlsx"


def test_cli_ingest_reports_each_file_and_exits_nonzero_on_failure(tmp_path):
    bad = tmp_path / "notes.xlsx"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n")
    from extraction_assets.app.samples import write_samples

    good = write_samples(tmp_path / "samples")[2]
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "ingest", str(bad), str(good),
         "--data-dir", str(tmp_path / "data"), "--until", "rendered_chunks"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("success", "failed"))]
    assert lines[0].startswith("failed") and "not_a_spreadsheet" in lines[0]
    assert lines[1].startswith("success") and "tables=2" in lines[1] and "records=8" in lines[1]
    assert not (tmp_path / "data" / "lancedb").exists()  # --until stopped before the vectors
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "search", "anything",
         "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "ingest some files first" in proc.stderr
    assert "refresh" in proc.stderr  # what embeds files ingested with --until
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "search", "anything",
         "--data-dir", str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"no data dir at {tmp_path / 'nowhere'}")
    assert not (tmp_path / "nowhere").exists()


def test_damaged_worksheet_keeps_its_first_cells_and_the_line_shows_the_error(tmp_path):
    """A sheet that is not well-formed XML past its second row: the file is read (the cells
    before the fault and the other sheet), the partition has one ``error`` issue, and the
    ingest line says so."""
    from extraction_assets_tests.builders import Sheet, worksheet, xlsx_bytes

    rows = "".join(f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>Item {r}</t></is></c>'
                   f'<c r="B{r}"><v>{r}</v></c></row>' for r in range(2, 4))
    bad = worksheet('<row r="1"><c r="A1" t="inlineStr"><is><t>Item</t></is></c>'
                    '<c r="B1" t="inlineStr"><is><t>Qty</t></is></c></row>' + rows
                    + '<row r="4"><c r="A4"><v>4</c></row>')  # </v> missing
    path = tmp_path / "damaged.xlsx"
    path.write_bytes(xlsx_bytes([Sheet("Bad", bad), Sheet("Good", worksheet(
        '<row r="1"><c r="A1" t="inlineStr"><is><t>Note</t></is></c></row>'))]))
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "ingest", str(path),
         "--data-dir", str(tmp_path / "data"), "--until", "rendered_chunks"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("success"))
    assert "sheets=2" in line and "records=2" in line and "errors=1" in line
    issues = warehouse(tmp_path / "data").execute(
        "SELECT sheet_name, severity, code FROM extraction_issues").fetchall()
    assert issues == [("Bad", "error", "corrupt_workbook")]


def test_chunks_over_a_small_budget_are_counted_on_the_ingest_line(tmp_path):
    """A title longer than ``--max-tokens`` heads every chunk of its table, so each is over the
    budget: the file is still a success, and its line says how many chunks are over (as many
    as the ``chunk_over_budget`` issues and the chunks over the budget in the views)."""
    from openpyxl import Workbook
    from typer.testing import CliRunner

    from extraction_assets.app.cli import app

    wb = Workbook()
    ws = wb.active
    ws["A1"] = " ".join(f"word{k}" for k in range(60))  # a title of 60 words
    ws.append([])
    ws.append(["Item", "Qty"])
    for k in range(4):
        ws.append([f"Item {k}", k])
    path = tmp_path / "long_title.xlsx"
    wb.save(path)
    result = CliRunner().invoke(app, ["ingest", str(path), "--data-dir", str(tmp_path / "data"),
                                      "--until", "rendered_chunks", "--max-tokens", "32"])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("success"))
    with warehouse(tmp_path / "data") as con:
        (issues,) = con.execute("SELECT count(*) FROM extraction_issues "
                                "WHERE code = 'chunk_over_budget'").fetchone()
        (over,) = con.execute("SELECT count(*) FROM chunks WHERE n_tokens > 32").fetchone()
    assert issues == over > 0
    assert f"over_budget={over} " in line


def test_b04_two_row_header_is_one_table(cases_dir, tmp_path):
    results = ingest_paths([cases_dir / "B04_two_row_header.xlsx"], tmp_path,
                           until="segmented_blocks")
    assert results[0].status == "success"
    with warehouse(tmp_path) as con:
        tables = con.execute("SELECT sheet_name, a1_range FROM blocks WHERE kind = 'table'").fetchall()
        assert tables == [("Quarterly", "A1:E5")]
        headers = [h for (h,) in con.execute(
            "SELECT header FROM block_columns ORDER BY position").fetchall()]
        assert headers == ["Region", "2023 > Q1", "2023 > Q2", "2024 > Q1", "2024 > Q2"]


#: Shared-corpus files with what a user would check: sheet names, one table's header and a record.
CORPUS_EXPECTATIONS = {
    "docling/xlsx_05_table_with_title.xlsx": (
        ["Duck Observations"], "B4:C10", ["Year", "Freshwater Ducks"],
        {"Year": 2019, "Freshwater Ducks": 120}),
    "docling/xlsx_02_sample_sales_data.xlsm": (
        ["SalesData"], "A1:D21", ["Product", "Date", "Quantity", "Revenue"],
        {"Product": "Widget A", "Date": "2024-01-01", "Quantity": 5, "Revenue": 5000}),
    "calamine/table-multiple.xlsx": (
        ["Sheet1", "Sheet2", "Sheet3"], "A1:C5", ["Item", "Type", "Quantity"],
        {"Item": 1, "Type": "Apple", "Quantity": 50}),
    "docling/xlsx_01.xlsx": None,
    "docling/xlsx_03_chartsheet.xlsx": None,
    "docling/xlsx_06_edge_cases_.xlsx": None,
    "docling/xlsx_07_gap_tolerance_.xlsx": None,
    "docling/xlsx_09_section_label_header.xlsx": None,
    "calamine/merged_range.xlsx": None,
    "calamine/nonstandard-xml-ns-prefix.xlsx": None,
    "closedxml/universal-content-strict.xlsx": None,
    "sheetjs/1904_1904.xlsx": None,
    "poi/poc-xmlbomb.xlsx": "hostile_content",
    "poi/protected_passtika.xlsx": "encrypted",
}


@pytest.fixture(scope="module")
def corpus_ingest(corpus_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus-data")
    paths = [corpus_dir / "files" / name for name in CORPUS_EXPECTATIONS]
    missing = [p for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"corpus files missing: {missing}")
    results = ingest_paths(paths, root)
    return root, dict(zip(CORPUS_EXPECTATIONS, results))


@pytest.mark.parametrize("name", list(CORPUS_EXPECTATIONS))
def test_corpus_file_through_the_whole_graph(corpus_ingest, name):
    root, results = corpus_ingest
    result = results[name]
    expected = CORPUS_EXPECTATIONS[name]
    if isinstance(expected, str):
        assert result.status == "failed" and expected in result.error
        with warehouse(root) as con:
            codes = [c for (c,) in con.execute(
                "SELECT code FROM extraction_issues WHERE workbook_hash = ?",
                [result.workbook_hash]).fetchall()]
        assert expected in codes
        return
    assert result.status == "success", result.error
    with warehouse(root) as con:
        chunks = con.execute("SELECT count(*) FROM chunks WHERE workbook_hash = ?",
                             [result.workbook_hash]).fetchone()[0]
        assert VectorStore(DataStore(root).lancedb_uri).count(result.workbook_hash,
                                                              kind="chunk") == chunks
        used = con.execute("SELECT count(*) FROM sheets WHERE workbook_hash = ? AND n_cells > 0 "
                           "AND used_range IS NULL", [result.workbook_hash]).fetchone()[0]
        assert used == 0
        if expected is None:
            return
        sheets, a1_range, header, record = expected
        names = [n for (n,) in con.execute(
            "SELECT sheet_name FROM sheets WHERE workbook_hash = ? ORDER BY sheet_index",
            [result.workbook_hash]).fetchall()]
        assert names == sheets
        block_id = con.execute(
            "SELECT block_id FROM blocks WHERE workbook_hash = ? AND kind = 'table' AND a1_range = ?",
            [result.workbook_hash, a1_range]).fetchone()[0]
        headers = [h for (h,) in con.execute(
            "SELECT header FROM block_columns WHERE workbook_hash = ? AND block_id = ? "
            "ORDER BY position", [result.workbook_hash, block_id]).fetchall()]
        assert headers == header
        first = con.execute(
            "SELECT record FROM records WHERE workbook_hash = ? AND block_id = ? ORDER BY row "
            "LIMIT 1", [result.workbook_hash, block_id]).fetchone()[0]
        assert json.loads(first) == record


def test_cli_search_returns_provenance_as_json(samples_ingest):
    root, _, _ = samples_ingest
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "search", "Top products revenue",
         "--data-dir", str(root), "-k", "3", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert len(hits) == 3 and {h["mode"] for h in hits} == {"hybrid"}
    top = next(h for h in hits if h["heading_path"][-1] == "Top products")
    assert top["heading_path"][0] == "Report"
    assert top["filename"] == "quarterly_report.xlsx" and top["sheet"] == "Report"
    assert top["a1_ranges"] == ["A13:D17"]
    assert "| Product | Category | Units | Revenue |" in top["text"]
    # found through one of its rows, which the hit names
    assert top["kind"] == "record"
    assert top["record"]["a1_range"] in [f"A{r}:D{r}" for r in range(13, 18)]
    assert top["record"]["text"].startswith(
        "Report > Quarterly Sales Report 2024 > Top products — ")
    assert "; Category: " in top["record"]["text"]


def test_cli_search_without_an_api_key_is_one_line(samples_ingest):
    root, _, _ = samples_ingest
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "extraction_assets.app.cli", "search", "revenue", "--data-dir",
         str(root), "--provider", "openai", "--model", "text-embedding-3-small"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 2  # a usage error, found before the vectors are opened
    assert proc.stderr.startswith("OpenAI embedder (text-embedding-3-small) needs an API key")
    assert "OPENAI_API_KEY" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_cli_unknown_provider_is_a_usage_error(samples_ingest, tmp_path):
    """``--provider`` with a name the embedder resource refuses exits with code 2 and one line
    naming the option, before any file is read (ingest) or searched (search)."""
    root, _, _ = samples_ingest
    for command in (["ingest", str(tmp_path / "missing.xlsx"), "--data-dir", str(tmp_path / "d")],
                    ["search", "revenue", "--data-dir", str(root)]):
        proc = subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", *command,
                               "--provider", "opneai"], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == "--provider: Input should be 'local' or 'openai'"
        assert proc.stdout == ""
    # an OpenAI model name without --provider openai: refused before any file is read
    proc = subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", "ingest",
                           str(tmp_path / "missing.xlsx"), "--data-dir", str(tmp_path / "d"),
                           "--model", "text-embedding-3-small"], capture_output=True, text=True,
                          timeout=300)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr.strip() == (
        "provider 'local' only serves 'universal-sentence-encoder-multilingual-3', got "
        "model='text-embedding-3-small' (--provider openai takes --model and --base-url)")
    # --provider openai without its API key: refused before any file is read, not at the
    # rendered_chunks asset of every file
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", "ingest",
                           str(tmp_path / "missing.xlsx"), "--data-dir", str(tmp_path / "d"),
                           "--provider", "openai"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr.strip().startswith(
        "OpenAI embedder (text-embedding-3-small) needs an API key: set the environment "
        "variable OPENAI_API_KEY")


def test_openai_provider_through_the_graph_and_no_mixed_dimensions(tmp_path, monkeypatch):
    from extraction_assets.app.samples import write_samples
    from extraction_assets.defs.resources import EmbedderResource
    from extraction_assets_tests.search.test_embedding import KEY, KEY_ENV, fake_openai_server

    monkeypatch.setenv(KEY_ENV, KEY)
    paths = write_samples(tmp_path / "samples")
    root = tmp_path / "data"
    with fake_openai_server() as server:
        remote = EmbedderResource(provider="openai", base_url=server.url, model="tiny-embed",
                                  api_key_env=KEY_ENV, dimensions=16)
        results = ingest_paths(paths[:1], root, embedder=remote)
        assert results[0].status == "success", results[0].error
        assert any(r.get("model") == "tiny-embed" for r in server.requests)
    vectors = VectorStore(DataStore(root).lancedb_uri)
    units = results[0].counts["chunks"] + results[0].counts["records"]
    assert vectors.count() == units > results[0].counts["chunks"] > 0
    mixed = ingest_paths(paths[1:2], root)  # the local 512-d model into the 16-d table
    assert mixed[0].status == "failed"
    assert "chunk_embeddings" in mixed[0].error and "16-d" in mixed[0].error
    assert vectors.count() == units


def test_asset_checks_are_evaluated_and_pass_on_the_samples(samples_ingest):
    from dagster import DagsterEventType

    root, _, results = samples_ingest
    with open_instance(DataStore(root)) as instance:
        outcomes = {}
        for result in results:
            for entry in instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
                evaluation = entry.dagster_event.event_specific_data
                outcomes[(result.workbook_hash, evaluation.check_name)] = evaluation.passed
    names = {name for _, name in outcomes}
    assert names == {"cell_coverage", "values_in_output", "chunk_budget", "record_provenance",
                     "one_row_per_unit", "rows_in_one_chunk", "heading_paths"}
    assert len(outcomes) == 7 * len(results)
    assert all(outcomes.values()), [k for k, v in outcomes.items() if not v]


def test_segmentation_picture_shows_the_two_tables_of_the_report(samples_ingest):
    from lxml import etree

    root, _, results = samples_ingest
    report = next(r for r in results if r.path.endswith("quarterly_report.xlsx"))
    svg = etree.parse(str(DataStore(root).picture_path(report.workbook_hash, 1))).getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    tables = svg.findall(".//s:rect[@class='block table']", ns)
    assert len(tables) == 2
    labels = {t.findtext("s:title", namespaces=ns) for t in tables}
    assert labels == {"table A3:E8", "table A12:D17"}
    with open_instance(DataStore(root)) as instance:
        event = instance.get_latest_materialization_event(AssetKey("segmented_blocks"))
        assert any(key.startswith("segmentation: ") for key in event.asset_materialization.metadata)


def test_ingest_and_refresh_wait_for_the_tokenizer_load_they_started(samples_ingest):
    """With nothing to run the commands return within ~0.3 s, before the tokenizer (~0.4 s)
    is read: they still wait for the load, since an interpreter that exits while the C++
    library reads it aborts (exit code 134)."""
    import threading

    from extraction_assets.app.ingest import refresh_stale
    from extraction_assets.search.embedding import _load_use_tokenizer, _use_model_cached

    root, paths, _ = samples_ingest
    for command in (lambda: ingest_paths(paths[:1], root), lambda: refresh_stale(root)):
        _load_use_tokenizer.cache_clear()
        _use_model_cached.cache_clear()  # the model holds the tokenizer it was loaded with
        assert {r.status for r in command()} == {"unchanged"}
        assert not [t for t in threading.enumerate() if t.name == "tokenizer-load"]
        assert _load_use_tokenizer.cache_info().currsize == 1


def test_refresh_materializes_only_what_is_stale(tmp_path):
    from extraction_assets.app.ingest import refresh_stale, stale_assets
    from extraction_assets.app.samples import write_samples

    sample = write_samples(tmp_path / "samples")[1]
    root = tmp_path / "data"
    first = ingest_paths([sample], root, until="segmented_blocks")
    h = first[0].workbook_hash
    store = DataStore(root)
    with open_instance(store) as instance:
        assert [a.key.path[-1] for a in stale_assets(instance, h)] == [
            "rendered_chunks", "chunk_embeddings"]
    refreshed = refresh_stale(root)
    assert [(r.workbook_hash, r.status) for r in refreshed] == [(h, "success")]
    with warehouse(root) as con:
        runs = dict(con.execute("SELECT asset, count(*) FROM lineage GROUP BY asset").fetchall())
    assert runs == {"workbook": 1, "parsed_sheets": 1, "normalized_grids": 1,
                    "segmented_blocks": 1, "rendered_chunks": 1, "chunk_embeddings": 1}
    assert VectorStore(store.lancedb_uri).count(h, kind="chunk") == refreshed[0].counts[
        "chunks"] > 0
    assert [r.status for r in refresh_stale(root)] == ["unchanged"]


def test_unchanged_units_of_a_new_version_are_not_embedded_again(tmp_path):
    from extraction_assets.app.samples import build_ledger, workbook_bytes

    path = tmp_path / "files" / "ledger.xlsx"
    path.parent.mkdir()
    path.write_bytes(workbook_bytes(build_ledger()))
    root = tmp_path / "data"
    first = ingest_paths([path], root)
    changed = build_ledger()
    changed["Ledger"]["D2"] = 4900
    path.write_bytes(workbook_bytes(changed))
    second = ingest_paths([path], root)
    assert first[0].workbook_hash != second[0].workbook_hash
    with open_instance(DataStore(root)) as instance:
        events = [e for e in instance.fetch_materializations(
            AssetKey("chunk_embeddings"), limit=10, ascending=True).records]
    metadata = [e.asset_materialization.metadata for e in events]
    # 18 records embedded, the 2 chunks (rows only) made of their records' vectors; the new
    # version changes row 2 and, through its computed total (=SUM(D2:D13), no cached value),
    # row 14: those two alone are embedded, the chunks are made again
    assert [(m["embedded"].value, m["reused"].value, m["derived"].value)
            for m in metadata] == [(18, 0, 2), (2, 16, 2)]
    assert VectorStore(DataStore(root).lancedb_uri).count(second[0].workbook_hash) == 20
    # refresh lists both partitions of the path and says which one is the earlier version
    from typer.testing import CliRunner

    from extraction_assets.app.cli import app

    result = CliRunner().invoke(app, ["refresh", "--data-dir", str(root)])
    assert result.exit_code == 0, result.output
    lines = {line.split("partition=")[1][:12]: line for line in result.output.splitlines()
             if line.startswith("unchanged ")}
    assert lines[first[0].workbook_hash[:12]].startswith(
        f"unchanged {path.resolve()} (an earlier version)  sheets=")
    assert lines[first[0].workbook_hash[:12]].endswith(" (up to date)")
    assert lines[second[0].workbook_hash[:12]].startswith(f"unchanged {path.resolve()}  sheets=")
    assert lines[second[0].workbook_hash[:12]].endswith(" (up to date; ingest --force redoes it)")


def test_rechunking_with_until_makes_the_embeddings_stale(tmp_path):
    from extraction_assets.app.ingest import refresh_stale, stale_assets
    from extraction_assets.app.samples import write_samples

    sample = write_samples(tmp_path / "samples")[0]
    bad = tmp_path / "notes.xlsx"
    bad.write_text("not a workbook")
    root = tmp_path / "data"
    (first, _) = ingest_paths([sample, bad], root)
    again = ingest_paths([sample], root, until="rendered_chunks", max_tokens=40, force=True)
    store = DataStore(root)
    with open_instance(store) as instance:
        assert [a.key.path[-1] for a in stale_assets(instance, first.workbook_hash)] == [
            "chunk_embeddings"]
    assert again[0].counts["chunks"] > first.counts["chunks"]
    final = ingest_paths([sample], root)[0]
    assert final.status == "success"  # not "unchanged": the vectors were behind the chunks
    assert VectorStore(store.lancedb_uri).count(first.workbook_hash,
                                                kind="chunk") == final.counts["chunks"]
    statuses = sorted(r.status for r in refresh_stale(root))
    assert statuses == ["unchanged", "unreadable"]


def test_refresh_does_not_retry_a_file_whose_string_table_cannot_be_read(tmp_path):
    """A damaged ``xl/sharedStrings.xml`` fails ``parsed_sheets`` with a typed error: refresh
    lists the file ``unreadable`` with that error and runs nothing; a damaged worksheet, read
    in part (materialized, with an error issue), is up to date."""
    from extraction_assets.app.ingest import refresh_stale
    from extraction_assets_tests.builders import NS_MAIN, Sheet, worksheet, xlsx_bytes

    strings = tmp_path / "strings.xlsx"
    strings.write_bytes(xlsx_bytes(
        [Sheet("Prices", worksheet('<row r="1"><c r="A1" t="s"><v>0</v></c></row>'))],
        shared_strings=f'<sst xmlns="{NS_MAIN}"><si><t>Apple</si></sst>'))
    partial = tmp_path / "partial.xlsx"
    partial.write_bytes(xlsx_bytes([Sheet("Bad", worksheet(
        '<row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="A2"><v>2</c></row>'))]))
    root = tmp_path / "data"
    first = ingest_paths([strings, partial], root, until="segmented_blocks")
    assert [r.status for r in first] == ["failed", "success"]
    error = ("corrupt_workbook: part xl/sharedStrings.xml is not well-formed XML: Opening and "
             "ending tag mismatch: t line 1 and si, line 1, column 89")
    assert first[0].error == f"parsed_sheets: {error}"
    with open_instance(DataStore(root)) as instance:
        runs = len(instance.get_run_records())
    refreshed = {r.path: (r.status, r.error) for r in refresh_stale(root)}
    assert refreshed[str(strings.resolve())] == ("unreadable", error)
    assert refreshed[str(partial.resolve())][0] == "success"  # its --until assets, then on
    with open_instance(DataStore(root)) as instance:
        assert len(instance.get_run_records()) == runs + 1


def test_issues_of_a_file_read_by_value_are_reported_once(tmp_path):
    csv_path = tmp_path / "prices.csv"
    csv_path.write_text("item,price\nbolt,1.5\nnut,0.25\nwasher,0.1\n")
    root = tmp_path / "data"
    assert ingest_paths([csv_path], root, until="segmented_blocks")[0].status == "success"
    with warehouse(root) as con:
        rows = con.execute("SELECT stage, code, count(*) FROM extraction_issues "
                           "GROUP BY ALL ORDER BY ALL").fetchall()
    assert rows and all(count == 1 for _, _, count in rows), rows


def test_japanese_specification_chunks_carry_their_headings(samples_ingest):
    root, _, _ = samples_ingest
    with warehouse(root) as con:
        rows = con.execute(
            "SELECT c.heading_path, c.n_tokens FROM chunks c JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'spec_ja.xlsx' ORDER BY c.chunk_index").fetchall()
    assert rows and all(n <= 512 for _, n in rows)
    deeper = [path for path, _ in rows if len(path) > 1]
    assert len(deeper) / len(rows) >= 0.8
    assert ["仕様書", "製品仕様書", "2. 付属品", "2.1 標準付属品"] in deeper
