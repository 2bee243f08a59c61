"""tools.formula_eval: each evaluator's result is compared with Excel's cached value."""

from __future__ import annotations

import io
import zipfile

import openpyxl
import pytest

from tools.formula_eval import agrees, measure_file


@pytest.mark.parametrize(("cached", "computed", "same"), [
    (("n", "440"), ("n", "440"), True),
    (("n", "0.1"), ("n", "0.10000000000000002"), True),
    (("n", "440"), ("n", "441"), False),
    (("n", "1"), ("b", "1"), False),
    (("b", "1"), ("b", "1"), True),
    (("b", "0"), ("b", "1"), False),
    (("e", "#DIV/0!"), ("e", "#DIV/0!"), True),
    (("e", "#DIV/0!"), ("e", "#N/A"), False),
    (("str", "Four (4)"), ("str", "Four (4)"), True),
    (("str", "4"), ("n", "4"), False),
])
def test_agrees(cached, computed, same):
    assert agrees(*cached, *computed) is same


def test_measure_file_counts_what_each_evaluator_gets_right(tmp_path):
    pytest.importorskip("pycel")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["A2"] = 2, 3
    ws["B1"] = "=A1*A2"
    ws["B2"] = "=NOSUCHFUNCTION(A1)"
    out = io.BytesIO()
    wb.save(out)
    # openpyxl writes no cached value: give B1 a right one and B2 any, as Excel would
    src = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    path = tmp_path / "cached.xlsx"
    with zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            body = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                body = body.replace(b"<f>A1*A2</f><v></v>", b"<f>A1*A2</f><v>6</v>")
                body = body.replace(b"<f>NOSUCHFUNCTION(A1)</f><v></v>",
                                    b"<f>NOSUCHFUNCTION(A1)</f><v>1</v>")
            dst.writestr(item, body)
    result = measure_file(path, per_file=100)
    assert result["formula_cells"] == 2
    for label in ("formulas", "pycel"):
        assert (result[label].get("agree"), result[label].get("not_computed")) == (1, 1), label
