"""Which formula evaluator computes what Excel computed: each formula cell of the shared corpus
and labelled files that has a cached value is evaluated again from the cached values of the
cells it reads (one level: its inputs are what Excel wrote), by each evaluator, and the result
compared with Excel's cached value.

    python -m tools.formula_eval [--corpus DIR] [--labelled DIR] [--per-file N] [--json OUT]

Per evaluator: formula cells evaluated, agreeing with the cache (numbers within 1e-9
relative, texts, booleans and error codes equal), differing, not computed (unsupported
function, unresolvable reference, the evaluator's own failure), and the seconds spent
evaluating. Evaluators: ``formulas`` (the product's, :mod:`extraction_assets.core.formula`)
and ``pycel`` (:class:`pycel.excelformula.ExcelFormula` over the same cells). LibreOffice's
recalculation works on whole files and is measured only where ``soffice`` is installed (it is
not on the machines these figures come from; see docs/formulas.md).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import typer

from extraction_assets.core.a1 import cell_ref
from extraction_assets.core.formula.evaluate import (
    FormulaEvaluator,
    NotComputed,
    SheetCells,
    cached_value,
)
from extraction_assets.core.open import open_workbook
from tools.paths import shared_dir
from tools.sweep import manifest_files

app = typer.Typer(add_completion=False)


class PycelEvaluator:
    """The same one-level evaluation through pycel's formula compiler: its cell and range
    callbacks read the cached values of the cells."""

    def __init__(self, sheets: dict[str, SheetCells]):
        from pycel.excelformula import ExcelFormula
        from pycel.excelutil import AddressCell, AddressRange

        self.sheets = sheets
        self.by_upper = {name.upper(): name for name in sheets}
        self._formula, self._cell, self._range = ExcelFormula, AddressCell, AddressRange
        self._context = ExcelFormula.build_eval_context(self._one, self._many)

    def _target(self, address) -> SheetCells:
        name = self.by_upper.get((address.sheet or "").upper())
        if name is None:
            raise NotComputed(f"sheet {address.sheet!r}")
        return self.sheets[name]

    def _value(self, sheet: SheetCells, position: int):
        return cached_value(sheet.types[position].as_py(), sheet.values[position].as_py())

    def _one(self, address):
        address = self._cell(address) if isinstance(address, str) else address
        sheet = self._target(address)
        found = sheet.positions(address.row, address.col_idx, address.row, address.col_idx)
        return self._value(sheet, int(found[0])) if len(found) else None

    def _many(self, address):
        address = self._range(address) if isinstance(address, str) else address
        sheet = self._target(address)
        r1, c1 = address.start.row or 1, address.start.col_idx or 1
        r2 = min(address.end.row or sheet.last_row, sheet.last_row)
        c2 = min(address.end.col_idx or sheet.last_col, sheet.last_col)
        grid = [[None] * (c2 - c1 + 1) for _ in range(max(r2 - r1 + 1, 0))]
        for p in sheet.positions(r1, c1, r2, c2).tolist():
            grid[sheet.rows[p] - r1][sheet.cols[p] - c1] = self._value(sheet, p)
        return tuple(tuple(row) for row in grid)

    def evaluate(self, formula: str, sheet: str, ref: str) -> tuple[str, str]:
        quoted = "'" + sheet.replace("'", "''") + "'"
        try:
            result = self._context(self._formula("=" + formula,
                                                 cell=self._cell(f"{quoted}!{ref}")))
        except Exception as exc:
            raise NotComputed(type(exc).__name__) from None
        if isinstance(result, tuple):
            result = result[0][0] if result and isinstance(result[0], tuple) else result[0]
        if result is None:
            return "n", "0"
        if isinstance(result, bool):
            return "b", "1" if result else "0"
        if isinstance(result, (int, float)):
            return "n", repr(float(result))
        if isinstance(result, str) and result in {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!",
                                                   "#NAME?", "#NUM!", "#N/A"}:
            return "e", result
        if isinstance(result, str):
            return "str", result
        raise NotComputed(f"result {type(result).__name__}")


def agrees(cached_type: str, cached: str, computed_type: str, computed: str) -> bool:
    """Whether a computed (data_type, value) is Excel's cached one."""
    if cached_type in (None, "n"):
        if computed_type != "n":
            return False
        a, b = float(cached), float(computed)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if cached_type == "b":
        return computed_type == "b" and (cached in ("1", "true", "TRUE")) == (computed == "1")
    if cached_type == "e":
        return computed_type == "e" and cached == computed
    return computed_type == "str" and cached == computed


