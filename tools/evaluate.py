"""Score table (and form) segmentation against labelled workbooks.

Usage::

    python -m tools.evaluate [--seeds N] [--start S] [--corpus DIR]
                                         [--labelled DIR] [--json OUT]

Three label sets are scored with the real pipeline (:func:`predict` runs ``parse_stage``,
``normalize_stage`` and ``segment_stage`` of :mod:`extraction_assets.pipeline.stages`):

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
    header, total and group label rows).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from datetime import date, datetime, timedelta
from pathlib import Path

from extraction_assets.core.a1 import column_letter, parse_range, range_ref
from tools.labelled import evaluate_labelled, format_scores
from tools.paths import shared_dir

HASH = "0" * 64

__all__ = ["corpus_truth", "diagnose", "docling_truth", "evaluate_corpus",
           "evaluate_generator", "generate_layout", "iou", "main", "predict", "score",
           "unstructured_truth"]

# -- vocabulary ---------------------------------------------------------------------------------
_ROW_LABELS = {
    "en": [("Region", ["North", "South", "East", "West", "Central", "Overseas", "Online", "Retail"]),
           ("Product", ["Widget A", "Widget B", "Gadget", "Sprocket", "Bracket", "Hex bolt M8",
                        "Flat washer", "Cable tie"]),
           ("Department", ["Sales", "Engineering", "Finance", "Support", "Marketing", "Legal",
                           "Operations", "HR"]),
           ("Customer", ["Acme Corp", "Globex", "Initech", "Umbrella", "Hooli", "Stark Ltd",
                         "Wayne Co", "Tyrell"])],
    "ja": [("地域", ["北海道", "東北", "関東", "中部", "近畿", "中国", "四国", "九州"]),
           ("品目", ["りんご", "みかん", "ぶどう", "もも", "なし", "いちご", "メロン", "すいか"]),
           ("部門", ["営業部", "開発部", "総務部", "経理部", "製造部", "品質保証部", "人事部", "広報部"]),
           ("取引先", ["山田商事", "佐藤工業", "鈴木物産", "高橋電機", "田中製作所", "伊藤建設",
                       "渡辺運輸", "中村食品"])],
}
_GROUPS = {"en": ("Division", ["Consumer", "Enterprise", "Public sector", "Partners"]),
           "ja": ("事業部", ["国内事業", "海外事業", "官公庁", "その他"])}
_SIMPLE_COLS = {
    "en": [("Units", "int"), ("Revenue", "usd"), ("Unit price", "usd"), ("Ship date", "date"),
           ("Share", "pct"), ("Owner", "name"), ("Cost", "usd"), ("Orders", "int"),
           ("Due", "date"), ("Margin", "pct"), ("Comment", "text")],
    "ja": [("数量", "int"), ("金額", "jpy"), ("単価", "jpy"), ("納期", "date"), ("構成比", "pct"),
           ("担当者", "name"), ("原価", "jpy"), ("受注件数", "int"), ("出荷日", "date"),
           ("粗利率", "pct"), ("備考", "text")],
}
_PARENTS = {"en": [["2022", "2023", "2024"], ["FY2023", "FY2024"], ["Actual", "Budget", "Forecast"],
                   ["Domestic", "Export"]],
            "ja": [["2022年度", "2023年度", "2024年度"], ["実績", "計画", "見込"], ["国内", "海外"],
                   ["前年", "当年"]]}
_CHILDREN = {"en": [["Q1", "Q2", "Q3", "Q4"], ["H1", "H2"], ["Units", "Revenue"], ["Jan", "Feb", "Mar"]],
             "ja": [["第1四半期", "第2四半期", "第3四半期"], ["上期", "下期"], ["数量", "金額"],
                    ["4月", "5月", "6月"]]}
_TOPS = {"en": [["Sales", "Returns"], ["Orders", "Shipments"]], "ja": [["売上", "返品"], ["受注", "出荷"]]}
# the first level of a four-row header (above top > market > child)
_PLANS = {"en": [["FY2023", "FY2024"], ["Plan", "Actual"]],
          "ja": [["2023年度", "2024年度"], ["計画", "実績"]]}
_MARKETS = {"en": ["Domestic", "Export"], "ja": ["国内", "海外"]}
_EXTRA_SINGLE = {"en": [("Total", "sum"), ("Unit", "unit"), ("Remarks", "text")],
                 "ja": [("合計", "sum"), ("単位", "unit"), ("備考", "text")]}
_TITLES = {"en": ["Quarterly sales by {x}", "{x} summary", "Revenue by {x}", "Headcount by {x}",
                  "Order book — {x}", "Table {n}. Results by {x}"],
           "ja": ["{x}別四半期売上", "{x}別集計表", "{x}別売上高", "{x}別人員数", "表{n} {x}別実績",
                  "【{x}別】受注状況"]}
_UNITS = {"en": ["(USD thousands)", "Unit: USD", "(in millions)"],
          "ja": ["(単位：千円)", "単位：円", "(単位：百万円)"]}
_NOTES = {"en": ["Note: figures are unaudited.", "* Source: internal sales system.",
                 "Note: totals may not add up due to rounding.", "* Excludes intercompany sales.",
                 "Source: company filings, 2024."],
          "ja": ["※ 金額は税抜きです。", "※ 端数処理のため合計と一致しない場合があります。",
                 "出典：社内販売管理システム", "※ 前年同期比は参考値です。", "注）速報値"]}
# lines written directly under an Excel table that no note marker announces
_PLAIN_NOTES = {"en": ["Figures checked by finance.", "Updated weekly by the sales team."],
                "ja": ["経理部確認済み", "毎週月曜日に更新"]}
_HEADINGS = {"en": ["Monthly report", "Sales overview FY2024", "Operations dashboard"],
             "ja": ["月次報告書", "2024年度 売上概況", "業務報告"]}
_SHEETS = {"en": ["Summary", "Sales", "Report", "Data", "Q3 results"],
           "ja": ["集計", "売上", "報告", "明細", "第3四半期"]}
_NAMES = {"en": ["Smith", "Jones", "Brown", "Taylor", "Wilson", "Davies"],
          "ja": ["山田", "佐藤", "鈴木", "高橋", "田中", "伊藤"]}
_TEXTS = {"en": ["on hold", "urgent", "see memo", "ok", "pending review", "renewed"],
          "ja": ["保留", "至急", "別紙参照", "問題なし", "確認中", "更新済"]}
# forms: (label, value kind); the label is written with a colon or in bold
_FORM_FIELDS = {
    "en": [("Name", "name"), ("Date", "date"), ("Department", "dept"), ("Amount", "usd"),
           ("Customer", "customer"), ("Subject", "subject"), ("Due date", "date"),
           ("Order no.", "code"), ("Phone", "phone"), ("Quantity", "int"), ("Remarks", "text")],
    "ja": [("氏名", "name"), ("日付", "date"), ("部署", "dept"), ("金額", "jpy"), ("取引先", "customer"),
           ("件名", "subject"), ("納期", "date"), ("注文番号", "code"), ("電話番号", "phone"),
           ("数量", "int"), ("備考", "text")],
}
_SIGN_LABEL = {"en": "Approved by", "ja": "承認者"}  # left blank for a signature
_FORM_TITLES = {"en": ["Expense claim", "Purchase order", "Travel request", "Invoice",
                       "Order details"],
                "ja": ["経費精算書", "発注書", "出張申請書", "請求書", "注文内容"]}
_SUBJECTS = {"en": ["Office move", "Server upgrade", "Trade fair booth", "Annual maintenance"],
             "ja": ["事務所移転", "サーバー更新", "展示会出展", "年間保守"]}
_FORMATS = {"int": ["#,##0", "0", "General"], "usd": ['"$"#,##0.00', '"$"#,##0'],
            "jpy": ['"¥"#,##0', '#,##0"円"', "#,##0"], "pct": ["0.0%", "0%"],
            "date": ["yyyy-mm-dd", "yyyy/m/d", 'yyyy"年"m"月"d"日"', "d-mmm-yy"]}


def _value(rng: random.Random, kind: str, lang: str):
    if kind in ("int", "sum"):
        return rng.randint(0, 5000)
    if kind == "usd":
        return round(rng.uniform(10, 99999), 2)
    if kind == "jpy":
        return rng.randint(100, 9_999_999)
    if kind == "pct":
        return round(rng.random(), 3)
    if kind == "date":
        return date(2023, 1, 1) + timedelta(days=rng.randint(0, 700))
    if kind == "name":
        return rng.choice(_NAMES[lang])
    if kind == "unit":
        return rng.choice(["pcs", "kg", "box"] if lang == "en" else ["個", "kg", "箱"])
    if kind in ("dept", "customer"):  # the values of the Department / Customer row labels
        return rng.choice(_ROW_LABELS[lang][2 if kind == "dept" else 3][1])
    if kind == "subject":
        return rng.choice(_SUBJECTS[lang])
    if kind == "code":
        return f"PO-{rng.randint(2023, 2024)}-{rng.randint(1, 9999):04d}"
    if kind == "phone":
        return f"0{rng.randint(3, 9)}-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"
    return rng.choice(_TEXTS[lang])


# -- one table ----------------------------------------------------------------------------------
class _Piece:
    """A table (with its title, unit line and notes) or a form (``kind == "key_value"``, with its
    title) in relative coordinates (0-based)."""

    def __init__(self, kind: str = "table"):
        self.kind = kind
        self.cells: dict[tuple[int, int], tuple[object, dict]] = {}
        self.merges: list[tuple[int, int, int, int]] = []
        self.height = 0
        self.width = 0
        self.table_top = 0  # relative row of the first header row
        self.table_bottom = 0
        self.headers: dict[int, str] = {}  # relative col -> flattened header
        self.header_rows = 1
        self.title: str | None = None
        self.features: list[str] = []
        self.border = "none"
        self.total_row: int | None = None
        self.title_row: int | None = None
        self.unit_row: int | None = None
        self.note_rows: list[int] = []
        self.list_object = False  # written as an Excel table (ListObject)
        self.labels: list[str] = []  # a form's labels as the segmenter names them (no colon)

    def box(self) -> tuple[int, int, int, int]:
        """The truth range (r0, c0, r1, c1): a table's rows from the header to the totals row
        over its full width; a form's non-empty cells, a merged value with all it covers."""
        if self.kind == "table":
            return self.table_top, 0, self.table_bottom, self.width - 1
        filled = [k for k, (v, _) in self.cells.items()
                  if v is not None and self.table_top <= k[0] <= self.table_bottom]
        filled += [(r2, c2) for r1, c1, r2, c2 in self.merges if (r1, c1) in filled]
        rows, cols = [r for r, _ in filled], [c for _, c in filled]
        return min(rows), min(cols), max(rows), max(cols)

    def put(self, r: int, c: int, value, **style):
        self.cells[(r, c)] = (value, style)


