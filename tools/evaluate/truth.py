"""Ground truth from the shared corpus: Docling and Unstructured exports (see
:mod:`tools.evaluate`)."""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from pathlib import Path

from extraction_assets.core.a1 import range_ref
from extraction_assets.pipeline import run_pipeline
from tools.paths import shared_dir


# -- corpus ground truth ------------------------------------------------------------------------
def docling_truth(json_path: Path) -> list[dict]:
    """Tables of a DoclingDocument JSON export as truth dicts (see the module docstring).

    ``prov[0].bbox`` gives the sheet cell box (0-based, ``r``/``b`` exclusive); the sheet is the
    ``sheet`` group listing the table. Tables under 2x2 are skipped. ``headers``/``columns`` come
    from ``column_header`` cells (``None`` when the table has none or a header cell spans several
    columns), ``header_rows`` is the number of rows holding a ``column_header`` cell.
    """
    doc = json.loads(Path(json_path).read_text(encoding="utf-8"))
    sheet_of: dict[str, str] = {}
    sheets = [g for g in doc.get("groups", []) if g.get("label") == "sheet"]
    for g in sheets:
        for ch in g.get("children", []):
            sheet_of[ch.get("$ref", "")] = g.get("name")
    out = []
    for i, t in enumerate(doc.get("tables", [])):
        prov = t.get("prov") or []
        data = t.get("data") or {}
        if not prov or data.get("num_rows", 0) < 2 or data.get("num_cols", 0) < 2:
            continue
        sheet = sheet_of.get(t.get("self_ref") or f"#/tables/{i}")
        if sheet is None:
            page = prov[0].get("page_no", 1)
            sheet = sheets[page - 1]["name"] if 0 < page <= len(sheets) else None
        if sheet is None:
            continue
        bb = prov[0]["bbox"]
        r0, c0 = int(bb["t"]) + 1, int(bb["l"]) + 1
        r1, c1 = int(bb["b"]), int(bb["r"])
        if r1 < r0 or c1 < c0:
            continue
        levels: dict[int, list[tuple[int, str]]] = defaultdict(list)
        hrows = set()
        header_cells = [c for c in data.get("table_cells", []) if c.get("column_header")]
        if any(c.get("col_span", 1) > 1 for c in header_cells):
            # Docling flags only the first row as header: a merged parent means the rows below
            # it are header rows Docling does not see, so its header labels are no truth here.
            header_cells = []
        for cell in header_cells:
            text = (cell.get("text") or "").strip()
            hrows.add(cell["start_row_offset_idx"])
            for j in range(cell["start_col_offset_idx"], cell["end_col_offset_idx"]):
                if text:
                    levels[j].append((cell["start_row_offset_idx"], text))
        headers, columns = [], []
        for j in sorted(levels):
            path: list[str] = []
            for _, text in sorted(levels[j]):
                if not path or path[-1] != text:
                    path.append(text)
            columns.append(c0 + j)
            headers.append(" > ".join(path))
        out.append({"doc": "", "sheet": sheet, "range": range_ref(r0, c0, r1, c1),
                    "header_rows": len(hrows) or None,
                    "headers": headers if hrows else None, "columns": columns if hrows else None,
                    "title": None, "features": []})
    return out


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"\s+", text.strip()) if w]


def _align_elements(elements: list[tuple[str, str, str | None]], rows) -> list[dict] | None:
    """Align (type, text, sheet-or-None) elements with the non-empty rows
    ``[(sheet, row, [(col, text)...]), ...]`` in order; return Table truth dicts or ``None`` if
    the sequence cannot be aligned."""
    out, i = [], 0
    for kind, text, sheet in elements:
        want = _words(text)
        if not want:
            continue
        got: list[str] = []
        used = []
        while i < len(rows) and len(got) < len(want):
            if sheet is not None and rows[i][0] != sheet:
                if used:
                    return None
                i += 1
                continue
            got.extend(w for _, t in rows[i][2] for w in _words(t))
            used.append(rows[i])
            i += 1
        norm = [w.lstrip("-•*") for w in got]
        norm = [w for w in norm if w]
        if [w.lstrip("-•*") for w in want if w.lstrip("-•*")] != norm:
            return None
        if kind == "Table":
            r0 = min(r for _, r, _ in used)
            r1 = max(r for _, r, _ in used)
            cs = [c for _, _, cells in used for c, _ in cells]
            if r1 == r0 or max(cs) == min(cs):
                continue  # under 2x2: not a table by our rule (as for Docling)
            out.append({"doc": "", "sheet": used[0][0],
                        "range": range_ref(r0, min(cs), r1, max(cs)),
                        "header_rows": None, "headers": None, "columns": None, "title": None,
                        "features": []})
    return out


