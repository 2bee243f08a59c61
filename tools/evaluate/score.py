"""Prediction with the real stages, and scores and failure kinds against truth (see
:mod:`tools.evaluate`)."""

from __future__ import annotations

from collections import defaultdict

from extraction_assets.core.a1 import column_letter, parse_range
from extraction_assets.pipeline import run_pipeline
from tools.labelled import by_sheet, one_to_one


# -- prediction ---------------------------------------------------------------------------------
def predict(xlsx_bytes: bytes, doc: str = "") -> list[dict]:
    """Run the real stages (parse → normalize → segment) on a workbook's bytes and return its
    ``table`` and ``key_value`` (form) blocks in the shape :func:`score` expects::

        {"doc": doc, "sheet": str, "range": "A1:E5", "kind": "table" | "key_value",
         "header_rows": int,           # tables: header row count (None for a form)
         "columns": [int, ...],        # tables: 1-based sheet columns of the block's columns
         "headers": [str, ...],        # tables: flattened headers, aligned with "columns"
         "labels": [str, ...] | None,  # forms: the labels of the pairs in order (None: table)
         "title": str | None}

    Raises ``extraction_assets.pipeline.stages.StageError`` if the workbook cannot be read.
    """
    return _scored_blocks(run_pipeline(xlsx_bytes, until="segmented_blocks"), doc)


def _scored_blocks(seg, doc: str) -> list[dict]:
    columns: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for row in seg["block_columns"].to_pylist():
        columns[row["block_id"]].append((row["position"], row["col"], row["header"]))
    out = []
    for row in seg["blocks"].to_pylist():
        if row["kind"] not in ("table", "key_value"):
            continue
        cols = sorted(columns.get(row["block_id"], []))
        form = row["kind"] == "key_value"
        out.append({"doc": doc, "sheet": row["sheet_name"], "range": row["a1_range"],
                    "kind": row["kind"], "header_rows": None if form else row["header_row_count"],
                    "columns": None if form else [c for _, c, _ in cols],
                    "headers": None if form else [h for _, _, h in cols],
                    "labels": [h for _, _, h in cols] if form else None, "title": row["title"]})
    return out


# -- scoring ------------------------------------------------------------------------------------
def _area(b) -> int:
    return (b[2] - b[0] + 1) * (b[3] - b[1] + 1)


def _inter(a, b) -> int:
    h = min(a[2], b[2]) - max(a[0], b[0]) + 1
    w = min(a[3], b[3]) - max(a[1], b[1]) + 1
    return h * w if h > 0 and w > 0 else 0


def iou(a: str, b: str) -> float:
    """Intersection over union of two A1 ranges, counted in cells (0.0 … 1.0)."""
    ba, bb = parse_range(a), parse_range(b)
    i = _inter(ba, bb)
    return i / (_area(ba) + _area(bb) - i)


def _prf(tp: int, n_pred: int, n_truth: int) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else (1.0 if n_truth == 0 else 0.0)
    r = tp / n_truth if n_truth else (1.0 if n_pred == 0 else 0.0)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def _match(preds: list[dict], truths: list[dict], threshold: float | None):
    """One-to-one matching within one (doc, sheet): exact ranges if ``threshold`` is None, else
    greedy by descending IoU among pairs with IoU >= threshold. Returns [(ti, pi), ...]."""
    pairs = []
    for ti, t in enumerate(truths):
        for pi, p in enumerate(preds):
            if threshold is None:
                if parse_range(t["range"]) == parse_range(p["range"]):
                    pairs.append((1.0, ti, pi))
            else:
                v = iou(t["range"], p["range"])
                if v >= threshold:
                    pairs.append((v, ti, pi))
    return one_to_one(pairs)


def _kind(item: dict) -> str:
    return item.get("kind") or "table"


