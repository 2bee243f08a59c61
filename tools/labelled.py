"""Score table, header-row and total-row detection, and header and row paths, against
human-labelled real spreadsheets.

The labelled sets live in ``$EXTRACTION_ASSETS_LABELLED`` (default ``<repo>/../shared/labelled``;
its ``README.md`` gives the format):

* ``deco/`` — Enron workbooks labelled by the DECO project (Koci et al., ICDAR 2019):
  ``truth.json`` lists every table of each annotated sheet and the ``Header`` / ``Data`` /
  ``Derived`` / ``GroupHead`` / ``MetaTitle`` / ``Notes`` / ``Other`` ranges inside and outside
  them. Complete per annotated sheet, so tables are scored for precision and recall.
* ``tasi/`` — web spreadsheets of the Tasi table-structure set (ISSTA 2021): ``truth.json``
  lists the tables its authors studied, not every table of a sheet, so only recall is scored.
* ``hitab/`` — one-sheet StatCan tables of HiTab (ACL 2022) with people's questions; the gold
  cells and rows of ``questions.jsonl`` score **header paths** and **row paths** (below).

Every set is scored whole and by fold (:mod:`tools.folds`: rules are tuned looking at folds 0
and 1 only; folds 2 and 3 are held apart and measure generalisation).

Only the labelled sheets are scored (the annotation tool's own sheets ``Range_Annotations_Data``,
``Annotation_Status_Data`` and ``Usage_Log`` never are). A predicted table is a ``table``
block; a form (``key_value`` block of label/value lines) is not one, as DECO labels such lines
``Other`` and not as tables. Tables are matched one-to-one
per sheet, greedily by descending intersection over union, under three measures (the usual
ones, see the set's README):

* **exact** — the same A1 range;
* **IoU ≥ 0.8** — intersection over union of the two rectangles, counted in cells;
* **EoB-2** — every edge within 2 rows or columns of the label's (TableSense, Dong et al.,
  KDD 2019).

For DECO, each table matched at IoU ≥ 0.8 is also scored for its **header rows** (the sheet
rows covered by the table's ``Header`` labels against the block's ``header_row_count`` rows
from its top; a ``Header`` label one column wide over several rows labels rows, not columns,
and a table labelled with no header row expects none) and its **total rows** (the rows
of the table's row-shaped ``Derived`` labels — at most as tall as they are wide — against the
block's ``total_rows``) and its **group label rows** (the rows of its row-shaped ``GroupHead``
labels that hold no ``Data`` cell, against the block's ``group_rows``; a group label on the
first data row of its group is a row-group column's label instead). Accuracy is the share of
matched tables whose row set is exactly the labelled one; precision and recall over the rows
are given too.

For HiTab (:func:`evaluate_hitab`) every stage runs, to ``rendered_chunks``. Paths are compared
level by level after :func:`norm_path` (whitespace collapsed, blank levels dropped); the gold
``col_labels`` read the sheet as a person does (a units row such as ``percent`` or ``%`` is a
level, a vertically merged label one level, a merged parent repeats over its columns) and
needed no other allowance.

* **header paths** — per distinct sheet column of the gold cells: the key of the cell in its
  row's record (the column's header path, with the unit of its units section), else the
  ``header_levels`` of that column in the table block holding the cell, equal its ``col_labels``;
* **row paths** — per distinct sheet row of the gold cells and rows: the record's ``row_path``
  (row-group labels outermost first, then the row label) ends in the ``row_label`` and, when the
  gold names a ``row_group``, holds it before that (:func:`row_path_ok`);
* **row is a record** — a record exists for the gold row at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from extraction_assets.core.a1 import parse_range
from extraction_assets.pipeline import run_pipeline
from tools.folds import fold_of, fold_subsets
from tools.paths import shared_dir

#: Sheets the DECO annotation tool adds to each workbook (never scored).
ANNOTATION_SHEETS = frozenset({"Range_Annotations_Data", "Annotation_Status_Data", "Usage_Log"})
#: The measures, in the order they are reported.
MEASURES = ("exact", "iou", "eob")
#: The row sets scored on matched tables (DECO's Header, Derived and GroupHead labels).
ROW_SETS = ("header_rows", "total_rows", "group_rows")
#: Minimum intersection over union of an ``iou`` match.
IOU_THRESHOLD = 0.8
#: Largest distance (rows or columns) of each edge of an ``eob`` match.
EOB_TOLERANCE = 2


def _rows(rng: str) -> range:
    r1, _, r2, _ = parse_range(rng)
    return range(r1, r2 + 1)


def deco_truth(root: Path) -> dict[str, list[dict]]:
    """DECO truth by workbook file name: ``[{"doc", "sheet", "range", "header_rows",
    "total_rows", "group_rows"}]``, one dict per labelled table, the row sets of 1-based sheet
    rows (see the module docstring). Sheets with no table labelled are kept with
    no tables (a prediction there is a false positive): their names are in ``"sheets"`` of the
    returned mapping's ``None`` key, as ``{doc: [sheet, ...]}``."""
    truth = json.loads((root / "deco" / "truth.json").read_text(encoding="utf-8"))
    out: dict = {}
    sheets: dict[str, list[str]] = {}
    for doc, entry in sorted(truth.items()):
        tables = out.setdefault(doc, [])
        sheets[doc] = []
        for sheet, labels in sorted(entry.get("sheets", {}).items()):
            if sheet in ANNOTATION_SHEETS:
                continue
            sheets[doc].append(sheet)
            header: dict[str, set[int]] = defaultdict(set)
            total: dict[str, set[int]] = defaultdict(set)
            group: dict[str, set[int]] = defaultdict(set)
            data: dict[str, set[int]] = defaultdict(set)
            for label in labels.get("labels", []):
                table = label.get("table")
                if not table:
                    continue
                if label["label"] == "Header":
                    r1, c1, r2, c2 = parse_range(label["range"])
                    if c2 > c1 or r2 == r1:  # one column down many rows: row labels
                        header[table].update(range(r1, r2 + 1))
                elif label["label"] == "Data":
                    data[table].update(_rows(label["range"]))
                elif label["label"] in ("Derived", "GroupHead"):
                    r1, c1, r2, c2 = parse_range(label["range"])
                    if r2 - r1 <= c2 - c1:
                        rows = total if label["label"] == "Derived" else group
                        rows[table].update(range(r1, r2 + 1))
            for rng in labels.get("tables", []):
                tables.append({"doc": doc, "sheet": sheet, "range": rng,
                               "header_rows": frozenset(header.get(rng, ())),
                               "total_rows": frozenset(total.get(rng, ())),
                               "group_rows": frozenset(group.get(rng, set())
                                                       - data.get(rng, set()))})
    out[None] = sheets
    return out


