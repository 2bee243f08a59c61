"""Issue kind 8, "Visible text in no chunk": every non-empty visible cell's text reaches a chunk,
and the lost-value rule (``values_in_output``) counts chunks, not renderings.

Instruction lines at the top of a form (an e-mail address, a fax number, a deadline, each a
bold cell on its own row) are ``title`` blocks; the fixtures are built here with openpyxl and
run through the real stages.
"""

from __future__ import annotations

import io

import pytest
from openpyxl import Workbook
from openpyxl.styles import Font

from extraction_assets.core.render.escape import md_text
from extraction_assets.pipeline import run_pipeline, stages

INSTRUCTIONS = ["Send the completed form to orders@example.com",
                "Fax: +44 20 7946 0018",
                "Deadline: 30 June 2024, 17:00"]


def words(text: str) -> int:
    return len(text.split())


def order_form(extra_lines: int = 0) -> bytes:
    """A form: a large title, the instruction lines in bold (``extra_lines`` more of them), a
    blank row, then a header and five data rows; and a sheet holding only such lines."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Order form"
    ws["A1"] = "Supplier order form"
    ws["A1"].font = Font(bold=True, size=16)
    lines = INSTRUCTIONS + [f"Rule {k}: write one item per row" for k in range(extra_lines)]
    for row, line in enumerate(lines, start=2):
        ws.cell(row, 1, line).font = Font(bold=True)
    ws.append([])
    ws.append(["Item", "Quantity", "Unit price"])
    for i in range(5):
        ws.append([f"Widget {i}", i + 1, 2.5 * i])
    notes = wb.create_sheet("How to return")
    for row, line in enumerate(INSTRUCTIONS, start=1):
        notes.cell(row, 1, line).font = Font(bold=True, size=14 if row == 1 else 11)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def lost_issues(tables) -> list[dict]:
    return [i for i in tables["extraction_issues"].to_pylist()
            if i["code"] == "value_not_in_output"]


@pytest.mark.parametrize("max_tokens", [512, 40])
def test_kind8_instruction_lines_above_a_form_reach_a_chunk(max_tokens):
    data = order_form(extra_lines=6 if max_tokens < 100 else 0)
    tables = run_pipeline(data, count_tokens=words, max_tokens=max_tokens)
    chunks = tables["chunks"].to_pylist()
    for sheet in ("Order form", "How to return"):
        texts = [c["text"] for c in chunks if c["sheet_name"] == sheet]
        for line in INSTRUCTIONS:
            assert any(md_text(line) in text for text in texts), (sheet, line, texts)
    assert not lost_issues(tables)
    assert max(c["n_tokens"] for c in chunks) <= max_tokens
    cells = [c["display_text"] for c in tables["cells"].to_pylist() if c["display_text"]]
    assert all(any(md_text(text) in c["text"] for c in chunks) for text in cells)
    again = run_pipeline(data, count_tokens=words, max_tokens=max_tokens)["chunks"]
    assert again.column("chunk_id").to_pylist() == [c["chunk_id"] for c in chunks]


def test_kind8_standalone_lines_are_one_text_and_a_title_heads_its_table():
    chunks = run_pipeline(order_form(), count_tokens=words)["chunks"].to_pylist()
    (table,) = [c for c in chunks if "| Widget 0 |" in c["text"]]
    assert table["heading_path"][-1] == INSTRUCTIONS[2]  # the line right above the table
    # the lines above it lead the table's chunk (alone, they would outrank its rows)
    assert "\n\n" + "\n".join(map(md_text, INSTRUCTIONS[:2])) + "\n\n| Item |" in table["text"]
    assert not [c for c in chunks if c["sheet_name"] == "Order form"
                and md_text(INSTRUCTIONS[0]) in c["text"] and c is not table]
    (notes,) = [c for c in chunks if c["sheet_name"] == "How to return"]
    assert notes["text"].endswith("\n\n" + "\n".join(INSTRUCTIONS[1:]))


def test_kind8_a_block_in_no_chunk_is_a_lost_value(monkeypatch):
    """The rule fails when a block reaches the renderings but no chunk: the form's
    instruction lines cut out of its chunk, and the table's records of rows 9 and 10."""
    real = stages.chunk_sheet

    def drop(blocks, records, *args):  # the fault: titles, and two records, in no chunk
        kept = []
        for chunk in real(blocks, records, *args):
            if chunk.sheet_name == "Order form":
                chunk.text = chunk.text.replace("\n".join(map(md_text, INSTRUCTIONS[:2])), "")
            chunk.rows = [r for r in chunk.rows if r not in (9, 10)]
            kept.append(chunk)
        return kept

    monkeypatch.setattr(stages, "chunk_sheet", drop)
    p = stages.parse_stage("wb", order_form()).tables
    n = stages.normalize_stage("wb", p["parsed_cells"], p["parsed_sheets"], p["styles"],
                               p["workbook_properties"]).tables
    s = stages.segment_stage("wb", n["cells"], n["sheets"]).tables
    out = stages.render_stage("wb", "form.xlsx", n["cells"], n["sheets"], s["blocks"],
                              s["block_columns"], words, 512)
    lost = [(i.sheet_name, i.ref, i.severity) for i in out.issues
            if i.code == "value_not_in_output"]
    assert ("Order form", "A2", "error") in lost and ("Order form", "A3", "error") in lost
    assert {("Order form", f"{col}{row}", "error") for col in "ABC" for row in (9, 10)} \
        <= set(lost)
    assert out.facts["lost_values"] == len(lost) > 0
    assert any("record is in no chunk" in i.message for i in out.issues)


def test_each_part_of_a_long_text_cites_the_rows_of_its_own_lines():
    """A column of 3,000 numbers is one text block cut in many chunks: each chunk cites the
    rows (and the range) of the lines it holds, so together they cite each row once, instead
    of every chunk citing all 3,000 rows (a 100,000-row column made 51 million row numbers
    and 2.3 GB); a cell with a line break stays on its row, and every value reaches a chunk."""
    wb = Workbook()
    ws = wb.active
    for row in range(1, 3001):
        ws.cell(row, 2, f"line {row}\nmore" if row == 7 else row * 7)
    buf = io.BytesIO()
    wb.save(buf)
    tables = run_pipeline(buf.getvalue(), count_tokens=words, max_tokens=60)
    chunks = sorted(tables["chunks"].to_pylist(), key=lambda c: c["rows"][0])
    assert len(chunks) > 50 and not lost_issues(tables)
    cited = [row for c in chunks for row in c["rows"]]
    assert cited == list(range(1, 3001))
    for c in chunks:
        assert c["a1_ranges"] == [f"B{c['rows'][0]}:B{c['rows'][-1]}"]
        first, last = c["rows"][0], c["rows"][-1]
        numbers = [int(w) for w in c["text"].split() if w.isdigit()]
        assert numbers and set(numbers) <= {r * 7 for r in range(first, last + 1)}
    assert "line 7" in next(c["text"] for c in chunks if 7 in c["rows"])