def _nonempty_rows(norm) -> list[tuple[str, int, list[tuple[int, str]]]]:
    cells = norm["cells"].select(["sheet_index", "sheet_name", "row", "col", "display_text",
                                  "hidden", "merged_from"]).to_pylist()
    visible = {r["sheet_index"] for r in norm["sheets"].to_pylist() if r["visibility"] == "visible"}
    rows: dict[tuple[int, str, int], list[tuple[int, str]]] = defaultdict(list)
    for c in cells:
        text = c["display_text"]
        if c["sheet_index"] in visible and text and text.strip() and not c["hidden"] \
                and c["merged_from"] is None:  # a merge's covered cells repeat its value
            rows[(c["sheet_index"], c["sheet_name"], c["row"])].append((c["col"], text.strip()))
    return [(k[1], k[2], sorted(v)) for k, v in sorted(rows.items())]


def unstructured_truth(corpus: Path) -> dict[str, list[dict]]:
    """Table truth derived from Unstructured's expected element sequences, keyed by the workbook
    path relative to ``corpus`` (see the module docstring). Sequences that cannot be aligned
    with the sheet's rows are skipped."""
    gt = corpus / "groundtruth" / "unstructured"
    files = corpus / "files" / "unstructured"
    seqs: dict[str, list[tuple[str, str, str | None]]] = {}
    test = gt / "test_xlsx.py"
    if test.exists():
        tree = ast.parse(test.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                    and isinstance(node.ops[0], ast.Eq) and isinstance(node.left, ast.Call)
                    and isinstance(node.comparators[0], ast.List)):
                continue
            call = node.left
            if getattr(call.func, "id", None) != "partition_xlsx" or call.keywords or \
                    len(call.args) != 1 or not isinstance(call.args[0], ast.Constant):
                continue
            elems = []
            for e in node.comparators[0].elts:
                if isinstance(e, ast.Call) and e.args and isinstance(e.args[0], ast.Constant):
                    elems.append((getattr(e.func, "id", "?"), str(e.args[0].value), None))
                else:
                    elems = []
                    break
            if elems:
                seqs[Path(str(call.args[0].value)).name] = elems
    for js in sorted(gt.glob("*.json")):
        name = js.name[:-len(".json")]
        try:
            data = json.loads(js.read_text(encoding="utf-8"))
        except ValueError:
            continue
        seqs.setdefault(name, [(e.get("type", "?"), e.get("text", ""),
                                (e.get("metadata") or {}).get("page_name")) for e in data])
    out = {}
    for name, elems in seqs.items():
        path = files / name
        if not path.exists():
            continue
        try:
            norm = run_pipeline(path.read_bytes(), until="normalized_grids")
        except Exception:  # noqa: BLE001,S112 - an unreadable file has no usable truth
            continue
        aligned = _align_elements(elems, _nonempty_rows(norm))
        if aligned is not None:
            out[str(path.relative_to(corpus))] = aligned
    return out


def corpus_truth(corpus: Path | None = None) -> dict[str, dict[str, list[dict]]]:
    """All usable corpus ground truth: ``{"docling": {rel_path: [truth...]}, "unstructured":
    {...}}``; sources whose files are absent are left out."""
    corpus = shared_dir("corpus", corpus)
    out: dict[str, dict[str, list[dict]]] = {}
    gt = corpus / "groundtruth" / "docling"
    if gt.is_dir():
        d = {}
        for js in sorted(gt.glob("*.json")):
            path = corpus / "files" / "docling" / js.name[:-len(".json")]
            if path.exists():
                d[str(path.relative_to(corpus))] = docling_truth(js)
        if d:
            out["docling"] = d
    if (corpus / "groundtruth" / "unstructured").is_dir():
        u = unstructured_truth(corpus)
        if u:
            out["unstructured"] = u
    return out
