"""``tools.compare_outputs``: the digests of every table the stages make are the same for the
same bytes, and a table that changes is named."""

from __future__ import annotations

import openpyxl

from extraction_assets_tests.builders import put_rows, save_openpyxl
from tools.compare_outputs import differences, output_digests


def _book(path, rows):
    wb = openpyxl.Workbook()
    put_rows(wb.active, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_openpyxl(wb, path)
    return path


def test_same_bytes_same_digests_and_a_changed_value_names_its_tables(tmp_path):
    rows = [["Item", "Qty"], ["bolt", 3], ["nut", 5]]
    book = _book(tmp_path / "a" / "book.xlsx", rows)
    first = output_digests([book], tmp_path / "a")
    assert set(first["book.xlsx"]) >= {"cells", "blocks", "records", "chunks", "extraction_issues"}
    assert differences(first, output_digests([book], tmp_path / "a")) == []
    _book(tmp_path / "b" / "book.xlsx", [*rows[:2], ["nut", 6]])
    changed = differences(first, output_digests([tmp_path / "b" / "book.xlsx"], tmp_path / "b"))
    assert "book.xlsx: records" in changed and "book.xlsx: cells" in changed


def test_a_file_only_on_one_side_is_listed():
    assert differences({"x.xlsx": {"cells": "1"}}, {}) == ["x.xlsx: only in the base"]
