"""Records and token-bounded Markdown chunks from segmented blocks.

* A **record** is one data row of a table: header -> typed value (int, float, bool, ISO date /
  datetime / time string, string; ``None`` for an empty cell), with the display text alongside,
  a role (``data`` or ``total``) and its source (sheet, 1-based row, A1 range of the row).
* A ``key_value`` block (a form) gives one record, label -> typed value, cited at its first row
  and whole range; its Markdown and chunk text are ``Label: value`` lines.
* A **chunk** is Markdown: ATX headings from the block's heading path (``#`` sheet, ``##``
  title), then a GFM pipe table whose header row is repeated in every chunk of a split table, or
  the text of non-table blocks. Its size is counted with the embedder's own tokenizer and kept
  within ``max_tokens`` by splitting tables on row boundaries. ``chunk_id`` is the sha256 of the
  text, sheet name and A1 ranges, so unchanged content keeps its id across file versions.

The records of a block are built column-wise (:class:`~.records.TableRecords`): one gather of the
block's cells from the StyledGrid, then Arrow string kernels for the JSON, Markdown, HTML and
text of every row at once; Python runs per block and per chunk, not per cell.

Modules: :mod:`.records` (records of tables and forms), :mod:`.escape` (JSON, HTML and
Markdown escaping), :mod:`.markdown`, :mod:`.html`, :mod:`.chunks` (token-bounded chunks),
:mod:`.coverage` (the no-value-lost rule) and :mod:`.picture` (the segmentation pictures).
"""
