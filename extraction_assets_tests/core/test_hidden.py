"""Hidden rows and columns (acceptance kind B22): flagged in the StyledGrid, kept out of blocks,
records and chunks, and a hidden row inside a table does not split it."""

from __future__ import annotations

import io
import json

from openpyxl import Workbook

from extraction_assets.pipeline.stages import (
    normalize_stage,
    parse_stage,
    render_stage,
    segment_stage,
)
from extraction_assets.search.embedding import LocalEmbedder

H = "0" * 64


def _run(wb: Workbook):
    buf = io.BytesIO()
    wb.save(buf)
    parsed = parse_stage(H, buf.getvalue()).tables
    normalized = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                 parsed["styles"], parsed["workbook_properties"]).tables
    segmented = segment_stage(H, normalized["cells"], normalized["sheets"])
    rendered = render_stage(H, "f.xlsx", normalized["cells"], normalized["sheets"],
                            segmented.tables["blocks"], segmented.tables["block_columns"],
                            LocalEmbedder().count_tokens, 512)
    return normalized, segmented, rendered


def test_hidden_row_and_column_are_flagged_and_left_out():
    wb = Workbook()
    ws = wb.active
    ws.title = "Visibility Example"
    ws["A1"], ws["B1"], ws["C1"] = "Visible row", "Hidden column", "Visible column"
    ws["A2"] = "Hidden row"
    ws["C3"] = "Visible value"
    ws.row_dimensions[2].hidden = True
    ws.column_dimensions["B"].hidden = True
    normalized, segmented, rendered = _run(wb)
    sheet = normalized["sheets"].to_pylist()[0]
    assert (sheet["hidden_rows"], sheet["hidden_columns"]) == ([2], ["B"])
    hidden = {c["ref"]: c["hidden"] for c in normalized["cells"].to_pylist()}
    assert hidden == {"A1": False, "B1": True, "C1": False, "A2": True, "C3": False}
    text = "\n".join(c["text"] for c in rendered.tables["chunks"].to_pylist())
    assert "Hidden row" not in text and "Hidden column" not in text
    assert "Visible value" in text and "Visible column" in text
    assert [i.code for i in segmented.issues] == ["hidden_cells_skipped"]


def test_hidden_row_inside_a_table_does_not_split_it():
    wb = Workbook()
    ws = wb.active
    ws.append(["Item", "Qty"])
    for i in range(1, 6):
        ws.append([f"item {i}", i])
    for cell in ws[4]:
        cell.value = None  # row 4 is empty but hidden, as a filtered-out row would be
    ws.row_dimensions[4].hidden = True
    ws["A4"] = "secret"
    _, segmented, rendered = _run(wb)
    tables = [b for b in segmented.tables["blocks"].to_pylist() if b["kind"] == "table"]
    assert [t["a1_range"] for t in tables] == ["A1:B6"]
    rows = [r["row"] for r in rendered.tables["records"].to_pylist()]
    assert rows == [2, 3, 5, 6]


def test_row_heights_and_column_widths_are_recorded():
    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = "Name", "Note"
    ws.row_dimensions[1].height = 30
    ws.column_dimensions["B"].width = 42
    buf = io.BytesIO()
    wb.save(buf)
    sheet = parse_stage(H, buf.getvalue()).tables["parsed_sheets"].to_pylist()[0]
    assert json.loads(sheet["row_heights"]) == {"1": 30.0}
    assert {"min": 2, "max": 2, "width": 42.0} in json.loads(sheet["column_widths"])