def _build_table(rng: random.Random, lang: str, n_in_sheet: int) -> _Piece:
    p = _Piece()
    label_name, label_values = rng.choice(_ROW_LABELS[lang])
    h = rng.choices([1, 2, 3, 4], weights=[5, 4, 1.5, 0.8])[0]
    feats = p.features
    feats.append(f"header_rows={h}")
    use_group = rng.random() < 0.3
    group_style = rng.choice(["merge", "first"]) if use_group else None
    label_pos = rng.choice(["merge", "merge", "top", "bottom"]) if h > 1 else "merge"
    # columns: list of dicts {levels: [...], kind, pos}
    columns: list[dict] = []
    if use_group:
        columns.append({"levels": [_GROUPS[lang][0]], "kind": "group"})
        feats.append(f"row_groups:{group_style}")
    columns.append({"levels": [label_name], "kind": "label"})
    n_label_cols = len(columns)
    if h == 1:
        pool = list(_SIMPLE_COLS[lang])
        rng.shuffle(pool)
        for name, kind in pool[:rng.randint(2, 5)]:
            columns.append({"levels": [name], "kind": kind})
    else:
        kind = rng.choice(["int", "usd" if lang == "en" else "jpy", "int"])
        if h == 2:
            parents = rng.choice(_PARENTS[lang])
            parents = parents[:rng.randint(1, len(parents))] if len(parents) > 1 else parents
            children = rng.choice(_CHILDREN[lang])
            children = children[:rng.randint(2, len(children))]
            for par in parents:
                for ch in children:
                    columns.append({"levels": [par, ch], "kind": kind})
        elif h == 3:
            tops = rng.choice(_TOPS[lang])[:rng.randint(1, 2)]
            parents = rng.choice(_PARENTS[lang])[:2]
            children = rng.choice(_CHILDREN[lang])[:2]
            for top in tops:
                for par in parents:
                    for ch in children:
                        columns.append({"levels": [top, par, ch], "kind": kind})
        else:  # a year or plan level above top > market > child
            plans = rng.choice(_PLANS[lang])[:rng.randint(1, 2)]
            tops = rng.choice(_TOPS[lang])[:rng.randint(1, 2)]
            children = rng.choice(_CHILDREN[lang])[:2]
            for plan in plans:
                for top in tops:
                    for market in _MARKETS[lang]:
                        for ch in children:
                            columns.append({"levels": [plan, top, market, ch], "kind": kind})
        if rng.random() < 0.35:
            name, ekind = rng.choice(_EXTRA_SINGLE[lang])
            columns.append({"levels": [name], "kind": ekind})
            feats.append("single_level_column_in_multirow_header")
    # a spacer column (fully empty, no header) inside the table
    spacer_at = None
    if rng.random() < 0.12 and len(columns) - n_label_cols >= 2:
        if h == 1:
            spacer_at = rng.randint(n_label_cols, len(columns) - 1)
        else:  # between top-level groups (no merge crosses it) or right after the label columns
            bounds = [i for i in range(n_label_cols + 1, len(columns))
                      if columns[i]["levels"][0] != columns[i - 1]["levels"][0]]
            spacer_at = rng.choice(bounds or [n_label_cols])
        columns.insert(spacer_at, {"levels": [], "kind": "spacer"})
        feats.append("spacer_column")

    # rows
    n_data = rng.randint(3, 10)
    labels = list(label_values)
    rng.shuffle(labels)
    labels = (labels * 3)[:n_data]
    group_of: list[int] = []
    if use_group:
        g, left = 0, 0
        for i in range(n_data):
            if left == 0:
                left = rng.randint(2, 4)
                g = len(set(group_of))
            group_of.append(g)
            left -= 1
    empty_row_at = None
    if rng.random() < 0.12 and n_data >= 3:
        empty_row_at = rng.randint(1, n_data - 1)  # before data row index
        feats.append("empty_interior_row")
    with_total = rng.random() < 0.45
    if with_total:
        feats.append("totals_row")
    sparse = rng.random() < 0.3
    if sparse:
        feats.append("blank_cells")

    # title / unit line above
    top = 0
    title = None
    if rng.random() < 0.6:
        x = label_name
        title = rng.choice(_TITLES[lang]).format(x=x, n=n_in_sheet)
        p.title = title
        feats.append("title")
    unit = rng.choice(_UNITS[lang]) if rng.random() < 0.15 else None
    title_gap = rng.choice([0, 0, 1]) if title else 0
    width = len(columns)
    title_merge = title is not None and rng.random() < 0.4
    if title:
        p.put(0, 0, title, bold=True, size=rng.choice([13, 14, 16]))
        p.title_row = 0
        if title_merge and width > 1:
            p.merges.append((0, 0, 0, width - 1))
            feats.append("title_merged")
        top = 1 + title_gap
        feats.append(f"title_gap={title_gap}")
    if unit:
        if title and title_gap == 0 and not title_merge:
            p.put(0, width - 1, unit, italic=True)  # unit on the title row, right end
            p.unit_row = 0
        else:
            p.put(top, width - 1, unit, italic=True)
            p.unit_row = top
            top += 1
        feats.append("unit_line")
    p.table_top = top
    p.header_rows = h
    p.border = rng.choice(["all", "all", "header", "none"])
    if p.border != "none":
        feats.append(f"border={p.border}")
    header_fill = rng.random() < 0.4

    # header rows
    hstyle = {"bold": True, "header": True}
    if header_fill:
        hstyle["fill"] = rng.choice(["D9D9D9", "DDEBF7", "FCE4D6"])
    for j, col in enumerate(columns):
        levels = col["levels"]
        if not levels:
            continue
        if len(levels) == h:
            for k, text in enumerate(levels):
                p.put(top + k, j, text, **hstyle)
        else:  # a single-level column in a multi-row header
            pos = label_pos if col["kind"] in ("label", "group") else "merge"
            if pos == "merge":
                p.put(top, j, levels[0], **hstyle)
                for k in range(1, h):
                    p.put(top + k, j, None, **hstyle)
                if h > 1:
                    p.merges.append((top, j, top + h - 1, j))
            elif pos == "top":
                p.put(top, j, levels[0], **hstyle)
            else:
                p.put(top + h - 1, j, levels[0], **hstyle)
        p.headers[j] = " > ".join(levels)
    if h > 1:
        # merge parents: equal prefixes over adjacent columns
        for k in range(h - 1):
            j = 0
            while j < width:
                lv = columns[j]["levels"]
                if len(lv) != h:
                    j += 1
                    continue
                end = j
                while end + 1 < width and len(columns[end + 1]["levels"]) == h and \
                        columns[end + 1]["levels"][:k + 1] == lv[:k + 1]:
                    end += 1
                if end > j:
                    p.merges.append((top + k, j, top + k, end))
                    for jj in range(j + 1, end + 1):
                        p.put(top + k, jj, None, **hstyle)
                j = end + 1
        if label_pos != "merge":
            feats.append(f"label_header_{label_pos}")
    # data rows
    r = top + h
    sums = defaultdict(float)
    fmt = {j: rng.choice(_FORMATS[c["kind"]]) for j, c in enumerate(columns) if c["kind"] in _FORMATS}
    group_rows: dict[int, list[int]] = defaultdict(list)
    for i in range(n_data):
        if empty_row_at is not None and i == empty_row_at:
            r += 1
        for j, col in enumerate(columns):
            kind = col["kind"]
            if kind == "spacer":
                continue
            if kind == "group":
                group_rows[group_of[i]].append(r)
                gname = _GROUPS[lang][1][group_of[i] % len(_GROUPS[lang][1])]
                first = len(group_rows[group_of[i]]) == 1
                if first or group_style == "merge":
                    p.put(r, j, gname if first else None)
                continue
            if kind == "label":
                p.put(r, j, labels[i])
                continue
            if kind == "sum":
                continue
            if sparse and rng.random() < 0.15 and kind != "label":
                continue
            v = _value(rng, kind, lang)
            if kind in ("int", "usd", "jpy"):
                sums[j] += v
            p.put(r, j, v, fmt=fmt.get(j))
        for j, col in enumerate(columns):  # row total column
            if col["kind"] == "sum":
                s = sum(p.cells[(r, jj)][0] for jj, c in enumerate(columns)
                        if c["kind"] in ("int", "usd", "jpy") and (r, jj) in p.cells
                        and isinstance(p.cells[(r, jj)][0], (int, float)))
                p.put(r, j, round(s, 2), fmt="#,##0")
                sums[j] += s
        r += 1
    if group_style == "merge":
        for rows in group_rows.values():
            runs = [[rows[0]]]
            for rr in rows[1:]:
                if rr == runs[-1][-1] + 1:
                    runs[-1].append(rr)
                else:  # an empty row inside the group: the label starts again below it
                    runs.append([rr])
            for k, run in enumerate(runs):
                if k:
                    p.put(run[0], 0, p.cells[(rows[0], 0)][0])
                if len(run) > 1:
                    p.merges.append((run[0], 0, run[-1], 0))
    if with_total:
        total_label = rng.choice(["Total", "Grand total"] if lang == "en" else ["合計", "総計"])
        p.put(r, 0, total_label, bold=True)
        if use_group and rng.random() < 0.5:
            p.merges.append((r, 0, r, 1))
            p.put(r, 1, None, bold=True)
        for j in sums:
            p.put(r, j, round(sums[j], 2), bold=True, fmt=fmt.get(j, "#,##0"), total=True)
        p.total_row = r
        r += 1
    p.table_bottom = r - 1
    # an Excel table (ListObject): one header row of unique text labels, no merge inside
    merged_inside = any(m[0] <= p.table_bottom and m[2] >= top for m in p.merges)
    unique_labels = len(set(p.headers.values())) == width
    if h == 1 and spacer_at is None and not merged_inside and unique_labels and rng.random() < 0.4:
        p.list_object = True
        feats.append("list_object")
        if with_total:
            feats.append("list_object_totals")
    # notes below; under an Excel table often directly, and not always with a note marker
    if rng.random() < (0.5 if p.list_object else 0.4):
        gap = 0 if p.list_object and rng.random() < 0.7 else rng.choice([0, 1])
        plain = p.list_object and gap == 0 and rng.random() < 0.5
        r += gap
        for text in rng.sample((_PLAIN_NOTES if plain else _NOTES)[lang], rng.choice([1, 1, 2])):
            p.put(r, 0, text, size=9)
            p.note_rows.append(r)
            r += 1
        feats.append(f"notes_gap={gap}")
        if plain:
            feats.append("plain_note")
    p.height = r
    p.width = width
    return p


