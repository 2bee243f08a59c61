"""Data-quality checks on one partition's outputs, as plain functions (the assets report them as
Dagster asset checks, visible in the UI).

* ``cell_coverage`` — every non-empty cell of a visible sheet, outside hidden rows and columns,
  lies in exactly one block;
* ``values_in_output`` — every value of such a cell reaches its block's records, header or
  text (a cell inside a block but in no record is lost too: ``cell_coverage`` cannot see it);
* ``chunk_budget`` — every chunk is within the token budget;
* ``record_provenance`` — every record names its file, sheet, row and A1 range, and its row lies
  inside its block;
* ``rows_in_one_chunk`` — every table row is in exactly one chunk;
* ``heading_paths`` — every chunk has a non-empty heading path;
* ``one_row_per_unit`` — LanceDB holds exactly one row (its vector and full-text entry) per
  retrieval unit of the partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import cell_ref
from extraction_assets.core.blocks import FLOATING_KINDS
from extraction_assets.core.normalize import stripped_text

#: Most offending items listed in a check's metadata.
SAMPLE = 10


@dataclass
class CheckOutcome:
    """Result of one check: pass/fail, a one-line description and metadata for the UI."""

    passed: bool
    description: str
    metadata: dict = field(default_factory=dict)


def cell_coverage(cells: pa.Table, sheets: pa.Table, blocks: pa.Table) -> CheckOutcome:
    """Every non-empty visible cell (display text not blank as ``str.strip()`` sees it, as the
    segmenter does) in exactly one block (``cells``, ``sheets``, ``blocks``
    tables of one partition). Metadata: counts and up to :data:`SAMPLE` offending refs."""
    visible = {r["sheet_index"] for r in sheets.to_pylist() if r["visibility"] == "visible"}
    shown = cells.filter(pc.and_(
        pc.and_(pc.is_in(cells.column("sheet_index"), pa.array(sorted(visible), pa.int32())),
                pc.invert(pc.fill_null(cells.column("hidden"), False))),
        pc.not_equal(stripped_text(cells.column("display_text")), "")))
    uncovered: list[str] = []
    overlapping: list[str] = []
    n_uncovered = n_overlapping = 0
    block_rows = [b for b in blocks.to_pylist() if b["kind"] not in FLOATING_KINDS]
    for sheet_index in sorted(visible):
        part = shown.filter(pc.equal(shown.column("sheet_index"), sheet_index))
        if part.num_rows == 0:
            continue
        rows = part.column("row").to_numpy()
        cols = part.column("col").to_numpy()
        count = np.zeros(len(rows), dtype=np.int32)
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        for b in block_rows:
            if b["sheet_index"] != sheet_index:
                continue
            lo = np.searchsorted(sorted_rows, b["min_row"], "left")
            hi = np.searchsorted(sorted_rows, b["max_row"], "right")
            band = order[lo:hi]
            inside = band[(cols[band] >= b["min_col"]) & (cols[band] <= b["max_col"])]
            count[inside] += 1
        name = part.column("sheet_name")[0].as_py()
        missing, doubled = np.flatnonzero(count == 0), np.flatnonzero(count > 1)
        n_uncovered += len(missing)
        n_overlapping += len(doubled)
        uncovered += [f"{name}!{cell_ref(int(rows[i]), int(cols[i]))}"
                      for i in missing[: max(0, SAMPLE - len(uncovered))].tolist()]
        overlapping += [f"{name}!{cell_ref(int(rows[i]), int(cols[i]))}"
                        for i in doubled[: max(0, SAMPLE - len(overlapping))].tolist()]
    passed = n_uncovered == 0 and n_overlapping == 0
    return CheckOutcome(
        passed,
        f"{shown.num_rows} visible non-empty cells; {n_uncovered} in no block, "
        f"{n_overlapping} in more than one",
        {"cells": shown.num_rows, "uncovered": n_uncovered, "overlapping": n_overlapping,
         "uncovered_sample": uncovered, "overlapping_sample": overlapping},
    )


def values_in_output(lost: int, sample: list[str]) -> CheckOutcome:
    """No cell's value lost: ``lost`` cells (of :func:`~extraction_assets.core.render.coverage.
    unreached_cells`, each an ``error`` issue ``value_not_in_output``) reach no record, header or
    block text, or no chunk; ``sample`` names some as ``Sheet!A1``."""
    return CheckOutcome(lost == 0, f"{lost} cells with a value reach no chunk",
                        {"lost": lost, "lost_sample": sample[:SAMPLE]})


def chunk_budget(chunks: pa.Table, max_tokens: int) -> CheckOutcome:
    """Every chunk has at most ``max_tokens`` tokens (of the embedder's tokenizer)."""
    tokens = chunks.column("n_tokens").to_numpy(zero_copy_only=False) if chunks.num_rows else np.zeros(0)
    over = np.flatnonzero(tokens > max_tokens)
    ids = chunks.column("chunk_id").to_pylist() if chunks.num_rows else []
    return CheckOutcome(
        len(over) == 0,
        f"{len(over)} of {chunks.num_rows} chunks over {max_tokens} tokens",
        {"max_tokens": max_tokens, "largest": int(tokens.max()) if len(tokens) else 0,
         "over_budget": len(over), "over_budget_sample": [ids[i] for i in over[:SAMPLE]]},
    )


def _filled(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Whether each value is neither null nor empty."""
    return pc.fill_null(pc.not_equal(column.cast(pa.string()), ""), False)


def record_provenance(records: pa.Table, blocks: pa.Table) -> CheckOutcome:
    """Every record has file name, sheet, row and A1 range, and its row lies in its block."""
    block = pc.index_in(records.column("block_id").cast(pa.string()),
                        value_set=blocks.column("block_id").cast(pa.string()))
    row = records.column("row")
    inside = pc.and_kleene(pc.greater_equal(row, pc.take(blocks.column("min_row"), block)),
                           pc.less_equal(row, pc.take(blocks.column("max_row"), block)))
    complete = pc.and_(pc.and_(_filled(records.column("filename")),
                               _filled(records.column("sheet_name"))),
                       pc.and_(_filled(records.column("a1_range")), pc.fill_null(inside, False)))
    bad = records.filter(pc.invert(complete))
    sample = [f"{r['sheet_name']}!{r['a1_range']}"
              for r in bad.slice(0, SAMPLE).select(["sheet_name", "a1_range"]).to_pylist()]
    return CheckOutcome(
        bad.num_rows == 0,
        f"{bad.num_rows} of {records.num_rows} records without complete provenance",
        {"records": records.num_rows, "incomplete": bad.num_rows, "incomplete_sample": sample},
    )


def one_row_per_unit(unit_ids: list[str], stored_ids: list[str]) -> CheckOutcome:
    """The partition's LanceDB rows are exactly one per retrieval unit id (none missing, none
    duplicated); each row is both the unit's vector and its full-text entry."""
    expected, stored = set(unit_ids), list(stored_ids)
    missing = sorted(expected - set(stored))
    extra = sorted(set(stored) - expected)
    duplicated = len(stored) - len(set(stored))
    return CheckOutcome(
        not missing and not extra and duplicated == 0,
        f"{len(expected)} units, {len(stored)} rows: {len(missing)} missing, "
        f"{len(extra)} unknown, {duplicated} duplicated",
        {"units": len(expected), "rows": len(stored), "missing": len(missing),
         "unknown": len(extra), "duplicated": duplicated, "missing_sample": missing[:SAMPLE]},
    )


def rows_in_one_chunk(records: pa.Table, chunks: pa.Table) -> CheckOutcome:
    """Every table row (data or total record) is in exactly one chunk; the continuation parts
    of a row split by columns count with their first part."""
    first = chunks.filter(pc.invert(pc.fill_null(chunks.column("continuation"), False)))
    block_lists = first.column("block_ids").combine_chunks()
    row_lists = first.column("rows").combine_chunks()
    chunk_blocks = pc.list_flatten(block_lists).cast(pa.string())
    record_blocks = records.column("block_id").cast(pa.string())
    names = pc.unique(pa.chunked_array([chunk_blocks, *record_blocks.chunks], pa.string()))
    # every (block, row) pair of every chunk: its block ids crossed with its rows
    n_blocks = pc.fill_null(pc.list_value_length(block_lists), 0).to_numpy()
    n_rows = pc.fill_null(pc.list_value_length(row_lists), 0).to_numpy()
    pairs = n_blocks * n_rows
    chunk = np.repeat(np.arange(len(pairs)), pairs)
    k = np.arange(len(chunk)) - np.repeat(np.cumsum(pairs) - pairs, pairs)
    block_start = np.cumsum(n_blocks) - n_blocks
    row_start = np.cumsum(n_rows) - n_rows
    codes = pc.index_in(chunk_blocks, value_set=names).to_numpy(zero_copy_only=False)
    rows = pc.list_flatten(row_lists).to_numpy(zero_copy_only=False).astype(np.int64)
    record_rows = records.column("row")
    width = int(max(pc.max(record_rows).as_py() or 0, rows.max(initial=0))) + 1
    owned = (codes[block_start[chunk] + k // n_rows[chunk]].astype(np.int64) * width
             + rows[row_start[chunk] + k % n_rows[chunk]])
    keys, owners = np.unique(owned, return_counts=True)
    wanted = (pc.index_in(record_blocks, value_set=names).to_numpy(zero_copy_only=False)
              .astype(np.int64) * width
              + pc.fill_null(record_rows, 0).to_numpy(zero_copy_only=False))
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    count = np.where(keys[at] == wanted, owners[at], 0) if len(keys) else np.zeros(len(wanted))
    count[pc.is_null(record_rows).to_numpy(zero_copy_only=False)] = 0
    missing, repeated = np.flatnonzero(count == 0), np.flatnonzero(count > 1)
    order = np.concatenate([missing, repeated])[:SAMPLE]
    sample = records.select(["block_id", "row"]).take(order).to_pylist()
    return CheckOutcome(
        len(missing) == 0 and len(repeated) == 0,
        f"{records.num_rows} rows: {len(missing)} in no chunk, {len(repeated)} in several",
        {"rows": records.num_rows, "in_no_chunk": len(missing), "in_several": len(repeated),
         "sample": [f"{r['block_id']}:{r['row']}" for r in sample]},
    )


def heading_paths(chunks: pa.Table) -> CheckOutcome:
    """Every chunk has a non-empty heading path (at least its sheet name)."""
    paths = chunks.column("heading_path").to_pylist() if chunks.num_rows else []
    empty = [i for i, p in enumerate(paths) if not p or not p[0]]
    return CheckOutcome(not empty, f"{len(empty)} of {len(paths)} chunks without a heading path",
                        {"chunks": len(paths), "without_heading_path": len(empty)})
