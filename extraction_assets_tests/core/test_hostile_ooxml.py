"""Hostile OOXML input, third pass (issue #34): integers past 64 bits, parts reached by
several references, start tags of millions of attributes. Every input is built here (the
recipes of :mod:`tools.bench.hostile`, scaled down) and run through the real stages."""

from __future__ import annotations

import io
import zipfile

import pytest

from extraction_assets.core.limits import Limits
from extraction_assets.core.package import StartTagCheck
from extraction_assets.pipeline import StageError, run_pipeline
from tools.bench.hostile import RECIPES
from tools.bench.hostile_recipes import HUGE_INT, huge_int_files, package, workbook, worksheet


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


@pytest.mark.parametrize("tree", ["", "<!-- the tree reader -->"])
@pytest.mark.parametrize("digit", ["²", "٣"])
def test_a_digit_that_is_no_ascii_digit_names_no_shared_string(digit, tree):
    sheet = worksheet(f'<row r="1"><c r="A1" t="s" s="{digit}"><v>{digit}</v></c></row>{tree}')
    tables = run_pipeline(workbook([("S", sheet)]), until="parsed_sheets")
    assert ("bad_shared_string_index", "warning", "A1") in issues(tables)
    assert not any(s == "error" for _, s, _ in issues(tables))


def test_the_huge_ints_recipe_ends_in_one_warning_of_each_kind():
    _, data = RECIPES["huge_ints"].build(0.01)  # 2,000 cells of 2**64 + 1
    tables = run_pipeline(data, until="normalized_grids")
    assert sorted(c for c, _, _ in issues(tables)) == [
        "bad_shared_string_index", "bad_style", "bad_style", "cell_outside_sheet"]
    assert tables["parsed_cells"].column("value").to_pylist() == ["first"]


def test_the_huge_int_files_hold_a_number_past_64_bits():
    assert int(HUGE_INT) > 2**64
    assert all(HUGE_INT.encode() in data for data in map(_unzipped, huge_int_files().values()))


def _unzipped(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return b"".join(zf.read(n) for n in zf.namelist())


# -- a part reached by several references ------------------------------------------------------
@pytest.fixture
def calamine_reads(monkeypatch) -> list[list[str]]:
    """The sheet names of each second read (python-calamine) of the dual read."""
    import extraction_assets.pipeline.trust as trust

    reads: list[list[str]] = []
    real = trust.second_read

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        reads.append(sorted(out))
        return out

    monkeypatch.setattr(trust, "second_read", spy)
    return reads


def test_the_dual_read_reads_a_part_shared_by_many_sheets_once(calamine_reads):
    _, data = RECIPES["shared_part"].build(0.01)  # 50 sheets on one part of 100 x 10 cells
    tables = run_pipeline(data, until="parsed_sheets", dual_read_max_cells=100_000)
    assert calamine_reads == [["S1"]]  # not 50 reads of 1,000 cells
    assert tables["review_items"].num_rows == 0
    assert [c for c, _, _ in issues(tables)].count("shared_sheet_part") == 49


def test_the_dual_read_skips_sheets_whose_dense_rectangle_is_too_large(calamine_reads):
    far = '<row r="100000"><c r="CV100000"><v>2</v></c></row>'  # 2 cells, 10 M from A1
    data = workbook([("S", worksheet(f'<row r="1"><c r="A1"><v>1</v></c></row>{far}'))])
    tables = run_pipeline(data, until="parsed_sheets", dual_read_max_cells=100_000)
    assert calamine_reads == []
    assert ("dual_read_skipped", "info", None) in issues(tables)
    assert tables["parsed_cells"].num_rows == 2


def test_a_drawing_chart_image_comments_and_table_reached_by_many_sheets_are_read_once(
        monkeypatch):
    from extraction_assets.core.package import PackageReader

    opened: list[str] = []
    real = PackageReader.open

    def spy(self, name, *args, **kwargs):
        opened.append(name.lower())
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(PackageReader, "open", spy)
    _, data = RECIPES["shared_objects"].build(0.01)  # 50 sheets, one drawing of 10 anchors
    tables = run_pipeline(data, until="parsed_sheets")
    kinds = [o["kind"] for o in tables["sheet_objects"].to_pylist()]
    assert (kinds.count("chart"), kinds.count("picture")) == (1, 5)
    assert (kinds.count("comment"), kinds.count("table")) == (1, 1)
    shared = [i for i in tables["extraction_issues"].to_pylist() if i["code"] == "shared_part"]
    assert sorted(next(w for w in i["message"].split() if w.startswith("xl/"))  # one a part
                  for i in shared) == [
        "xl/charts/chart1.xml", "xl/comments1.xml", "xl/drawings/drawing1.xml",
        "xl/tables/table1.xml"]
    assert opened.count("xl/media/image1.png") == 1
    assert opened.count("xl/worksheets/sheet1.xml") == 2  # its cells, then the chart's
    assert opened.count("xl/drawings/drawing1.xml") == 1


# -- one element of many attributes ------------------------------------------------------------
def _as_utf16(data: bytes) -> bytes:
    """``data`` (an xlsx) with its worksheet part in UTF-16 (with a byte-order mark)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = sheet.replace('encoding="UTF-8"',
                                                      'encoding="UTF-16"').encode("utf-16")
    return package(parts)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_a_start_tag_past_max_start_tag_bytes_is_refused_before_it_is_parsed(encoding):
    _, data = RECIPES["many_attributes"].build(0.1)  # 250,000 attributes: 2.9 MB of one tag
    error = refused(data if encoding == "utf-8" else _as_utf16(data))
    assert error.error.code == "limit_exceeded"
    assert error.error.message == (
        "part xl/worksheets/sheet1.xml has a start tag longer than 1048576 bytes "
        "(max_start_tag_bytes; an element of too many or too long attributes)")
    assert ("limit_exceeded", "error", None) in [
        (i.code, i.severity, i.ref) for i in error.output.issues]


def test_long_text_cdata_and_comments_are_no_long_start_tag():
    long = "word " * 300_000  # 1.5 MB after a short tag, in CDATA and in a comment
    sheet = worksheet(f'<row r="1"><c r="A1" t="inlineStr"><is><t>{long}</t></is></c>'
                      f'<c r="B1" t="inlineStr"><is><t><![CDATA[{long} > <]]></t></is></c>'
                      f"</row><!-- {long} < -->", before=f'<cols><col min="1" max="1" '
                      f'width="{"9" * 1000}"/></cols>')
    tables = run_pipeline(workbook([("S", sheet)]), until="parsed_sheets",
                          limits=Limits(max_start_tag_bytes=1_000_000))
    assert tables["parsed_cells"].num_rows == 2


def test_a_start_tag_check_holds_one_tag_at_most():
    check = StartTagCheck(100)
    assert not check.feed(b'<?xml version="1.0"?><a b="' + b">" * 90 + b'">')
    assert not check.feed(b"text " * 1000 + b'<c d="1"')  # a tag across two reads
    assert check.feed(b' e="2"' * 20)
    image = StartTagCheck(100)  # not XML: never checked
    assert not image.feed(b"\x89PNG\r\n\x1a\n" + b"<" + b"x" * 1000)


def refused(data: bytes) -> StageError:
    with pytest.raises(StageError) as info:
        run_pipeline(data, until="parsed_sheets")
    return info.value