# -- one form -----------------------------------------------------------------------------------
def _build_form(rng: random.Random, lang: str) -> _Piece:
    """A form of 3–7 label/value pairs: labels ending with a colon one pair per row
    (``form:colon``) or two pairs per row (``form:two_per_row``), or bold labels without colons
    (``form:bold``); values of text, dates, currency or counts, sometimes merged over two columns
    (``value_merged``) or left blank for a signature (``label_alone``); a title line above or not.
    """
    p = _Piece("key_value")
    feats = p.features
    variant = rng.choice(["colon", "colon", "two_per_row", "bold"])
    feats.append(f"form:{variant}")
    n = rng.randint(3, 7)
    sign = variant != "bold" and rng.random() < 0.25
    pairs: list[tuple[str, str | None]] = rng.sample(_FORM_FIELDS[lang], n - sign)
    if sign:
        pairs.insert(rng.randint(1, len(pairs)), (_SIGN_LABEL[lang], None))
        feats.append("label_alone")
    colon = ":" if lang == "en" or rng.random() < 0.2 else "："
    # value widths: 1 column, or a box merged over 2 (all values, or one value / one slot)
    merge = rng.choice(["none", "none", "all", "one"])
    slots = 2 if variant == "two_per_row" else len(pairs)
    widths = [2 if merge == "all" else 1] * slots
    if merge == "one":
        widths[rng.randrange(slots)] = 2
    label_style = {"bold": variant == "bold"}
    if rng.random() < 0.3:
        label_style["fill"] = rng.choice(["F2F2F2", "DDEBF7"])
    top = 0
    if rng.random() < 0.5:
        p.title = rng.choice(_FORM_TITLES[lang])
        p.put(0, 0, p.title, bold=True, size=rng.choice([13, 14, 16]))
        p.title_row = 0
        gap = rng.choice([0, 1])
        top = 1 + gap
        feats += ["title", f"title_gap={gap}"]
    p.table_top = top
    width = 0
    for i, (label, kind) in enumerate(pairs):
        if variant == "two_per_row":
            r, slot = top + i // 2, i % 2
            c = 0 if slot == 0 else 1 + widths[0]
        else:
            r, slot, c = top + i, i, 0
        p.put(r, c, label if variant == "bold" else f"{label}{colon}", **label_style)
        p.labels.append(label)
        w = widths[slot]
        width = max(width, c + 1 + w)
        if kind is None:
            continue
        fmt = rng.choice(_FORMATS[kind]) if kind in _FORMATS else None
        p.put(r, c + 1, _value(rng, kind, lang), fmt=fmt)
        if w == 2:
            p.merges.append((r, c + 1, r, c + 2))
    if p.merges:
        feats.append("value_merged")
    p.table_bottom = max(r for r, _ in p.cells)
    p.border = rng.choice(["none", "none", "all"])
    if p.border != "none":
        feats.append(f"border={p.border}")
    p.height = p.table_bottom + 1
    p.width = width
    return p


