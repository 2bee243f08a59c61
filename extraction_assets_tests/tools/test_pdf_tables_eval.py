"""tools.pdf_tables_eval: generated pages carry the rows of their tables, and the scoring counts
a table exact only when its rows come out as generated."""

from __future__ import annotations

import io

import pdfplumber

from tools import pdf_tables_eval
from tools.pdf_tables_eval import build_page, score


def test_a_generated_page_holds_its_tables_text():
    data, gold = build_page(3)
    assert gold and all(len(rows) >= 3 for _, rows in gold)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        text = pdf.pages[0].extract_text()
    for _, rows in gold:
        assert all(cell in text for cell in rows[-1])
    assert build_page(3)[1] == gold  # the same seed, the same page


def test_scores_by_fold_and_finder_and_a_broken_finder_scores_lower(monkeypatch):
    figures = score(range(6))
    assert set(figures) == {"tuning", "held-apart"}
    product = figures["held-apart"]["product"]
    assert product["exact"] >= 0.8 and product["found"] >= product["exact"]
    assert figures["held-apart"]["pdfplumber text"]["exact"] < product["exact"]
    # a finder that cuts the last row off every table finds them all but none exact
    real = pdf_tables_eval.page_tables

    def short(page):
        tables = real(page)
        for table in tables:
            last = max(c.row for c in table.cells)
            table.cells = [c for c in table.cells if c.row < last]
        return tables

    monkeypatch.setattr(pdf_tables_eval, "page_tables", short)
    broken = score(range(6))["held-apart"]["product"]
    assert broken["found"] == product["found"] and broken["exact"] == 0.0
