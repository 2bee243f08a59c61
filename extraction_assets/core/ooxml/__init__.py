"""The SpreadsheetML reader (ECMA-376 Part 1), one module per part: :mod:`.workbook` (the package
and its sheets), :mod:`.styles`, :mod:`.strings` (shared strings), :mod:`.rels`, :mod:`.worksheet`
(cells, with :mod:`.sheet_cells`) and :mod:`.objects` (comments, hyperlinks, validations,
tables, pivot tables, drawings, charts, names)."""
