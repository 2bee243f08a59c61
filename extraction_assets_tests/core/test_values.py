"""Cell values as a user sees them (acceptance kinds B16 literal NA strings, B19 cached formula
values, B20 formulas without a cached value) through parse, normalize, segment and render."""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from openpyxl import Workbook

from extraction_assets.core.numfmt import is_valid_format
from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.stages import (
    normalize_stage,
    parse_stage,
    render_stage,
    segment_stage,
)
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.search.retrieval import indexer
from extraction_assets.search.vectors import VectorStore
from extraction_assets_tests.builders import Sheet, sst, t, worksheet, xlsx_bytes

H = "0" * 64


def _run(data: bytes):
    tables = run_pipeline(data, filename="f.xlsx", count_tokens=LocalEmbedder().count_tokens)
    return {c["ref"]: c for c in tables["cells"].to_pylist()}, tables


def _inline(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is>{t(text)}</is></c>'


def test_literal_na_strings_stay_verbatim_and_error_cells_are_typed():
    strings = ["region", "status", "empty", "note", "NA", "NULL", "None", "n/a", "nan", "EU", "OK"]
    s = {text: i for i, text in enumerate(strings)}

    def shared(ref: str, text: str) -> str:
        return f'<c r="{ref}" t="s"><v>{s[text]}</v></c>'

    rows = (
        f'<row r="1">{shared("A1", "region")}{shared("B1", "status")}{shared("C1", "empty")}'
        f'{shared("D1", "note")}</row>'
        f'<row r="2">{shared("A2", "NA")}{shared("B2", "NULL")}{shared("D2", "None")}</row>'
        f'<row r="3">{shared("A3", "n/a")}{shared("B3", "nan")}{_inline("D3", "#N/A")}</row>'
        f'<row r="4">{shared("A4", "EU")}{shared("B4", "OK")}<c r="D4" t="e"><v>#N/A</v></c></row>'
    )
    data = xlsx_bytes([Sheet("Regions", worksheet(rows))], shared_strings=sst(*(t(x) for x in strings)))
    cells, rendered = _run(data)
    assert (cells["D3"]["value_type"], cells["D3"]["display_text"]) == ("string", "#N/A")
    assert (cells["D4"]["value_type"], cells["D4"]["display_text"]) == ("error", "#N/A")
    records = [json.loads(r["record"]) for r in rendered["records"].to_pylist()]
    assert records == [
        {"region": "NA", "status": "NULL", "empty": None, "note": "None"},
        {"region": "n/a", "status": "nan", "empty": None, "note": "#N/A"},
        {"region": "EU", "status": "OK", "empty": None, "note": "#N/A"},
    ]
    text = rendered["chunks"].to_pylist()[0]["text"]
    assert "| NA | NULL |  | None |" in text and "| EU | OK |  | #N/A |" in text


def test_cached_formula_values_are_shown_and_formulas_kept_as_metadata():
    rows = (
        f'<row r="1">{_inline("A1", "Year")}{_inline("B1", "Pond A")}{_inline("C1", "Pond B")}'
        f'{_inline("D1", "Total")}</row>'
        '<row r="2"><c r="A2"><v>2022</v></c><c r="B2"><v>120</v></c><c r="C2"><v>95</v></c>'
        '<c r="D2"><f>B2+C2</f><v>215</v></c></row>'
        '<row r="3"><c r="A3"><v>2023</v></c><c r="B3"><v>150</v></c><c r="C3"><v>160</v></c>'
        '<c r="D3"><f t="shared" ref="D3:D3" si="0">B3+C3</f><v>310</v></c></row>'
        f'<row r="4">{_inline("A4", "All")}<c r="B4"><f>SUM(B2:B3)</f><v>270</v></c>'
        '<c r="C4"><f>SUM(C2:C3)</f><v>255</v></c><c r="D4"><f>SUM(D2:D3)</f><v>525</v></c></row>'
    )
    cells, rendered = _run(xlsx_bytes([Sheet("Ducks", worksheet(rows))]))
    assert {ref: cells[ref]["display_text"] for ref in ("D2", "D3", "B4", "C4", "D4", "A4")} == {
        "D2": "215", "D3": "310", "B4": "270", "C4": "255", "D4": "525", "A4": "All"}
    assert (cells["D3"]["formula"], cells["D3"]["value_status"]) == ("B3+C3", "ok")
    text = "\n".join(c["text"] for c in rendered["chunks"].to_pylist())
    assert "310" in text and "B3+C3" not in text and "SUM(" not in text


def test_iso_dated_cells_and_booleans():
    rows = (f'<row r="1">{_inline("A1", "When")}{_inline("B1", "Done")}</row>'
            '<row r="2"><c r="A2" t="d"><v>2024-03-14T09:30:00</v></c><c r="B2" t="b"><v>1</v></c></row>')
    cells, rendered = _run(xlsx_bytes([Sheet("Log", worksheet(rows))]))
    assert (cells["A2"]["value_type"], cells["A2"]["iso_value"]) == ("date", "2024-03-14T09:30:00")
    assert (cells["B2"]["value_type"], cells["B2"]["display_text"]) == ("bool", "TRUE")
    assert json.loads(rendered["records"].to_pylist()[0]["record"]) == {
        "When": "2024-03-14T09:30:00", "Done": True}


def test_invalid_number_format_falls_back_to_general_with_a_warning():
    assert is_valid_format("#,##0.00") and is_valid_format("General") and not is_valid_format("HH[M]")
    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = "Duration", 1.5
    ws["A2"].number_format = "HH[M]"
    buf = io.BytesIO()
    wb.save(buf)
    parsed = parse_stage(H, buf.getvalue()).tables
    out = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"], parsed["styles"],
                          parsed["workbook_properties"])
    cells = {c["ref"]: c for c in out.tables["cells"].to_pylist()}
    assert cells["A2"]["display_text"] == "1.5"
    assert [(i.code, i.ref, i.severity) for i in out.issues] == [
        ("invalid_number_format", "A2", "warning")]