def score(predicted: list[dict], truth: list[dict], iou_threshold: float = 0.8,
          kind: str = "table") -> dict:
    """Score the predicted blocks of one ``kind`` against the truth blocks of that kind.

    Both arguments are lists of dicts with ``sheet`` and ``range`` (A1), optionally ``kind``
    (``"table"`` when absent; only entries of ``kind`` are scored, so a form found as a
    ``key_value`` block is no spurious table), ``doc`` (blocks are matched only within the same
    ``(doc, sheet)``; default ``""``), ``headers`` (list of flattened header labels) with
    ``columns`` (their 1-based sheet columns; if absent, the headers are taken to start at the
    range's first column), and ``header_rows``. Truth entries whose ``headers`` is ``None`` take
    no part in the header scores (forms have none).

    Matching is one-to-one per sheet: **exact** = identical range; **IoU** = greedy by descending
    cell-count intersection-over-union among pairs with IoU >= ``iou_threshold``.

    Returns a dict (fractions in 0…1; a precision with no predictions and a recall with no truth
    are 1.0 when both lists are empty, else 0.0)::

        n_truth, n_pred,
        exact_tp, exact_precision, exact_recall, exact_f1,
        iou_tp, iou_precision, iou_recall, iou_f1,
        header_columns   # truth columns of IoU-matched tables with header truth
        header_correct   # ... whose predicted header at the same sheet column is equal
        header_accuracy  # header_correct / header_columns (1.0 if header_columns == 0)
        header_rows_tables, header_rows_correct, header_rows_accuracy   # header row count

    ``n_truth`` and ``n_pred`` count the entries of ``kind`` only.
    """
    truth = [t for t in truth if _kind(t) == kind]
    predicted = [p for p in predicted if _kind(p) == kind]
    tsheets, psheets = by_sheet(truth), by_sheet(predicted)
    exact_tp = iou_tp = hcols = hok = hr_n = hr_ok = 0
    for key, ts in tsheets.items():
        ps = psheets.get(key, [])
        exact_tp += len(_match(ps, ts, None))
        matches = _match(ps, ts, iou_threshold)
        iou_tp += len(matches)
        for ti, pi in matches:
            t, p = ts[ti], ps[pi]
            if t.get("headers") is not None:
                tmap = _header_map(t)
                pmap = _header_map(p)
                hcols += len(tmap)
                hok += sum(1 for c, h in tmap.items() if pmap.get(c) == h)
            if t.get("header_rows") is not None and p.get("header_rows") is not None:
                hr_n += 1
                hr_ok += int(t["header_rows"] == p["header_rows"])
    n_t, n_p = len(truth), len(predicted)
    ep, er, ef = _prf(exact_tp, n_p, n_t)
    ip, ir, if_ = _prf(iou_tp, n_p, n_t)
    return {
        "n_truth": n_t, "n_pred": n_p,
        "exact_tp": exact_tp, "exact_precision": ep, "exact_recall": er, "exact_f1": ef,
        "iou_tp": iou_tp, "iou_precision": ip, "iou_recall": ir, "iou_f1": if_,
        "header_columns": hcols, "header_correct": hok,
        "header_accuracy": hok / hcols if hcols else 1.0,
        "header_rows_tables": hr_n, "header_rows_correct": hr_ok,
        "header_rows_accuracy": hr_ok / hr_n if hr_n else 1.0,
    }


def _header_map(t: dict) -> dict[int, str]:
    headers = t.get("headers") or []
    cols = t.get("columns")
    if cols is None:
        c0 = parse_range(t["range"])[1]
        cols = list(range(c0, c0 + len(headers)))
    return dict(zip(cols, headers))


# -- diagnosis ----------------------------------------------------------------------------------
#: What a block kind is called in failure kinds.
_NOUNS = {"table": "table", "key_value": "form"}


def _noun(item: dict) -> str:
    return _NOUNS.get(_kind(item), _kind(item))


