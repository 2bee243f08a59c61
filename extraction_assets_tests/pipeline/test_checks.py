"""The data-quality checks fail on the faults they exist for."""

from __future__ import annotations

from openpyxl import Workbook

from extraction_assets.pipeline.checks import (
    cell_coverage,
    chunk_budget,
    one_row_per_unit,
    record_provenance,
)
from extraction_assets.pipeline.stages import normalize_stage, parse_stage, segment_stage

H = "0" * 64


def _segmented():
    import io

    wb = Workbook()
    ws = wb.active
    ws.append(["Item", "Qty"])
    ws.append(["bolt", 4])
    ws["E9"] = "note far away"
    buf = io.BytesIO()
    wb.save(buf)
    parsed = parse_stage(H, buf.getvalue()).tables
    normalized = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                 parsed["styles"], parsed["workbook_properties"]).tables
    return normalized, segment_stage(H, normalized["cells"], normalized["sheets"]).tables


def test_cell_coverage_passes_then_fails_when_a_block_is_missing():
    normalized, segmented = _segmented()
    ok = cell_coverage(normalized["cells"], normalized["sheets"], segmented["blocks"])
    assert ok.passed and ok.metadata["cells"] == 5
    blocks = segmented["blocks"].filter([b != "E9" for b in segmented["blocks"].column("a1_range").to_pylist()])
    missing = cell_coverage(normalized["cells"], normalized["sheets"], blocks)
    assert not missing.passed and missing.metadata["uncovered_sample"] == ["Sheet!E9"]
    doubled = cell_coverage(normalized["cells"], normalized["sheets"],
                            segmented["blocks"].take([0, 0, 1]))
    assert not doubled.passed and doubled.metadata["overlapping"] == 4


def test_chunk_budget_records_and_vectors():
    import pyarrow as pa

    chunks = pa.table({"chunk_id": ["a", "b"], "n_tokens": pa.array([10, 600], pa.int32())})
    assert not chunk_budget(chunks, 512).passed and chunk_budget(chunks, 600).passed
    blocks = pa.table({"block_id": ["x"], "min_row": [1], "max_row": [5]})
    records = pa.table({"block_id": ["x", "x"], "filename": ["f.xlsx", None],
                        "sheet_name": ["S", "S"], "row": [2, 3], "a1_range": ["A2:B2", "A3:B3"]})
    outcome = record_provenance(records, blocks)
    assert not outcome.passed and outcome.metadata["incomplete_sample"] == ["S!A3:B3"]
    assert one_row_per_unit(["a", "b"], ["b", "a"]).passed
    assert not one_row_per_unit(["a", "b"], ["a", "a", "b"]).passed
    assert one_row_per_unit(["a", "b"], ["a"]).metadata["missing_sample"] == ["b"]


def test_rows_in_one_chunk_and_heading_paths():
    import pyarrow as pa

    from extraction_assets.pipeline.checks import heading_paths, rows_in_one_chunk

    records = pa.table({"block_id": ["b", "b", "b"], "row": [2, 3, 4]})
    chunks = pa.table({"block_ids": [["b"], ["b"], ["b"]], "rows": [[2, 3], [3], [3]],
                       "continuation": [False, True, False],
                       "heading_path": [["S"], ["S", "T"], []]})
    outcome = rows_in_one_chunk(records, chunks)
    assert not outcome.passed
    assert (outcome.metadata["in_no_chunk"], outcome.metadata["in_several"]) == (1, 1)
    assert rows_in_one_chunk(records.slice(0, 1), chunks.slice(0, 2)).passed
    assert not heading_paths(chunks).passed and heading_paths(chunks.slice(0, 2)).passed