def tasi_truth(root: Path) -> dict[str, list[dict]]:
    """Tasi truth by workbook file name: ``[{"doc", "sheet", "range"}]`` (tables only)."""
    truth = json.loads((root / "tasi" / "truth.json").read_text(encoding="utf-8"))
    out: dict = {}
    for doc, sheets in sorted(truth.items()):
        out[doc] = [{"doc": doc, "sheet": sheet, "range": rng}
                    for sheet, entry in sorted(sheets.items()) for rng in entry.get("tables", [])]
    out[None] = {doc: sorted(sheets) for doc, sheets in truth.items()}
    return out


def _box_iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    h = min(a[2], b[2]) - max(a[0], b[0]) + 1
    w = min(a[3], b[3]) - max(a[1], b[1]) + 1
    inter = h * w if h > 0 and w > 0 else 0
    area = (a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    return inter / (area - inter)


def eob(a: str, b: str, tolerance: int = EOB_TOLERANCE) -> bool:
    """Whether every edge of A1 range ``a`` is within ``tolerance`` rows/columns of ``b``'s."""
    return all(abs(x - y) <= tolerance for x, y in zip(parse_range(a), parse_range(b)))


def match(preds: list[dict], truths: list[dict], measure: str) -> list[tuple[int, int]]:
    """One-to-one matching of the predicted and truth tables of one sheet under ``measure``
    (``exact``, ``iou`` or ``eob``), greedy by descending IoU; returns ``[(truth index,
    prediction index)]``."""
    pairs = []
    for ti, t in enumerate(truths):
        tb = parse_range(t["range"])
        for pi, p in enumerate(preds):
            pb = parse_range(p["range"])
            v = _box_iou(tb, pb)
            ok = (tb == pb if measure == "exact" else v >= IOU_THRESHOLD if measure == "iou"
                  else all(abs(x - y) <= EOB_TOLERANCE for x, y in zip(tb, pb)))
            if ok:
                pairs.append((v, ti, pi))
    return one_to_one(pairs)


def by_sheet(items: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """Tables (truth or predicted) grouped by (document, sheet name), in the order given."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for item in items:
        out[(item.get("doc", ""), item["sheet"])].append(item)
    return out


def one_to_one(pairs: list[tuple[float, int, int]]) -> list[tuple[int, int]]:
    """Greedy one-to-one matching of (overlap, truth index, predicted index) candidates: the
    largest overlap first (ties by truth, then predicted index); each truth and prediction is
    used once. Returns the matched (truth index, predicted index) pairs."""
    used_t, used_p, out = set(), set(), []
    for _, ti, pi in sorted(pairs, key=lambda x: (-x[0], x[1], x[2])):
        if ti not in used_t and pi not in used_p:
            used_t.add(ti)
            used_p.add(pi)
            out.append((ti, pi))
    return out


def _prf(tp: int, n_pred: int | None, n_truth: int) -> dict:
    r = tp / n_truth if n_truth else 1.0
    if n_pred is None:
        return {"tp": tp, "recall": r}
    p = tp / n_pred if n_pred else (1.0 if not n_truth else 0.0)
    return {"tp": tp, "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _rows_score(pairs: list[tuple[frozenset, frozenset]]) -> dict:
    exact = sum(t == p for t, p in pairs)
    tp = sum(len(t & p) for t, p in pairs)
    n_t, n_p = sum(len(t) for t, _ in pairs), sum(len(p) for _, p in pairs)
    return {"tables": len(pairs), "correct": exact,
            "accuracy": exact / len(pairs) if pairs else 1.0,
            "rows": _prf(tp, n_p, n_t)}


def score_tables(predicted: list[dict], truth: list[dict], recall_only: bool = False) -> dict:
    """Scores of ``predicted`` against ``truth`` (dicts with ``doc``, ``sheet``, ``range``;
    truth may have the :data:`ROW_SETS` sets, predictions then need them too).

    Returns ``{"n_truth", "n_pred", "exact": {...}, "iou": {...}, "eob": {...},
    "header_rows": {...}, "total_rows": {...}, "group_rows": {...}}``: each measure ``{"tp",
    "precision", "recall", "f1"}`` (``{"tp", "recall"}`` with ``recall_only``); the row scores ``{"tables",
    "correct", "accuracy", "rows": {"tp", "precision", "recall", "f1"}}`` over the IoU-matched
    tables whose truth has that set (absent when none has)."""
    by_sheet_t, by_sheet_p = by_sheet(truth), by_sheet(predicted)
    tp = dict.fromkeys(MEASURES, 0)
    rows_of: dict[str, list] = {name: [] for name in ROW_SETS}
    for key, ts in by_sheet_t.items():
        ps = by_sheet_p.get(key, [])
        for measure in MEASURES:
            found = match(ps, ts, measure)
            tp[measure] += len(found)
            if measure != "iou":
                continue
            for ti, pi in found:
                for name, pairs in rows_of.items():
                    if ts[ti].get(name) is not None:
                        pairs.append((ts[ti][name], ps[pi][name]))
    n_pred = None if recall_only else len(predicted)
    out = {"n_truth": len(truth), "n_pred": len(predicted)}
    out.update({m: _prf(tp[m], n_pred, len(truth)) for m in MEASURES})
    out.update({name: _rows_score(pairs) for name, pairs in rows_of.items() if pairs})
    return out


def predicted_tables(seg: dict, doc: str, sheets: set[str] | None = None) -> list[dict]:
    """The ``table`` blocks of a segmentation's tables (``blocks`` of
    :func:`~extraction_assets.pipeline.stages.segment_stage`) as ``{"doc", "sheet", "range",
    "kind", "header_rows", "total_rows", "group_rows"}`` (row sets of 1-based sheet rows), only of
    ``sheets`` when given."""
    out = []
    for b in seg["blocks"].to_pylist():
        if b["kind"] != "table" or (sheets is not None and b["sheet_name"] not in sheets):
            continue
        n = b["header_row_count"]
        out.append({"doc": doc, "sheet": b["sheet_name"], "range": b["a1_range"],
                    "kind": b["kind"],
                    "header_rows": frozenset(range(b["min_row"], b["min_row"] + n)),
                    "total_rows": frozenset(b["total_rows"] or ()),
                    "group_rows": frozenset(b["group_rows"] or ())})
    return out


def failures(predicted: list[dict], truth: list[dict]) -> list[dict]:
    """Per sheet, the truth tables not matched at IoU ≥ 0.8 (with the predictions that overlap
    them), the predictions matching none, and the matched tables whose header or total rows
    differ: ``[{"doc", "sheet", "expected", "predicted", "what"}]``."""
    by_sheet_t, by_sheet_p = by_sheet(truth), by_sheet(predicted)
    out = []
    for key in sorted(by_sheet_t, key=str):
        ts, ps = by_sheet_t[key], by_sheet_p.get(key, [])
        found = dict(match(ps, ts, "iou"))
        matched_p = set(found.values())
        for ti, t in enumerate(ts):
            tb = parse_range(t["range"])
            if ti not in found:
                over = [p["range"] for p in ps if _box_iou(tb, parse_range(p["range"])) > 0]
                out.append({"doc": key[0], "sheet": key[1], "expected": t["range"],
                            "predicted": over, "what": "missed" if not over else "range"})
                continue
            p = ps[found[ti]]
            for name in ROW_SETS:
                if t.get(name) is not None and t[name] != p[name]:
                    out.append({"doc": key[0], "sheet": key[1], "expected": t["range"],
                                "predicted": [p["range"]],
                                "what": f"{name} {sorted(t[name])} vs {sorted(p[name])}"})
        for pi, p in enumerate(ps):
            if pi not in matched_p and not any(
                    _box_iou(parse_range(t["range"]), parse_range(p["range"])) > 0 for t in ts):
                out.append({"doc": key[0], "sheet": key[1], "expected": None,
                            "predicted": [p["range"]], "what": f"spurious {p['kind']}"})
    return out


def evaluate_labelled(root: Path | None = None, sets: tuple[str, ...] = ("deco", "tasi")) -> dict:
    """Run the real stages (parse → normalize → segment) on every file of each labelled set
    present under ``root`` (:func:`~tools.paths.shared_dir` ``labelled`` by default) and score them,
    the whole set and each subset of its folds (:mod:`tools.folds`).

    Returns ``{set: {"scores": score_tables(...), "folds": {subset: {"folds", "files",
    "scores"}}, "file_folds": {file: fold}, "failures": failures(...), "files": int,
    "errors": [str]}}``, ``folds`` keyed as :func:`~tools.folds.fold_subsets` and each failure
    carrying its file's ``fold``; a set whose folder is absent is left out. A file that cannot be
    read counts its tables as missed and is listed in ``errors``."""
    root = shared_dir("labelled", root)
    out = {}
    for name in sets:
        if not (root / name / "truth.json").is_file():
            continue
        truth_by_doc = deco_truth(root) if name == "deco" else tasi_truth(root)
        sheets_by_doc = truth_by_doc.pop(None)
        truth, pred, errors = [], [], []
        for doc, tables in truth_by_doc.items():
            truth.extend(tables)
            try:
                seg = run_pipeline((root / name / "files" / doc).read_bytes(),
                                   until="segmented_blocks")
            except Exception as exc:  # noqa: BLE001 - an unreadable file misses its tables
                errors.append(f"{doc}: {type(exc).__name__}: {exc}")
                continue
            pred.extend(predicted_tables(seg, doc, set(sheets_by_doc.get(doc, ()))))
        recall_only = name == "tasi"
        file_folds = {doc: fold_of(doc) for doc in truth_by_doc}
        fails = [{**f, "fold": file_folds[f["doc"]]} for f in failures(pred, truth)]
        if recall_only:
            fails = [f for f in fails if f["expected"] is not None]
        folds = {}
        for subset, members in fold_subsets().items():
            docs = {doc for doc, fold in file_folds.items() if fold in members}
            folds[subset] = {"folds": list(members), "files": len(docs),
                             "scores": score_tables([p for p in pred if p["doc"] in docs],
                                                    [t for t in truth if t["doc"] in docs],
                                                    recall_only=recall_only)}
        out[name] = {"scores": score_tables(pred, truth, recall_only=recall_only),
                     "folds": folds, "file_folds": file_folds, "failures": fails,
                     "files": len(truth_by_doc), "errors": errors}
    return out


def format_scores(name: str, scores: dict) -> list[str]:
    """Report lines for one set's :func:`score_tables` result."""
    def prf(s: dict) -> str:
        if "precision" not in s:
            return f"R {s['recall']:.3f}"
        return f"P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}"

    lines = [f"{name}: {scores['n_truth']} labelled tables, {scores['n_pred']} predicted"]
    lines += [f"  tables {label:<10} {prf(scores[m])}"
              for m, label in zip(MEASURES, ("exact", "IoU>=0.8", "EoB-2"))]
    for key, label in zip(ROW_SETS, ("header rows", "total rows", "group label rows")):
        if key in scores:
            s = scores[key]
            lines.append(f"  {label:<17} accuracy {s['accuracy']:.3f} ({s['correct']}/"
                         f"{s['tables']} tables); rows {prf(s['rows'])}")
    return lines


def _subset_label(subset: str, folds: list[int]) -> str:
    name = subset.replace("_", " ")
    return f"fold {subset}" if subset.isdigit() else f"{name} ({','.join(map(str, folds))})"


def format_folds(res: dict) -> list[str]:
    """Report lines of one table set's :func:`evaluate_labelled` result by fold: the whole set,
    the look and held-apart folds and each fold, with the tables' exact / IoU ≥ 0.8 / EoB-2 F1
    (recall for a recall-only set) and the header-row accuracy where the set labels header
    rows."""
    key = "f1" if "f1" in res["scores"]["exact"] else "recall"
    rows = [("whole", {"files": res["files"], "scores": res["scores"]})]
    rows += [(_subset_label(k, v["folds"]), v) for k, v in res["folds"].items()]
    has_header = "header_rows" in res["scores"]
    lines = [f"  {'by fold':<18} {'files':>5} {'tables':>6}  {'exact':>6} {'IoU>=0.8':>8} "
             f"{'EoB-2':>6}  ({key})" + ("  header rows" if has_header else "")]
    for label, r in rows:
        s = r["scores"]
        line = (f"  {label:<18} {r['files']:>5} {s['n_truth']:>6}  {s['exact'][key]:>6.3f} "
                f"{s['iou'][key]:>8.3f} {s['eob'][key]:>6.3f}")
        if has_header:
            h = s.get("header_rows")
            line += (f"        {h['accuracy']:.3f} ({h['correct']}/{h['tables']})" if h
                     else "        -")
        lines.append(line)
    return lines


# -- HiTab: header paths and row paths ------------------------------------------------------------
def norm_path(levels: list[str] | None) -> list[str]:
    """A header or row path as compared: each level whitespace-collapsed (``" ".join(s.split())``,
    as the sources differ in spaces and line breaks, never in words), blank levels dropped (a
    blank level names nothing)."""
    return [t for t in (" ".join(str(s).split()) for s in levels or ()) if t]


def hitab_gold(root: Path) -> dict[str, dict]:
    """HiTab gold by file name (``root/hitab/questions.jsonl``, see the set's README):
    ``{file: {"columns": {col: {"ref", "row", "col_labels"}}, "rows": {row: {"row_label",
    "row_group", "cols"}}}}`` — one entry per distinct sheet column of the gold cells (its first
    cell's ``ref`` and ``row``) and per distinct sheet row of the gold cells and gold rows
    (``cols``: the sheet columns of its gold cells, 1-based; empty for a gold row). Columns and
    rows are 1-based sheet numbers; ``table`` gold names no cell and is left out."""
    out: dict[str, dict] = {}
    path = root / "hitab" / "questions.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        gold = out.setdefault(q["file"], {"columns": {}, "rows": {}})
        for cell in q["gold"].get("cells", []):
            _, col, _, _ = parse_range(cell["ref"])
            gold["columns"].setdefault(col, {"ref": cell["ref"], "row": cell["row"],
                                             "col_labels": cell["col_labels"]})
        for item in q["gold"].get("cells", []) + q["gold"].get("rows", []):
            row = gold["rows"].setdefault(item["row"], {"row_label": item["row_label"],
                                                        "row_group": item["row_group"],
                                                        "cols": set()})
            if "ref" in item:
                row["cols"].add(parse_range(item["ref"])[1])
    return out


def row_path_ok(path: list[str], row_label: str, row_group: str | None) -> bool:
    """Whether a record's row path (:func:`norm_path`-ed) reads a gold row: its last level is the
    row label, and when the gold names a group, that group is one of the levels before it (the
    gold names one group level, so deeper nesting is no fault; with no group named, groups above
    are not penalised either)."""
    label = " ".join(row_label.split())
    if not path or path[-1] != label:
        return False
    return row_group is None or " ".join(row_group.split()) in path[:-1]


def hitab_checks(tables: dict, gold: dict) -> list[dict]:
    """The header-path and row-path checks of one HiTab file, from its pipeline output
    ``tables`` (``blocks``, ``block_columns``, ``records``; a missing ``records.row_path``
    column reads as empty paths) and its :func:`hitab_gold` entry.

    Returns ``[{"what": "header" | "row", "where": A1 column or row number, "expected": [str],
    "predicted": [str] | None, "correct": bool}]`` (row checks also ``"record": bool``): a column's
    predicted path is the key of its first gold cell in that row's record (the column's
    ``header_levels``, with the unit of the record's units section where the table has units
    rows), else the ``header_levels`` of its sheet column in the ``table`` block holding
    its first gold cell (``None``: no table or no such column), correct when equal to
    ``col_labels`` under :func:`norm_path`; a row's is the ``row_path`` of its record in the
    ``table`` block holding the row (the block holding one of its gold cells first, then the
    leftmost; ``None``: no record), correct by :func:`row_path_ok`. A HiTab file has one
    sheet, so blocks are not told apart by sheet."""
    blocks = [b for b in tables["blocks"].to_pylist() if b["kind"] == "table"] \
        if "blocks" in tables else []
    columns = tables["block_columns"].to_pylist() if "block_columns" in tables else []
    records = tables["records"].to_pylist() if "records" in tables else []
    out = []
    for col, g in sorted(gold["columns"].items()):
        block = next((b for b in blocks if b["min_row"] <= g["row"] <= b["max_row"]
                      and b["min_col"] <= col <= b["max_col"]), None)
        mine = sorted((c for c in columns if block and c["block_id"] == block["block_id"]),
                      key=lambda c: c["position"])
        column = next((c for c in mine if c["col"] == col and not c["group_label"]), None)
        predicted = norm_path(column["header_levels"]) if column else None
        record = column and next((r for r in records if r["block_id"] == block["block_id"]
                                  and r["row"] == g["row"]), None)
        if record:  # the key the cell's record has (a units section's unit included)
            predicted = norm_path(list(json.loads(record["record"]))[mine.index(column)]
                                  .split(" > "))
        expected = norm_path(g["col_labels"])
        out.append({"what": "header", "where": g["ref"].rstrip("0123456789"),
                    "expected": expected, "predicted": predicted,
                    "correct": predicted == expected})
    by_block = {b["block_id"]: b for b in blocks}
    for row, g in sorted(gold["rows"].items()):
        found = sorted((r for r in records if r["row"] == row and r["block_id"] in by_block),
                       key=lambda r: (not any(by_block[r["block_id"]]["min_col"] <= c
                                              <= by_block[r["block_id"]]["max_col"]
                                              for c in g["cols"]),
                                      by_block[r["block_id"]]["min_col"]))
        predicted = norm_path(found[0].get("row_path")) if found else None
        expected = norm_path(([g["row_group"]] if g["row_group"] else []) + [g["row_label"]])
        out.append({"what": "row", "where": row, "expected": expected, "predicted": predicted,
                    "record": bool(found),
                    "correct": bool(found) and row_path_ok(predicted, g["row_label"],
                                                           g["row_group"])})
    return out


def _hitab_scores(checks: list[dict]) -> dict:
    def rate(items: list[dict], key: str) -> dict:
        n = sum(bool(c[key]) for c in items)
        return {"correct": n, "total": len(items), "accuracy": n / len(items) if items else 1.0}

    header = [c for c in checks if c["what"] == "header"]
    rows = [c for c in checks if c["what"] == "row"]
    return {"header_paths": rate(header, "correct"), "row_paths": rate(rows, "correct"),
            "row_is_record": rate(rows, "record")}


def evaluate_hitab(root: Path | None = None) -> dict:
    """Run every stage (to ``rendered_chunks``, words as tokens) on each HiTab file with gold
    cells or rows under ``root`` (:func:`~tools.paths.shared_dir` ``labelled`` by default) and
    score its header paths and row paths (:func:`hitab_checks`), the whole set and each subset
    of its folds (:mod:`tools.folds`).

    Returns ``{}`` when ``root/hitab/questions.jsonl`` is absent, else ``{"files": int,
    "scores": {"header_paths", "row_paths", "row_is_record": {"correct", "total",
    "accuracy"}}, "folds": {subset: {"folds", "files", "scores"}}, "file_folds": {file: fold},
    "failures": [check + {"doc", "fold"}], "errors": [str]}``. A file that cannot be read
    fails all its checks and is listed in ``errors``."""
    root = shared_dir("labelled", root)
    if not (root / "hitab" / "questions.jsonl").is_file():
        return {}
    checks, errors = [], []
    for doc, gold in sorted(hitab_gold(root).items()):
        try:
            tables = run_pipeline((root / "hitab" / "files" / doc).read_bytes(), filename=doc,
                                  count_tokens=lambda s: len(s.split()))
        except Exception as exc:  # noqa: BLE001 - an unreadable file fails its checks
            errors.append(f"{doc}: {type(exc).__name__}: {exc}")
            tables = {}
        checks += [{**c, "doc": doc, "fold": fold_of(doc)} for c in hitab_checks(tables, gold)]
    file_folds = {doc: fold_of(doc) for doc in sorted({c["doc"] for c in checks})}
    folds = {subset: {"folds": list(members),
                      "files": sum(f in members for f in file_folds.values()),
                      "scores": _hitab_scores([c for c in checks if c["fold"] in members])}
             for subset, members in fold_subsets().items()}
    return {"files": len(file_folds), "scores": _hitab_scores(checks), "folds": folds,
            "file_folds": file_folds, "failures": [c for c in checks if not c["correct"]],
            "errors": errors}


def format_hitab(res: dict) -> list[str]:
    """Report lines of an :func:`evaluate_hitab` result: header-path accuracy, row-path
    accuracy and the row-is-a-record rate, for the whole set and by fold."""
    def cell(s: dict) -> str:
        return f"{s['accuracy']:.3f} ({s['correct']}/{s['total']})"

    lines = [f"labelled hitab ({res['files']} files with gold cells or rows)"]
    lines += [f"  {label:<15} {cell(res['scores'][key])}" for key, label in
              (("header_paths", "header paths"), ("row_paths", "row paths"),
               ("row_is_record", "row is a record"))]
    lines.append(f"  {'by fold':<18} {'files':>5}  {'header paths':<16} {'row paths':<16} "
                 "row is a record")
    for label, r in [("whole", res)] + [(_subset_label(k, v["folds"]), v)
                                        for k, v in res["folds"].items()]:
        s = r["scores"]
        lines.append(f"  {label:<18} {r['files']:>5}  {cell(s['header_paths']):<16} "
                     f"{cell(s['row_paths']):<16} {cell(s['row_is_record'])}")
    return lines
