"""Connected regions of occupied cells (8-neighbourhood, overlapping boxes joined)."""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from extraction_assets.core.grid import cell_keys
from extraction_assets.core.segment.context import SheetContext
from extraction_assets.core.segment.rules import MAX_REGIONS


def find_regions(ctx: SheetContext, cells: np.ndarray) -> list[np.ndarray]:
    """Connected regions (8-neighbourhood) of the cells at positions ``cells`` (ascending),
    bounding boxes joined; each region ascending, regions in the order of their first cell.

    Adjacency is judged as the sheet is shown: hidden rows and columns are skipped, so a
    hidden row inside a table does not split it. See :func:`_component_labels`.
    """
    if not len(cells):
        return []
    labels = _component_labels(ctx.srow[cells], ctx.scol[cells])
    # number the regions in the order of their first cell
    _, first, label = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    region = rank[label]
    order = np.argsort(region, kind="stable")
    bounds = np.flatnonzero(np.diff(region[order])) + 1
    groups = np.split(cells[order], bounds)
    return [np.sort(g) for g in join_overlapping(ctx, groups)]


#: Largest bounding box (cells) labelled on a dense bitmap (~5 bytes a cell while it is
#: labelled); a sparser sheet is a graph.
_DENSE_AREA = 1 << 23


def _component_labels(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Connected-component label (8-neighbourhood) of each cell of the ascending (row, col)
    arrays: SciPy's ``ndimage.label`` on a bitmap of their bounding box when it holds at most
    :data:`_DENSE_AREA` cells, else ``csgraph.connected_components`` over the neighbours found
    by binary search over the cell keys (memory proportional to the cells, not the box)."""
    r0, c0 = int(rows.min()), int(cols.min())
    height, width = int(rows.max()) - r0 + 1, int(cols.max()) - c0 + 1
    if height * width <= _DENSE_AREA:
        bitmap = np.zeros((height, width), dtype=bool)
        bitmap[rows - r0, cols - c0] = True
        labelled, _ = ndimage.label(bitmap, structure=np.ones((3, 3), dtype=bool))
        return labelled[rows - r0, cols - c0]
    n = len(rows)
    keys = cell_keys(rows, cols)
    sources, targets = [], []
    for dr, dc in ((-1, -1), (-1, 0), (-1, 1), (0, -1)):
        j = np.searchsorted(keys, keys + int(cell_keys(dr, dc))).astype(np.int32)
        np.minimum(j, n - 1, out=j)
        hit = keys[j] == keys + int(cell_keys(dr, dc))
        sources.append(np.flatnonzero(hit).astype(np.int32))
        targets.append(j[hit])
    sources, targets = np.concatenate(sources), np.concatenate(targets)
    graph = coo_matrix((np.ones(len(sources), np.int8), (sources, targets)), shape=(n, n))
    del sources, targets
    return connected_components(graph, directed=False)[1]


def join_overlapping(ctx: SheetContext, regions: list[np.ndarray]) -> list[np.ndarray]:
    """Join regions whose bounding boxes overlap (sparse tables with holes); a joined region
    is its cells in joining order."""
    regions = list(regions)
    boxes = [ctx.bbox(g) for g in regions]
    changed = len(regions) <= MAX_REGIONS
    while changed:
        changed = False
        for a in range(len(regions)):
            for b in range(a + 1, len(regions)):
                if _overlap(boxes[a], boxes[b]):
                    regions[a] = np.concatenate([regions[a], regions[b]])
                    boxes[a] = (min(boxes[a][0], boxes[b][0]), min(boxes[a][1], boxes[b][1]),
                                max(boxes[a][2], boxes[b][2]), max(boxes[a][3], boxes[b][3]))
                    del regions[b], boxes[b]
                    changed = True
                    break
            if changed:
                break
    return regions


def _overlap(a, b) -> bool:
    return not (a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])