def _files(corpus: Path, labelled: Path) -> list[Path]:
    """The corpus's OOXML workbooks (its manifest, :func:`tools.sweep.manifest_files`) and the
    labelled sets' (``*/files/``), those present."""
    files = [corpus / p for p in manifest_files(corpus) if p.endswith((".xlsx", ".xlsm"))] \
        if (corpus / "MANIFEST.tsv").exists() else []
    files += sorted(p for s in ("*.xlsx", "*.xlsm") for p in labelled.glob(f"*/files/{s}"))
    return [f for f in files if f.exists()]


def measure_file(path: Path, per_file: int) -> dict:
    """Outcome counts and seconds of each evaluator on one file's cached formula cells."""
    workbook = open_workbook(path.read_bytes(), filename=path.name)
    try:
        sheets = [(s.info.name, s.cells) for s in workbook.iter_sheets()]
    finally:
        workbook.close()
    date1904 = workbook.date1904
    index = {name: SheetCells(name, cells) for name, cells in sheets}
    formulas_of = {name: cells.column("formula") for name, cells in sheets}
    targets = []
    for name, cells in sheets:
        if cells.num_rows == 0:
            continue
        cached = pc.and_(pc.is_valid(cells.column("value")), pc.is_valid(cells.column("formula")))
        for p in np.flatnonzero(cached.to_numpy(zero_copy_only=False)).tolist():
            targets.append((name, p))
    targets = targets[:per_file]
    out = {}
    for label, make in (("formulas", lambda: FormulaEvaluator(index, date1904)),
                        ("pycel", lambda: PycelEvaluator(index))):
        evaluator = make()
        counts, reasons = Counter(), Counter()
        started = time.perf_counter()
        for name, p in targets:
            cells = index[name]
            formula = formulas_of[name][p].as_py()
            row, col = int(cells.rows[p]), int(cells.cols[p])
            try:
                if label == "formulas":
                    evaluator.check(formula)
                    evaluator.references(formula, name)
                    computed = evaluator.evaluate(formula, name, row, col)
                else:
                    computed = evaluator.evaluate(formula, name, cell_ref(row, col))
            except NotComputed as reason:
                counts["not_computed"] += 1
                reasons[str(reason)[:60]] += 1
                continue
            same = agrees(cells.types[p].as_py(), cells.values[p].as_py(), *computed)
            counts["agree" if same else "differ"] += 1
        out[label] = {"seconds": time.perf_counter() - started, **counts,
                      "reasons": dict(reasons.most_common(5))}
    return {"file": str(path), "formula_cells": len(targets), **out}


@app.command()
def main(corpus: Path = typer.Option(None, help="the shared corpus (default ../shared/corpus)"),
         labelled: Path = typer.Option(None, help="the labelled sets (default ../shared/labelled)"),
         per_file: int = typer.Option(3000, help="most formula cells measured per file"),
         json_out: Path = typer.Option(None, "--json", help="write the per-file results here")):
    """Measure the formula evaluators against Excel's cached values."""
    files = _files(shared_dir("corpus", corpus), shared_dir("labelled", labelled))
    results, totals = [], {"formulas": Counter(), "pycel": Counter()}
    seconds = {"formulas": 0.0, "pycel": 0.0}
    for path in files:
        try:
            result = measure_file(path, per_file)
        except Exception as exc:  # a file our reader refuses: not a formula measurement
            results.append({"file": str(path), "skipped": type(exc).__name__})
            continue
        if not result["formula_cells"]:
            continue
        results.append(result)
        for label in totals:
            seconds[label] += result[label]["seconds"]
            totals[label].update({k: v for k, v in result[label].items()
                                  if k in ("agree", "differ", "not_computed")})
    n = sum(r.get("formula_cells", 0) for r in results)
    measured = sum(1 for r in results if r.get("formula_cells"))
    print(f"{measured} files with cached formulas, {n:,} formula cells (at most {per_file} a file)")
    for label, c in totals.items():
        print(f"{label:9s} agree {c['agree']:6,} ({c['agree'] / max(n, 1):.3f})  differ "
              f"{c['differ']:5,}  not computed {c['not_computed']:5,}  "
              f"{seconds[label]:.2f} s ({seconds[label] / max(n, 1) * 1e3:.2f} ms a formula)")
    if json_out:
        json_out.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    app()
