"""Hostile OOXML input, third pass (issue #34): integers past 64 bits, parts reached by
several references, start tags of millions of attributes. Every input is built here (the
recipes of :mod:`tools.bench.hostile`, scaled down) and run through the real stages."""

from __future__ import annotations

import pytest

from extraction_assets.pipeline import run_pipeline
from tools.bench.hostile import HUGE_INT, huge_int_files


def issues(tables: dict) -> list[tuple[str, str, str | None]]:
    return [(i["code"], i["severity"], i["ref"]) for i in tables["extraction_issues"].to_pylist()]


# -- integers past 64 bits ---------------------------------------------------------------------
#: The warning each file of :func:`huge_int_files` ends with, and its cell.
HUGE_INT_ISSUES = {
    "style_id": ("bad_style", "A2"),
    "style_id_tree": ("bad_style", "A2"),
    "string_index": ("bad_shared_string_index", "A2"),
    "string_index_tree": ("bad_shared_string_index", "A2"),
    "string_index_no_table": ("bad_shared_string_index", "A2"),
    "row_number": (None, None),  # its cell names its own row: nothing is lost
    "row_number_tree": ("cell_outside_sheet", None),
    "alignment": ("bad_style", None),
    "style_lists": ("bad_style", None),
}


@pytest.mark.parametrize("name", sorted(HUGE_INT_ISSUES))
def test_an_integer_past_64_bits_is_a_typed_warning_and_the_rest_is_read(name):
    tables = run_pipeline(huge_int_files()[name], until="normalized_grids")
    code, ref = HUGE_INT_ISSUES[name]
    found = issues(tables)
    assert code is None or any(c == code and s == "warning" and (ref is None or r == ref)
                               for c, s, r in found), found
    assert not any(s == "error" for _, s, _ in found), found
    cells = {(c["row"], c["col"]): c for c in tables["parsed_cells"].to_pylist()}
    assert cells[(1, 1)]["value"] == "first"  # the rest of the sheet is read
    if name.startswith("style_id"):
        assert cells[(2, 1)]["style_index"] == 0 and cells[(2, 1)]["value"] == "1"
    if name.startswith("string_index"):
        assert (2, 1) not in cells  # the cell names no string: empty
    if name.startswith("row_number"):
        assert tables["parsed_sheets"].column("hidden_rows").to_pylist() == [[]]


def test_the_huge_int_files_hold_a_number_past_64_bits():
    assert int(HUGE_INT) > 2**64
    assert all(HUGE_INT.encode() in data for data in map(_unzipped, huge_int_files().values()))


def _unzipped(data: bytes) -> bytes:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return b"".join(zf.read(n) for n in zf.namelist())
