"""Generated layouts: a random but realistic workbook from a seed, with its truth (see
:mod:`tools.evaluate`)."""

from __future__ import annotations

import io
import random
from collections import defaultdict
from datetime import date, datetime, timedelta

from extraction_assets.core.a1 import parse_range, range_ref

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