def test_chart_becomes_a_block_and_a_chunk_with_its_values():
    from openpyxl.chart import BarChart, Reference

    wb = Workbook()
    ws = wb.active
    ws.title = "Dashboard"
    for row in [["Month", "Sales"], ["Jan", 10], ["Feb", 12], ["Mar", 9]]:
        ws.append(row)
    chart = BarChart()
    chart.title = "Sales by month"
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
    ws.add_chart(chart, "E8")
    buf = io.BytesIO()
    wb.save(buf)
    parsed = parse_stage(H, buf.getvalue()).tables
    normalized = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                 parsed["styles"], parsed["workbook_properties"]).tables
    segmented = segment_stage(H, normalized["cells"], normalized["sheets"],
                              parsed["sheet_objects"]).tables
    blocks = [(b["kind"], b["a1_range"], b["title"]) for b in segmented["blocks"].to_pylist()]
    assert blocks == [("table", "A1:B4", None), ("chart", "E8", "Sales by month")]
    rendered = render_stage(H, "f.xlsx", normalized["cells"], normalized["sheets"],
                            segmented["blocks"], segmented["block_columns"],
                            LocalEmbedder().count_tokens, 512).tables
    texts = [c["text"] for c in rendered["chunks"].to_pylist()]
    assert any("Sales by month" in t and "Jan = 10; Feb = 12; Mar = 9" in t for t in texts)


def test_run_pipeline_stops_after_the_stage_named_by_until():
    data = xlsx_bytes([Sheet("S", worksheet(
        '<row r="1">' + _inline("A1", "item") + _inline("B1", "qty") + "</row>"
        '<row r="2">' + _inline("A2", "bolt") + '<c r="B2"><v>4</v></c></row>'))])
    count = LocalEmbedder().count_tokens
    normalized = run_pipeline(data, count_tokens=count, until="normalized_grids")
    assert normalized["sheets"].num_rows == 1 and normalized["cells"].num_rows == 4
    assert "blocks" not in normalized and "chunks" not in normalized
    segmented = run_pipeline(data, count_tokens=count, until="segmented_blocks")
    assert segmented["blocks"].num_rows >= 1 and "chunks" not in segmented
    assert run_pipeline(data, count_tokens=count)["records"].num_rows == 1
    with pytest.raises(ValueError, match="unknown stage"):
        run_pipeline(data, until="embeddings")
    with pytest.raises(ValueError, match="chunk_embeddings needs index_units"):
        run_pipeline(data, until="chunk_embeddings")


def test_run_pipeline_through_the_embeddings_indexes_every_retrieval_unit(tmp_path):
    data = xlsx_bytes([Sheet("S", worksheet(
        '<row r="1">' + _inline("A1", "item") + _inline("B1", "qty") + "</row>"
        '<row r="2">' + _inline("A2", "bolt") + '<c r="B2"><v>4</v></c></row>'))])
    store, embedder = VectorStore(tmp_path / "lancedb"), LocalEmbedder()
    tables = run_pipeline(data, filename="bolts.xlsx", until="chunk_embeddings",
                          count_tokens=embedder.count_tokens,
                          count_tokens_batch=embedder.count_tokens_batch,
                          index_units=indexer(store, embedder))
    chunk_ids = tables["chunks"].column("chunk_id").to_pylist()
    (unit,) = tables["record_units"].to_pylist()
    assert unit["text"] == "S — bolt; qty: 4" and unit["chunk_id"] == chunk_ids[0]
    stored = store.unit_ids(hashlib.sha256(data).hexdigest())
    assert len(stored) == len(chunk_ids) + 1 and set(chunk_ids) <= set(stored)