def diagnose(predicted: list[dict], truth: list[dict], iou_threshold: float = 0.8,
             kind: str = "table") -> list[dict]:
    """Explain every truth block of ``kind`` that is not matched exactly, every header miss of an
    IoU-matched table, and every predicted block of ``kind`` that overlaps no truth block of
    ``kind``. Entries without ``kind`` are tables; blocks of other kinds only name what a block
    was read as.

    Returns a list of ``{"doc", "sheet", "expected": range | None, "predicted": [ranges that
    overlap it; of another kind with `` (kind)`` appended], "kinds": [str], "features": [str],
    "detail": str}``. Kinds (a block can have several; ``<noun>`` is ``table`` or ``form``):
    ``missed``, ``read as <noun>`` (only blocks of another kind overlap it), ``merged with
    neighbouring <noun>``, ``empty interior row splits table``, ``spacer column splits table``,
    ``title merged into <noun>``, ``unit line merged into table``, ``title/unit row merged into
    table`` (title and unit on one row), ``notes counted as rows``, ``merged value's covered cells
    left out`` (a form whose range stops short of the cells a merged value covers), ``extends above
    (other)``, ``extends below (other)``, ``extends sideways (other)``, ``header row cut off``
    (a form: ``top rows cut off``), ``rows cut off at bottom``, ``columns cut off``, ``spurious
    <noun>``, ``<noun> read as <noun>`` (a predicted block over a truth block of another kind),
    ``wrong header row count``, ``wrong header label``. The furniture-based kinds need the
    generator's ``furniture`` entry (title/unit/note rows); without it the ``(other)`` kinds are
    used.
    """
    out = []
    noun = _NOUNS.get(kind, kind)
    tsheets, psheets = by_sheet(truth), by_sheet(predicted)
    for key in sorted(set(tsheets) | set(psheets)):
        all_t, all_p = tsheets.get(key, []), psheets.get(key, [])
        ts = [t for t in all_t if _kind(t) == kind]
        ps = [p for p in all_p if _kind(p) == kind]
        others = [p for p in all_p if _kind(p) != kind]
        exact = {ti for ti, _ in _match(ps, ts, None)}
        iou_m = dict(_match(ps, ts, iou_threshold))
        for ti, t in enumerate(ts):
            tb = parse_range(t["range"])
            feats = t.get("features") or []
            furn = t.get("furniture") or {}
            kinds: list[str] = []
            over = [p for p in ps if _inter(tb, parse_range(p["range"]))]
            read_as = [p for p in others if _inter(tb, parse_range(p["range"]))]
            if ti not in exact:
                if over:
                    kinds = _range_kinds(t, tb, feats, furn, over, all_t, noun)
                else:
                    kinds = sorted({f"read as {_noun(p)}" for p in read_as}) or ["missed"]
            detail = ""
            if ti in iou_m and t.get("headers") is not None:
                p = ps[iou_m[ti]]
                if t.get("header_rows") is not None and p.get("header_rows") != t["header_rows"]:
                    kinds.append("wrong header row count")
                    detail = f"header rows {t['header_rows']} vs {p.get('header_rows')}; "
                tmap, pmap = _header_map(t), _header_map(p)
                bad = [f"{column_letter(c)}: {h!r} vs {pmap.get(c)!r}" for c, h in tmap.items()
                       if pmap.get(c) != h]
                if bad:
                    kinds.append("wrong header label")
                    detail += "; ".join(bad[:3]) + (" …" if len(bad) > 3 else "")
            if kinds:
                out.append({"doc": key[0], "sheet": key[1], "expected": t["range"],
                            "predicted": [p["range"] for p in over]
                            + [f"{p['range']} ({_kind(p)})" for p in read_as],
                            "kinds": kinds, "features": feats, "detail": detail.strip("; ")})
        for p in ps:
            pb = parse_range(p["range"])
            if not any(_inter(pb, parse_range(t["range"])) for t in ts):
                under = sorted({_noun(t) for t in all_t if _inter(pb, parse_range(t["range"]))})
                out.append({"doc": key[0], "sheet": key[1], "expected": None,
                            "predicted": [p["range"]],
                            "kinds": ([f"{n} read as {noun}" for n in under]
                                      or [f"spurious {noun}"]),
                            "features": [], "detail": ""})
    return out


def _range_kinds(t, tb, feats, furn, over, neighbours, noun) -> list[str]:
    kinds: list[str] = []
    best = max(over, key=lambda p: _inter(tb, parse_range(p["range"])))
    pb = parse_range(best["range"])
    merged = sorted({_noun(u) for u in neighbours if u is not t for p in over
                     if _inter(parse_range(u["range"]), parse_range(p["range"]))})
    kinds += [f"merged with neighbouring {n}" for n in merged]
    rows_cut = pb[0] > tb[0] or pb[2] < tb[2]
    cols_cut = pb[1] > tb[1] or pb[3] < tb[3]
    if rows_cut and "empty_interior_row" in feats:
        kinds.append("empty interior row splits table")
        rows_cut = False
    if cols_cut and "spacer_column" in feats:
        kinds.append("spacer column splits table")
        cols_cut = False
    if pb[0] < tb[0]:
        above = set(range(pb[0], tb[0]))
        title_row, unit_row = furn.get("title_row"), furn.get("unit_row")
        if title_row in above and title_row == unit_row:
            kinds.append("title/unit row merged into table")
        else:
            if title_row in above:
                kinds.append(f"title merged into {noun}")
            if unit_row in above:
                kinds.append("unit line merged into table")
        if not above & {title_row, unit_row} and not merged:
            kinds.append("extends above (other)")
    if pb[2] > tb[2]:
        if set(range(tb[2] + 1, pb[2] + 1)) & set(furn.get("note_rows") or []):
            kinds.append("notes counted as rows")
        elif not merged:
            kinds.append("extends below (other)")
    if rows_cut and pb[0] > tb[0]:
        kinds.append("header row cut off" if noun == "table" else "top rows cut off")
    if rows_cut and pb[2] < tb[2]:
        kinds.append("rows cut off at bottom")
    if cols_cut and pb[3] == tb[3] - 1 and "value_merged" in feats:
        kinds.append("merged value's covered cells left out")
    elif cols_cut:
        kinds.append("columns cut off")
    if (pb[1] < tb[1] or pb[3] > tb[3]) and not merged:
        kinds.append("extends sideways (other)")
    return kinds or ["other"]
