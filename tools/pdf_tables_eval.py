"""How well tables on digital PDF pages come out: generated report pages (fpdf2) with prose,
ruled, rule-only-between-rows and unruled tables, two-column prose and key-value lines, each
table's rows known, read by the product's finder and by two pdfplumber baselines.

    python -m tools.pdf_tables_eval [--seeds 200] [--json OUT]

Seeds are split in two folds by parity: the **tuning** fold (even seeds), the only pages
looked at while the finder's constants (:mod:`extraction_assets.core.documents.pdf_tables`)
were set, and the **held-apart** fold (odd seeds). Per fold and finder, for every generated
table: ``found`` (some table found holds at least half of its cell texts), ``exact`` (the
found table's rows, empty columns dropped, are its rows), ``rows`` (share of its rows that are
a row of the found table); and ``false tables`` (tables found holding no generated table), per
page. Finders: ``product`` (:func:`~extraction_assets.core.documents.pdf_tables.page_tables`),
``pdfplumber lines`` (``find_tables()`` with its default settings: ruled tables) and
``pdfplumber text`` (``find_tables`` with the ``text`` strategy over the whole page).
"""

from __future__ import annotations

import io
import json
import random
from collections import defaultdict
from pathlib import Path

import typer

from extraction_assets.core.documents.pdf_tables import page_tables

app = typer.Typer(add_completion=False)

WORDS = ("station pump intake river basin screen flow pressure valve spring summer winter "
         "budget plan repair inspection supplier order delivery report north south east west "
         "pipe motor seal bearing filter tank level sensor alarm shift crew cost hours stop "
         "week month quarter total average region district plant unit line service").split()
BORDERS = {"ruled": "ALL", "rows ruled": "HORIZONTAL_LINES", "unruled": "NONE"}