# -- a workbook ---------------------------------------------------------------------------------
def generate_layout(seed: int) -> tuple[bytes, list[dict]]:
    """Build a random but realistic workbook from ``seed`` and return ``(xlsx_bytes, truth)``.

    Deterministic: the same seed gives the same cells, merges, styles and truth
    (``random.Random(seed)``; workbook created/modified times are fixed).

    Each workbook has 1–2 sheets, each with 1–3 tables and, on about a third of the sheets, a
    form (usually above the tables), laid out in bands: pieces side by side are separated by 2–4
    fully empty columns, stacked bands by 2–4 fully empty rows (counted between the furthest
    cells of each piece's footprint, i.e. title/unit line/notes and merges included).

    Tables have 1–4 header rows (merged parents; four rows rarely: a year or plan level above
    top > market > child). Some one-header-row tables without merges are written as Excel tables
    (ListObjects, ``list_object``; ``totalsRowCount=1`` with a totals row), often with a note line
    directly under them, marked or not (``plain_note``). On some sheets the pane is frozen right
    under the first table's header rows (``frozen_pane``). Forms are 3–7 label/value pairs (see
    :func:`_build_form`).

    ``truth`` is a list of dicts, one per table or form, ordered by sheet then top-left cell::

        {"doc": "seed:<seed>", "sheet": str, "range": "B4:G12",
         "kind": "table" | "key_value",
         "header_rows": int,                  # 1..4 (None for a form)
         "columns": [int, ...],               # 1-based sheet columns that have a header
         "headers": ["Region", "2023 > Q1", ...],   # flattened, aligned with "columns", unique
         "labels": [str, ...] | None,         # a form's labels without their colon, in reading
                                              # order (None for a table)
         "title": str | None,                 # title line above (not in the range)
         "features": [str, ...],              # layout tags used to explain failures
         "furniture": {"title_row": int | None, "unit_row": int | None,
                       "note_rows": [int, ...]}}   # 1-based sheet rows outside the range

    A form's ``columns`` and ``headers`` are ``None``. The range convention is the module's:
    header rows + data rows + totals row (plus any empty interior row or spacer column inside),
    never the title, unit line or notes; a form's range is the bounding box of its labels and
    values, a merged value with all the cells it covers. A ListObject's ``ref`` is
    its table's range. A sheet may also start with a bold sheet heading (not a table title).
    Header labels: a row-label column whose label is vertically merged, or written only in the
    top or only in the leaf header row, is one level (``Region``); a parent merged over its
    children gives ``Parent > Child``; the spacer column has no header and is not in ``columns``.
    """
    from openpyxl import Workbook
    from openpyxl.styles import Border, Font, PatternFill, Side
    from openpyxl.worksheet.filters import AutoFilter
    from openpyxl.worksheet.table import Table, TableStyleInfo

    rng = random.Random(seed)
    wb = Workbook()
    wb.remove(wb.active)
    truth: list[dict] = []
    n_sheets = rng.choices([1, 2], weights=[3, 1])[0]
    used_names: set[str] = set()
    thin = Side(style="thin")
    n_list_objects = 0
    for s in range(n_sheets):
        lang = rng.choice(["en", "ja"])
        name = rng.choice(_SHEETS[lang])
        while name in used_names:
            name = f"{name}{s + 1}"
        used_names.add(name)
        ws = wb.create_sheet(name)
        n_tables = rng.choice([1, 2, 2, 3])
        row0 = 1 + rng.randint(0, 2)
        if rng.random() < 0.3:
            ws.cell(1, 1, rng.choice(_HEADINGS[lang])).font = Font(bold=True, size=18)
            row0 = 3 + rng.randint(0, 1)
        pieces = [_build_table(rng, rng.choice([lang, lang, "en" if lang == "ja" else "ja"]), k + 1)
                  for k in range(n_tables)]
        if rng.random() < 0.3:  # a form, usually above the tables (an order's header fields)
            at = 0 if rng.random() < 0.6 else rng.randint(1, len(pieces))
            form_lang = rng.choice([lang, lang, "en" if lang == "ja" else "ja"])
            pieces.insert(at, _build_form(rng, form_lang))
        freeze = rng.random() < 0.25
        freeze_label_column = rng.random() < 0.5
        # bands: 1 or 2 pieces side by side
        bands: list[list[_Piece]] = []
        queue = list(pieces)
        while queue:
            k = 2 if len(queue) >= 2 and rng.random() < 0.45 else 1
            bands.append(queue[:k])
            queue = queue[k:]
        top = row0
        sheet_truth = []
        for band in bands:
            left = 1 + rng.randint(0, 1)
            bottom = top
            for piece in band:
                _place(ws, piece, top, left, thin, Border, Font, PatternFill)
                b0, b1, b2, b3 = piece.box()
                r1, c1, r2, c2 = top + b0, left + b1, top + b2, left + b3
                feats = list(piece.features)
                if len(band) > 1:
                    feats.append("side_by_side")
                if piece.list_object:
                    n_list_objects += 1
                    table = Table(displayName=f"Table{n_list_objects}",
                                  ref=range_ref(r1, c1, r2, c2),
                                  totalsRowCount=1 if piece.total_row is not None else None)
                    table.autoFilter = AutoFilter(ref=range_ref(
                        r1, c1, r2 - (piece.total_row is not None), c2))
                    table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2",
                                                          showRowStripes=True)
                    ws.add_table(table)
                if freeze and piece.kind == "table":
                    freeze = False  # the first table of the sheet
                    ws.freeze_panes = ws.cell(r1 + piece.header_rows,
                                              left + 1 if freeze_label_column else 1).coordinate
                    feats.append("frozen_pane")
                cols = sorted(piece.headers)
                form = piece.kind == "key_value"
                sheet_truth.append({
                    "doc": f"seed:{seed}", "sheet": name, "range": range_ref(r1, c1, r2, c2),
                    "kind": piece.kind, "header_rows": None if form else piece.header_rows,
                    "columns": None if form else [left + j for j in cols],
                    "headers": None if form else [piece.headers[j] for j in cols],
                    "labels": list(piece.labels) if form else None,
                    "title": piece.title, "features": feats,
                    "furniture": {
                        "title_row": None if piece.title_row is None else top + piece.title_row,
                        "unit_row": None if piece.unit_row is None else top + piece.unit_row,
                        "note_rows": [top + r for r in piece.note_rows]},
                })
                bottom = max(bottom, top + piece.height - 1)
                left = left + piece.width + rng.randint(2, 4)
            top = bottom + 1 + rng.randint(2, 4)
        sheet_truth.sort(key=lambda t: parse_range(t["range"])[:2])
        truth.extend(sheet_truth)
    wb.properties.created = wb.properties.modified = datetime(2024, 1, 1)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue(), truth


