"""The worksheet part reader (extraction_assets.core.ooxml.worksheet): the fast reader, which extracts
the cells of runs of rows in threads, gives exactly the cells of the tree reader (libxml2's
``iterparse``), whatever the form of the XML and wherever the blocks of the part are cut."""

from __future__ import annotations

import io

import pytest

from extraction_assets.core.errors import CorruptWorkbookError
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.ooxml import sheet_cells
from extraction_assets.core.ooxml.worksheet import WorksheetReader

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
STRINGS = ["Region", "North", "Süd", "東京"]


def part(rows: str, prefix: str = "") -> bytes:
    """A worksheet part holding ``rows`` in its ``<sheetData>`` (``prefix``: the namespace
    prefix of every element, e.g. ``"x:"``)."""
    declaration = f'xmlns:{prefix[:-1]}="{NS}"' if prefix else f'xmlns="{NS}"'
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f"<{prefix}worksheet {declaration}><{prefix}sheetData>{rows}</{prefix}sheetData>"
            f'<{prefix}mergeCells count="1"><{prefix}mergeCell ref="A1:B1"/></{prefix}mergeCells>'
            f"</{prefix}worksheet>").encode()


def reader(data: bytes) -> WorksheetReader:
    return WorksheetReader(lambda: io.BytesIO(data), STRINGS, Budget(Limits()))


def fast_and_tree(data: bytes) -> tuple[WorksheetReader, WorksheetReader]:
    """The part read by :meth:`WorksheetReader.read` and by the tree reader alone."""
    fast, tree = reader(data), reader(data)
    fast.read()
    tree._read_tree()
    return fast, tree


def facts(r: WorksheetReader) -> tuple:
    """Cells, hidden rows, row heights, issues and the frame's elements outside the cells."""
    frame = [el.tag.rsplit("}", 1)[-1] for el in r.frame.iter()]
    return (r.cells.to_pylist(), r.hidden_rows, r.row_heights, r.issues.items,
            [tag for tag in frame if tag not in ("sheetData", "row", "c", "v", "f", "is", "t")])


def canonical_rows(n: int) -> str:
    """``n`` rows in Excel's attribute order: shared and inline strings, numbers, booleans,
    errors, shared formulas, entities, styled empty cells, a hidden row and a custom height."""
    rows = []
    for r in range(1, n + 1):
        attrs = ' hidden="1"' if r % 97 == 0 else ' ht="30" customHeight="1"' if r % 89 == 0 else ""
        rows.append(
            f'<row r="{r}"{attrs}><c r="A{r}" t="s"><v>{r % 4}</v></c>'
            f'<c r="B{r}" s="2"><v>{r * 1.5}</v></c>'
            f'<c r="C{r}" t="inlineStr"><is><t xml:space="preserve"> cell {r} &amp; co</t></is></c>'
            f'<c r="D{r}" t="b"><v>{r % 2}</v></c>'
            + (f'<c r="E{r}"><f t="shared" ref="E{r}:E{r + 9}" si="{r // 10}">B{r}*2</f><v>{r * 3}</v></c>'
               if r % 10 == 1 else f'<c r="E{r}"><f t="shared" si="{(r - 1) // 10}"/><v>{r * 3}</v></c>')
            + f'<c r="F{r}" s="3"/><c r="G{r}" t="e"><v>#N/A</v></c>'
            f'<c r="AA{r}" t="s" cm="1"><v>{(r + 1) % 4}</v></c></row>')
    return "".join(rows)


@pytest.mark.parametrize("block_bytes", [1 << 22, 4096, 1000])
def test_fast_reader_equals_tree_reader_across_block_cuts(monkeypatch, block_bytes):
    data = part(canonical_rows(2000))
    monkeypatch.setattr(sheet_cells, "BLOCK_BYTES", block_bytes)
    fast, tree = fast_and_tree(data)
    assert facts(fast) == facts(tree)
    cells = {(c["row"], c["col"]): c for c in fast.cells.to_pylist()}
    assert len(cells) == 2000 * 8
    assert cells[(3, 1)]["value"] == "東京" and cells[(3, 1)]["string_index"] == 3
    assert cells[(5, 3)]["value"] == " cell 5 & co"
    assert cells[(13, 5)]["formula"] == "B13*2"  # shifted from the master in E11
    assert cells[(1999, 5)]["formula"] == "B1999*2"
    assert cells[(7, 6)]["value"] is None and cells[(7, 6)]["style_index"] == 3
    assert cells[(7, 27)]["value"] == "Region"
    assert fast.hidden_rows[:2] == [97, 194] and fast.row_heights[89] == 30.0


@pytest.mark.parametrize("rows", [
    # attributes in another order and quoted with apostrophes
    "<row r='1'><c t='s' r='A1'><v>1</v></c><c s=\"2\" r=\"B1\"><v>7</v></c></row>",
    # white space other than a space after <c, and around attributes
    '<row r="1"><c\nr="A1"\tt="s"><v>2</v></c><c  r="B1" ><v>8</v></c></row>',
    # a comment and a processing instruction between cells
    '<row r="1"><c r="A1" t="s"><v>1</v></c><!-- <c r="B1"><v>9</v></c> --><?pi x?>'
    '<c r="C1"><v>3</v></c></row>',
    # CDATA in an inline string
    '<row r="1"><c r="A1" t="inlineStr"><is><t><![CDATA[a <b> & c]]></t></is></c></row>',
    # rich inline text and a cell with no reference
    '<row r="1"><c r="A1" t="inlineStr"><is><r><t>x</t></r><r><t>y</t></r></is></c>'
    '<c t="s"><v>0</v></c></row>',
    # unknown attributes after the canonical ones
    '<row r="1"><c r="A1" t="s" foo="bar"><v>1</v></c><c r="B1"><v>1</v></c></row>',
])
@pytest.mark.parametrize("block_bytes", [1 << 22, 64])
def test_other_forms_read_as_the_tree_reader_reads_them(monkeypatch, rows, block_bytes):
    monkeypatch.setattr(sheet_cells, "BLOCK_BYTES", block_bytes)
    fast, tree = fast_and_tree(part(rows * 3))
    assert facts(fast) == facts(tree)
    assert fast.cells.num_rows > 0


@pytest.mark.parametrize("block_bytes", [1 << 22, 512])
def test_namespace_prefix(monkeypatch, block_bytes):
    monkeypatch.setattr(sheet_cells, "BLOCK_BYTES", block_bytes)
    rows = "".join(f'<x:row r="{r}"><x:c r="A{r}" t="s"><x:v>1</x:v></x:c>'
                   f'<x:c r="B{r}"><x:v>{r}</x:v></x:c></x:row>' for r in range(1, 200))
    fast, tree = fast_and_tree(part(rows, "x:"))
    assert facts(fast) == facts(tree)
    assert [c["value"] for c in fast.cells.to_pylist()[:2]] == ["North", "1"]


def test_malformed_run_in_a_later_block_falls_back_to_a_typed_error(monkeypatch):
    monkeypatch.setattr(sheet_cells, "BLOCK_BYTES", 2048)
    data = part(canonical_rows(200) + '<row r="201"><c r="A201"><v>1</v></row>')
    with pytest.raises(CorruptWorkbookError):
        reader(data).read()