def _phrase(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _value(rng: random.Random, kind: str) -> str:
    number = rng.randint(0, 99_999)
    return {"count": str(rng.randint(0, 999)), "grouped": f"{number:,}",
            "money": f"{number / 100:,.2f}", "percent": f"{rng.random() * 100:.1f}%",
            "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "code": f"{rng.choice('ABCDEFGH')}-{rng.randint(100, 999)}",
            "word": _phrase(rng, 1, 2).capitalize()}[kind]


def _table(rng: random.Random) -> list[list[str]]:
    n_cols, n_rows = rng.randint(2, 7), rng.randint(2, 14)
    kinds = ["word"] + [rng.choice(["count", "grouped", "money", "percent", "date", "code",
                                    "word"]) for _ in range(n_cols - 1)]
    header = [_phrase(rng, 1, 2).title() for _ in range(n_cols)]
    rows = [[_value(rng, k) for k in kinds] for _ in range(n_rows)]
    return [header, *rows]


def build_page(seed: int) -> tuple[bytes, list[tuple[str, list[list[str]]]]]:
    """A one-page PDF for ``seed`` and its tables as ``(kind, rows)`` (header row first)."""
    from fpdf import FPDF

    rng = random.Random(seed)
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.add_page()
    size = rng.choice([9, 10, 11, 12])
    gold: list[tuple[str, list[list[str]]]] = []
    pdf.set_font("helvetica", "B", size + 4)
    pdf.cell(0, 10, _phrase(rng, 2, 5).title(), new_x="LMARGIN", new_y="NEXT")
    while pdf.get_y() < 200:
        pdf.set_font("helvetica", size=size)
        what = rng.choices(["prose", "table", "two columns", "key value"], [4, 4, 1, 1])[0]
        if what == "prose":
            pdf.multi_cell(0, size * 0.5, ". ".join(_phrase(rng, 6, 14).capitalize()
                                                   for _ in range(rng.randint(2, 5))) + ".",
                           align=rng.choice(["J", "L"]))
        elif what == "two columns":
            top = pdf.get_y()
            for x in (pdf.l_margin, pdf.l_margin + 95):
                pdf.set_xy(x, top)
                pdf.multi_cell(85, size * 0.5, ". ".join(_phrase(rng, 8, 14).capitalize()
                                                         for _ in range(3)) + ".", align="J")
            pdf.set_x(pdf.l_margin)
        elif what == "key value":
            for _ in range(rng.randint(2, 4)):
                pdf.cell(50, size * 0.5, _phrase(rng, 1, 2).title() + ":")
                pdf.cell(0, size * 0.5, _phrase(rng, 2, 6), new_x="LMARGIN", new_y="NEXT")
        else:
            kind = rng.choice(list(BORDERS))
            rows = _table(rng)
            pad = rng.uniform(2, 10)
            heading = rng.random() < 0.8
            widths = []
            for k in range(len(rows[0])):
                pdf.set_font("helvetica", "B" if heading else "", size)
                wide = pdf.get_string_width(rows[0][k])
                pdf.set_font("helvetica", size=size)
                widths.append(max(wide, *(pdf.get_string_width(r[k]) for r in rows[1:])) + pad)
            if sum(widths) > pdf.epw:
                continue  # would wrap: a table of one line a row is what this measures
            aligns = ["LEFT"] + [rng.choice(["LEFT", "RIGHT", "CENTER"]) for _ in widths[1:]]
            with pdf.table(col_widths=widths, width=sum(widths), align="LEFT",
                           borders_layout=BORDERS[kind], text_align=aligns,
                           first_row_as_headings=heading,
                           line_height=size * 0.5) as table:
                for values in rows:
                    row = table.row()
                    for value in values:
                        row.cell(value)
            gold.append((kind, rows))
        pdf.ln(rng.uniform(2, 8))
    return bytes(pdf.output()), gold


def _rows(table) -> list[list[str]]:
    """A found table's rows (product: its cells; pdfplumber: ``extract()``), texts with spaces
    collapsed, empty columns and rows dropped."""
    if hasattr(table, "ruling"):
        n_rows = max(c.row + c.row_span for c in table.cells)
        n_cols = max(c.col + c.col_span for c in table.cells)
        grid = [[""] * n_cols for _ in range(n_rows)]
        for c in table.cells:
            grid[c.row][c.col] = c.text
    else:
        grid = [[c or "" for c in row] for row in table.extract()]
    grid = [[" ".join(c.split()) for c in row] for row in grid]
    used = [k for k in range(len(grid[0]) if grid else 0) if any(r[k] for r in grid)]
    return [[r[k] for k in used] for r in grid if any(r[k] for k in used)]


def _finders(page) -> dict[str, list[list[list[str]]]]:
    return {"product": [_rows(t) for t in page_tables(page)],
            "pdfplumber lines": [_rows(t) for t in page.find_tables()],
            "pdfplumber text": [_rows(t) for t in page.find_tables(
                {"vertical_strategy": "text", "horizontal_strategy": "text"})]}


def score(seeds: range) -> dict:
    """Per fold (``tuning``: even seeds, ``held-apart``: odd) and finder, the measures of the
    module docstring, over the pages of ``seeds``."""
    import pdfplumber

    tally: dict = defaultdict(lambda: defaultdict(float))
    for seed in seeds:
        fold = "tuning" if seed % 2 == 0 else "held-apart"
        data, gold = build_page(seed)
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            found = _finders(pdf.pages[0])
        for finder, tables in found.items():
            t = tally[(fold, finder)]
            t["pages"] += 1
            matched = set()
            for kind, rows in gold:
                cells = {c for r in rows for c in r if c}
                best = max(range(len(tables)), default=None, key=lambda k: len(
                    cells & {c for r in tables[k] for c in r}))
                hit = best is not None and 2 * len(
                    cells & {c for r in tables[best] for c in r}) >= len(cells)
                t["tables"] += 1
                t[f"tables {kind}"] += 1
                if hit:
                    matched.add(best)
                    t["found"] += 1
                    t["exact"] += tables[best] == rows
                    t[f"exact {kind}"] += tables[best] == rows
                    t["rows"] += sum(r in tables[best] for r in rows) / len(rows)
            t["false"] += len(set(range(len(tables))) - matched)
    out: dict = {}
    for (fold, finder), t in sorted(tally.items()):
        n = max(t["tables"], 1)
        out.setdefault(fold, {})[finder] = {
            "pages": int(t["pages"]), "tables": int(t["tables"]),
            "found": round(t["found"] / n, 3), "exact": round(t["exact"] / n, 3),
            "rows": round(t["rows"] / n, 3),
            "false per page": round(t["false"] / max(t["pages"], 1), 3),
            **{f"exact {kind}": round(t[f"exact {kind}"] / max(t[f"tables {kind}"], 1), 3)
               for kind in BORDERS}}
    return out


@app.command()
def main(seeds: int = typer.Option(200, help="generated pages (half tuning, half held apart)"),
         json_out: Path | None = typer.Option(None, "--json", help="write the figures here")
         ) -> None:
    """Score the PDF table finders on generated pages; print one line per fold and finder."""
    figures = score(range(seeds))
    for fold, finders in figures.items():
        for finder, f in finders.items():
            typer.echo(f"{fold:10} {finder:17} tables={f['tables']} found={f['found']:.3f} "
                       f"exact={f['exact']:.3f} rows={f['rows']:.3f} "
                       f"false/page={f['false per page']:.3f}  exact by kind: "
                       + " ".join(f"{k}={f['exact ' + k]:.3f}" for k in BORDERS))
    if json_out:
        json_out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    app()
