"""Benchmark of the pipeline against reference readers: ``python -m tools.bench``.

* :mod:`.workbooks` -- deterministic generated workbooks (orders of 10k..1M cells, a wide
  sheet, 50,000 merged ranges, 200 sheets);
* :mod:`.measure` -- timed runs in this process: our stages and the reference readers;
* :mod:`.runs` -- timed runs through Dagster: one partition end to end, files in parallel;
* :mod:`.main` -- the command: tables, targets, JSON.
"""

from tools.bench.workbooks import generate_workbook

__all__ = ["generate_workbook"]
