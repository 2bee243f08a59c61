"""Score table (and form) segmentation against labelled workbooks.

Usage::

    python -m tools.evaluate [--seeds N] [--start S] [--corpus DIR]
                             [--labelled DIR] [--json OUT] [--worst N] [--show-held-apart]

Three label sets are scored with the real pipeline (:func:`~.score.predict` runs the stages
through ``segmented_blocks`` with :func:`extraction_assets.pipeline.run_pipeline`):

(a) **Generated layouts** — :func:`generate_layout` builds a random but realistic workbook from a
    seed (1–3 tables per sheet, titles, unit lines, notes, 1–4 header rows with merged parents,
    row groups, totals, side-by-side and stacked tables, sparse tables with an empty interior row
    or spacer column, borders or none, Excel tables (ListObjects) with a note line right under
    some, frozen panes under a header, forms of label/value pairs, English and Japanese text,
    numbers, dates, currency) and returns the truth with it. Tables and forms are scored
    separately (:func:`score` and :func:`diagnose` take one ``kind`` at a time): the tables row
    gives range and header scores, the forms row (``key_value`` blocks) range scores only.
(b) **Corpus ground truth** under ``$EXTRACTION_ASSETS_CORPUS/groundtruth`` (default
    ``<repo>/../shared/corpus``), where it says something about tables:

    * ``docling/*.json`` — DoclingDocument exports. Every table has ``prov[0].bbox`` in sheet
      cell coordinates (0-based, ``l``/``t`` inclusive, ``r``/``b`` exclusive) and belongs to a
      ``sheet`` group named after the sheet, so its A1 range is exact. Tables of fewer than 2 rows
      or 2 columns (Docling's 1x1 "tables" are titles) are left out, following our own rule that
      a table has at least two rows and two columns. Headers come from the cells flagged
      ``column_header`` (levels joined by ``" > "``), except where a header cell spans
      several columns: Docling flags only the first row as header, so under a merged parent its
      labels miss the sub-header (xlsx_01 ``Sheet3``) and the table gets no header truth. Docling's output is another extractor's
      answer, not a human label: read its numbers as agreement, not as accuracy.
    * ``unstructured/test_xlsx.py`` (``partition_xlsx("example-docs/X") == [Title(..),
      Table(..), ...]`` assertions without options) and ``unstructured/*.xlsx.json`` element
      exports — element sequences without coordinates. They are aligned row by row with the
      sheet's non-empty rows (each element consumes whole rows until its words are used up); a
      ``Table`` element's range is the bounding box of the rows it consumed; one-row or
      one-column "tables" are left out as for Docling. No header truth. Unstructured puts
      single-cell rows right below a table outside it (``ListItem``/``Title``), which is our
      notes convention too.

Conventions (the same as ``shared/cases/EXPECTED.md``: "a table is given by sheet name and A1
range"):

* A table's range is the bounding box of its header rows, data rows and totals/summary rows,
  including an empty interior row or spacer column that lies inside it. It excludes the title
  line(s), a unit line such as ``(単位：千円)`` above the header, and notes or footnotes below it
  (``※ …``, ``Note: …``, ``* Source: …``).
* A column's header is the path of its header levels from top to bottom joined by ``" > "``
  (``2023 > Q1``); a vertically merged label (``Region`` merged over two header rows) is one
  level. Fully empty spacer columns have no header and are not columns of the table.
* Header labels are compared by **sheet column** (for an exactly matched range this is the
  position in the table).
* A form's range is the bounding box of its label and value cells, a merged value with all the
  cells it covers (a value merged over B7:D7 in a form of columns A:B makes it A:D).

(c) **Human-labelled real spreadsheets** under ``$EXTRACTION_ASSETS_LABELLED`` (default
    ``<repo>/../shared/labelled``): DECO's Enron workbooks and the Tasi web spreadsheets, scored
    by :mod:`tools.labelled` (exact / IoU >= 0.8 / EoB-2 tables; for DECO also
    header, total and group label rows), and HiTab's StatCan tables (header paths and row paths
    of the cells and rows its questions use). Each set is scored whole and by fold
    (:mod:`tools.folds`); failures are listed for the look folds only unless
    ``--show-held-apart``.

Modules: :mod:`.generate` (the layouts), :mod:`.score` (prediction, scores, failure kinds),
:mod:`.truth` (corpus ground truth), :mod:`.runs` (the report).
"""

from tools.evaluate.generate import generate_layout
from tools.evaluate.runs import evaluate_corpus, evaluate_generator, main
from tools.evaluate.score import diagnose, iou, predict, score
from tools.evaluate.truth import corpus_truth, docling_truth, unstructured_truth

__all__ = ["corpus_truth", "diagnose", "docling_truth", "evaluate_corpus",
           "evaluate_generator", "generate_layout", "iou", "main", "predict", "score",
           "unstructured_truth"]