def _place(ws, piece: _Piece, top: int, left: int, thin, Border, Font, PatternFill) -> None:
    t0, t1 = piece.table_top, piece.table_bottom
    h_end = t0 + piece.header_rows - 1
    for (r, c), (value, style) in piece.cells.items():
        cell = ws.cell(top + r, left + c)
        if value is not None:
            cell.value = value
        if style.get("bold") or style.get("size") or style.get("italic"):
            cell.font = Font(bold=bool(style.get("bold")), italic=bool(style.get("italic")),
                             size=style.get("size") or 11)
        if style.get("fill"):
            cell.fill = PatternFill("solid", fgColor=style["fill"])
        if style.get("fmt"):
            cell.number_format = style["fmt"]
    if piece.border == "all":
        for r in range(t0, t1 + 1):
            for c in range(piece.width):
                ws.cell(top + r, left + c).border = Border(left=thin, right=thin, top=thin, bottom=thin)
    elif piece.border == "header":
        for c in range(piece.width):
            ws.cell(top + h_end, left + c).border = Border(bottom=thin)
            if piece.total_row is not None:
                ws.cell(top + piece.total_row, left + c).border = Border(top=thin)
    for r1, c1, r2, c2 in piece.merges:
        ws.merge_cells(start_row=top + r1, start_column=left + c1,
                       end_row=top + r2, end_column=left + c2)


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
    blocks, _ = _run_stages(xlsx_bytes)
    return _scored_blocks(blocks, doc)


def _run_stages(data: bytes):
    from extraction_assets.pipeline.stages import normalize_stage, parse_stage, segment_stage

    parsed = parse_stage(HASH, data).tables
    norm = normalize_stage(HASH, parsed["parsed_cells"], parsed["parsed_sheets"], parsed["styles"],
                           parsed["workbook_properties"]).tables
    seg = segment_stage(HASH, norm["cells"], norm["sheets"], parsed["sheet_objects"]).tables
    return seg, norm


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
    pairs.sort(key=lambda x: (-x[0], x[1], x[2]))
    used_t, used_p, out = set(), set(), []
    for _, ti, pi in pairs:
        if ti not in used_t and pi not in used_p:
            used_t.add(ti)
            used_p.add(pi)
            out.append((ti, pi))
    return out


def _by_sheet(items: list[dict]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for it in items:
        out[(it.get("doc", ""), it["sheet"])].append(it)
    return out


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
    tsheets, psheets = _by_sheet(truth), _by_sheet(predicted)
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
    tsheets, psheets = _by_sheet(truth), _by_sheet(predicted)
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
            _, norm = _run_stages(path.read_bytes())
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


# -- runs ---------------------------------------------------------------------------------------
def evaluate_generator(n: int = 200, start: int = 0) -> dict:
    """Generate layouts ``start … start+n-1``, predict, and return ``{"scores": score(...),
    "failures": diagnose(...), "forms": {"scores": ..., "failures": ...}, "truth": [...],
    "predicted": [...], "seconds": float}``: ``scores``/``failures`` for the tables, ``forms``
    the same for the ``key_value`` blocks."""
    t0 = time.perf_counter()
    truth, pred = [], []
    for seed in range(start, start + n):
        data, tr = generate_layout(seed)
        truth.extend(tr)
        pred.extend(predict(data, doc=f"seed:{seed}"))
    forms = {"scores": score(pred, truth, kind="key_value"),
             "failures": diagnose(pred, truth, kind="key_value")}
    return {"scores": score(pred, truth), "failures": diagnose(pred, truth), "forms": forms,
            "truth": truth, "predicted": pred, "seconds": time.perf_counter() - t0}


def evaluate_corpus(corpus: Path | None = None) -> dict[str, dict]:
    """Score every corpus ground-truth source; ``{source: {"scores", "failures", "files",
    "errors"}}``."""
    corpus = shared_dir("corpus", corpus)
    out = {}
    for source, files in corpus_truth(corpus).items():
        truth, pred, errors = [], [], []
        for rel, tr in files.items():
            for t in tr:
                t["doc"] = rel
            truth.extend(tr)
            try:
                pred.extend(predict((corpus / rel).read_bytes(), doc=rel))
            except Exception as exc:  # noqa: BLE001 - unreadable formats count as misses
                errors.append(f"{rel}: {type(exc).__name__}: {exc}")
        out[source] = {"scores": score(pred, truth), "failures": diagnose(pred, truth),
                       "files": len(files), "errors": errors}
    return out


def _fmt_scores(name: str, s: dict) -> str:
    header = (f"{s['header_accuracy']:.3f} ({s['header_correct']}/{s['header_columns']})"
              if s["header_columns"] else "-")
    rows = f"{s['header_rows_accuracy']:.3f}" if s["header_rows_tables"] else "-"
    return (f"{name:<24} {s['n_truth']:>5} {s['n_pred']:>5}  "
            f"{s['exact_precision']:.3f} {s['exact_recall']:.3f} {s['exact_f1']:.3f}   "
            f"{s['iou_precision']:.3f} {s['iou_recall']:.3f} {s['iou_f1']:.3f}   "
            f"{header:<18}  {rows}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: print scores for the generator's tables, its forms (``key_value``
    ranges) and the corpus, failure kinds and the worst examples; ``--json OUT`` also writes
    everything as JSON (the forms under ``generator.forms``). Returns the exit code (0)."""
    ap = argparse.ArgumentParser(description="Score table segmentation against labelled workbooks.")
    ap.add_argument("--seeds", type=int, default=200, help="generated layouts (default 200)")
    ap.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--corpus", default=None, help="shared corpus dir (default "
                    "$EXTRACTION_ASSETS_CORPUS or ../shared/corpus)")
    ap.add_argument("--labelled", default=None, help="human-labelled sets dir (default "
                    "$EXTRACTION_ASSETS_LABELLED or ../shared/labelled)")
    ap.add_argument("--json", dest="json_out", default=None, help="write results as JSON here")
    ap.add_argument("--worst", type=int, default=15, help="worst examples to print")
    args = ap.parse_args(argv)

    results: dict = {}
    if args.seeds > 0:
        results["generator"] = evaluate_generator(args.seeds, args.start)
    corpus = shared_dir("corpus", args.corpus)
    if corpus.is_dir():
        results.update(evaluate_corpus(corpus))
    label_sets = []  # (label, {"scores", "failures", ...})
    for name, res in results.items():
        if name == "generator":
            label_sets += [(f"generator ({args.seeds})", res),
                           (f"generator forms ({args.seeds})", res["forms"])]
        else:
            label_sets.append((name, res))
    print(f"{'label set':<24} {'truth':>5} {'pred':>5}  exact P/R/F1          "
          f"IoU>=0.8 P/R/F1        header acc          hdr-rows")
    for label, res in label_sets:
        print(_fmt_scores(label, res["scores"]))
    for label, res in label_sets:
        kinds = Counter(k for f in res["failures"] for k in f["kinds"])
        if kinds:
            print(f"\nfailure kinds — {label}:")
            for k, n in kinds.most_common():
                print(f"  {n:>5}  {k}")
        for e in res.get("errors", []):
            print(f"  error: {e}")
    for label, res in label_sets:
        fails = res["failures"]
        if not fails or args.worst <= 0:
            continue
        per_doc = Counter(f["doc"] for f in fails)
        print(f"\nworst examples — {label}:")
        shown = 0
        for doc, _ in per_doc.most_common():
            for f in (f for f in fails if f["doc"] == doc):
                if shown >= args.worst:
                    break
                print(f"  {doc or '-'} [{f['sheet']}] expected {f['expected']} predicted "
                      f"{', '.join(f['predicted']) or '-'}: {', '.join(f['kinds'])}"
                      + (f" ({f['detail']})" if f['detail'] else "")
                      + (f"  features={','.join(f['features'])}" if f['features'] else ""))
                shown += 1
    labelled = evaluate_labelled(shared_dir("labelled", args.labelled))
    for name, res in labelled.items():
        print()
        print("\n".join(format_scores(f"labelled {name} ({res['files']} files)", res["scores"])))
        for e in res["errors"]:
            print(f"  error: {e}")
        for f in res["failures"][:max(args.worst, 0)]:
            print(f"  {f['doc']} [{f['sheet']}] expected {f['expected'] or '-'} predicted "
                  f"{', '.join(f['predicted']) or '-'}: {f['what']}")
    results["labelled"] = labelled
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str),
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
