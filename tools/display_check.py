"""Check cell display text against Excel's own CSV exports (the SheetJS ground truth).

Run as ``python -m tools.display_check [--corpus DIR] [--json OUT]``.

The oracle is ``<corpus>/groundtruth/sheetjs_excel_csv/``: ``<year>_<name>.<i>.csv`` is sheet
``i`` (0-based, in workbook order, chartsheets and macro sheets included) of workbook ``<name>``
exported by Excel for Mac (``2016_`` for Excel 2016, one ``2011_`` file). The workbooks live in
``<corpus>/files/<source>/<name>``. Only OOXML workbooks (``.xlsx``/``.xlsm``) are read; CSVs of
``.xls``/``.xlsb``/``.ods`` workbooks, and of workbooks absent from the corpus, are listed as
skipped.

Each workbook goes through the project's own pipeline: :func:`~extraction_assets.core.ooxml.
open_workbook` → ``iter_sheets()`` → :func:`~extraction_assets.core.normalize.normalize_sheet`,
and ``display_text`` is looked up by (row, col).

How the CSV was read: the bytes are UTF-8 when they decode as such, otherwise Windows-1252 (the
files hold ``0x80`` for €, ``0x93``/``0x94`` for curly quotes, ``0xDF`` for ß: that is cp1252,
not Mac Roman), with the five bytes cp1252 leaves undefined read as Latin-1. Fields are parsed
with :mod:`csv` (comma separated, ``"`` quoting, embedded newlines kept).

Comparable cells: every (row, col) where the CSV field is non-empty or our ``display_text`` is
non-empty, except

* cells covered by a merged range other than its top-left cell (``merged_from`` set): Excel
  writes them empty, we repeat the anchor's text on purpose;
* formulas without a cached value (``value_status == "uncached_formula"``), and formulas whose
  value changes at every recalculation (``NOW``, ``TODAY``, ``RAND``, ``RANDBETWEEN``): Excel
  recalculated them when it opened the file, we show the cached value;
* cells whose text cannot be written in cp1252, the CSV's character set: Excel writes such
  characters as ``_`` (CJK, Hebrew, ...), so they cannot be compared;
* sheets whose CSV is missing (Excel exports no CSV for a chartsheet or an empty sheet).

Quirks of the oracle, handled in the comparison:

* Leading and trailing spaces are ignored on both sides. The CSV keeps the spaces that ``_x``
  padding and ``*`` fill produce (``"12,346 "`` for ``#,##0 ;(#,##0)``); the formatter strips
  them because they are layout, not content.
* The CSV holds the full text of a value even when it is wider than its column: Excel's
  ``######`` for a too-narrow column and the column-width-dependent shortening of ``General``
  numbers do not reach the export (``number_format.xlsm`` has ``1234567.89%``,
  ``296296:17:37`` and ``-12345.6789`` in standard-width columns, which show ``####`` or fewer
  digits on screen). So ``General`` is compared with the standard-width (11 character) rule.
* Line breaks inside a cell are exported as a bare ``\\r`` (Excel for Mac), inside quotes; both
  sides have ``\\r\\n`` and ``\\r`` normalised to ``\\n``.
* A value Excel cannot show (a negative date, a date past 9999) is exported as a run of 255
  ``#``, not as the column-wide ``#####`` seen on screen: any all-``#`` text equals any other.
* Platform: Excel for Mac shows built-in formats 14 and 22 (``m/d/yyyy``, ``m/d/yyyy h:mm``
  in en-US Windows) with a two-digit year. A cell with style ``numFmtId`` 14 or 22 matches when
  the CSV equals its rendering with ``m/d/yy`` / ``m/d/yy h:mm``; these are counted as matches
  and reported separately as ``platform-adjusted``. Likewise ``[$-F400]`` (the system time
  format): en-US Windows shows ``h:mm:ss AM/PM``, the Mac that made the CSVs ``hh:mm:ss``.
* The CSV starts at the top-left cell of the sheet's used range, not at A1 (Excel's used range
  includes formatted empty cells): see :func:`_origin` for how the offset is found.

Mismatches are grouped by kind: ``missing cell`` (the CSV has text, we have none), ``extra cell``
(we have text, the CSV is empty), or the category of the cell's number format: ``date``,
``time``, ``elapsed``, ``fraction``, ``scientific``, ``general``, ``text``, ``number``;
``string`` (a string cell), ``bool``/``error``; a ``formula: `` prefix marks formula cells,
whose cached value Excel may have recomputed differently.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from extraction_assets.core.a1 import cell_ref, parse_range
from extraction_assets.core.normalize import normalize_sheet
from extraction_assets.core.numfmt import format_value, is_date_format
from extraction_assets.core.open import open_workbook
from tools.paths import shared_dir

GROUNDTRUTH = "groundtruth/sheetjs_excel_csv"
_CSV_NAME = re.compile(r"^(\d{4})_(.+)\.(\d+)\.csv$")
_OOXML = (".xlsx", ".xlsm")
_EXAMPLES_PER_KIND = 5
_VOLATILE = re.compile(r"(?i)\b(NOW|TODAY|RAND|RANDBETWEEN)\s*\(")
# built-in formats Excel for Mac shows with a two-digit year (en-US Windows: m/d/yyyy...)
_MAC_BUILTINS = {14: "m/d/yy", 22: "m/d/yy h:mm"}
# [$-F400] is "the system's time format": the Mac that made the CSVs used 24-hour HH:mm:ss
_MAC_SYSTEM_TIME = "hh:mm:ss"


@dataclass
class Mismatch:
    """One comparable cell whose text differs from Excel's."""

    kind: str
    file: str
    sheet: str
    ref: str
    code: str
    raw: str | None
    expected: str
    ours: str


@dataclass
class Report:
    """The outcome of a run: counts, mismatches and what was skipped (with the reason)."""

    compared: int = 0
    matches: int = 0
    platform_adjusted: int = 0
    excluded: Counter = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0
    sheets: int = 0

    @property
    def match_rate(self) -> float:
        """Matches over compared cells (1.0 when nothing was compared)."""
        return self.matches / self.compared if self.compared else 1.0

    def by_kind(self) -> dict[str, list[Mismatch]]:
        """Mismatches grouped by kind, largest group first."""
        groups: dict[str, list[Mismatch]] = defaultdict(list)
        for m in self.mismatches:
            groups[m.kind].append(m)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def to_json(self) -> dict:
        """A JSON-serialisable summary (every mismatch included)."""
        return {
            "compared": self.compared, "matches": self.matches,
            "match_rate": round(self.match_rate, 6), "files": self.files, "sheets": self.sheets,
            "platform_adjusted": self.platform_adjusted,
            "excluded": dict(self.excluded),
            "mismatch_kinds": {k: len(v) for k, v in self.by_kind().items()},
            "mismatches": [asdict(m) for m in self.mismatches],
            "skipped": [{"csv": c, "reason": r} for c, r in self.skipped],
        }


def decode_csv(data: bytes) -> str:
    """Text of an Excel CSV export: UTF-8 if valid, else cp1252 (undefined bytes as Latin-1)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(b.decode("cp1252", errors="strict") if _cp1252_defined(b) else b.decode("latin-1")
                       for b in (data[i:i + 1] for i in range(len(data))))


def _cp1252_defined(byte: bytes) -> bool:
    return byte[0] not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)


def read_csv(path: Path) -> dict[tuple[int, int], str]:
    """Non-empty fields of an Excel CSV export by 1-based (row, col)."""
    text = decode_csv(path.read_bytes())
    out = {}
    for r, fields in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
        for c, value in enumerate(fields, start=1):
            value = value.replace("\r\n", "\n")
            if value.strip():
                out[(r, c)] = value
    return out


def _writable(text: str) -> bool:
    try:
        text.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _category(code: str) -> str:
    """A coarse category of a number format code, for grouping mismatches."""
    low = re.sub(r'"[^"]*"|\\.', "", code or "General").lower()
    if re.search(r"\[(h+|m+|s+)\]", low):
        return "elapsed"
    if is_date_format(code or "General"):
        plain = re.sub(r"\[[^\]]*\]", "", low)
        return "date" if re.search(r"[dy]|m{3,}", plain) or (
            "m" in plain and "h" not in plain and "s" not in plain) else "time"
    if re.search(r"[0#?]\s*/\s*[0-9#?]", low):
        return "fraction"
    if re.search(r"e[+-]", low):
        return "scientific"
    if "general" in low:
        return "general"
    if "@" in low and not re.search(r"[0#?]", low):
        return "text"
    return "number"


def workbook_index(corpus: Path) -> dict[str, Path]:
    """Workbook file name → path, over every source folder of ``<corpus>/files``."""
    index: dict[str, Path] = {}
    for path in sorted((corpus / "files").rglob("*")):
        if path.is_file():
            index.setdefault(path.name, path)
    return index


def run(corpus: Path | None = None) -> Report:
    """Compare every comparable cell of the ground truth with our display text."""
    corpus = Path(corpus) if corpus else shared_dir("corpus")
    gt_dir = corpus / GROUNDTRUTH
    index = workbook_index(corpus)
    by_book: dict[str, dict[int, Path]] = defaultdict(dict)
    report = Report()
    for path in sorted(gt_dir.glob("*.csv")):
        m = _CSV_NAME.match(path.name)
        if not m:
            report.skipped.append((path.name, "unrecognised file name"))
            continue
        name, i = m.group(2), int(m.group(3))
        if not name.lower().endswith(_OOXML):
            report.skipped.append((path.name, "not OOXML (.xls/.xlsb/.ods are not read)"))
        elif name not in index:
            report.skipped.append((path.name, "workbook not in the corpus"))
        else:
            by_book[name][i] = path
    for name, csvs in sorted(by_book.items()):
        _compare_book(name, index[name], csvs, report)
    return report


def _compare_book(name: str, path: Path, csvs: dict[int, Path], report: Report) -> None:
    try:
        wb = open_workbook(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - a workbook we cannot open is reported, not fatal
        for i, p in sorted(csvs.items()):
            report.skipped.append((p.name, f"workbook failed to open: {type(exc).__name__}: {exc}"))
        return
    report.files += 1
    styles = wb.style_context
    mac_codes = _mac_builtin_codes(styles.styles)
    seen = set()
    for pos, sheet in enumerate(wb.iter_sheets()):
        if pos not in csvs:
            continue
        seen.add(pos)
        report.sheets += 1
        grid = normalize_sheet(sheet, styles)
        ours = {(cell["row"], cell["col"]): cell for cell in grid.records()}
        exported = read_csv(csvs[pos])
        dr, dc = _origin(exported, ours, sheet.info.declared_dimension)
        expected = {(r + dr, c + dc): text for (r, c), text in exported.items()}
        _compare_sheet(name, sheet.info.name, expected, ours, report, styles.date1904, mac_codes)
    wb.close()
    for i, p in sorted(csvs.items()):
        if i not in seen:
            report.skipped.append((p.name, "no such sheet in the workbook"))


def _origin(exported: dict, ours: dict, dimension: str | None) -> tuple[int, int]:
    """Row and column offsets of the CSV's first field in the sheet.

    Excel exports the sheet's used range, so the CSV's A1 is the used range's top-left cell,
    which includes formatted empty cells. Candidates: the top-left of ``<dimension>`` (what Excel
    itself wrote), the top-left of our non-empty cells and A1; the one aligning most texts wins
    (ties keep that order).
    """
    candidates = []
    if dimension:
        try:
            r1, c1, _, _ = parse_range(dimension)
            candidates.append((r1 - 1, c1 - 1))
        except ValueError:
            pass
    texts = {k: (c["display_text"] or "").strip() for k, c in ours.items() if c["merged_from"] is None}
    filled = [k for k, t in texts.items() if t]
    if filled:
        candidates.append((min(r for r, _ in filled) - 1, min(c for _, c in filled) - 1))
    candidates.append((0, 0))

    def score(offset):
        dr, dc = offset
        return sum(texts.get((r + dr, c + dc)) == t.strip() for (r, c), t in exported.items())

    return max(dict.fromkeys(candidates), key=score)


def _mac_builtin_codes(styles) -> dict[str, str]:
    """Code → Mac rendering code, for codes the workbook only uses as built-in 14 or 22."""
    ids: dict[str, set[int]] = defaultdict(set)
    for style in styles:
        ids[style.number_format].add(style.number_format_id)
    return {code: _MAC_BUILTINS[next(iter(found))] for code, found in ids.items()
            if len(found) == 1 and next(iter(found)) in _MAC_BUILTINS}


def _same(expected: str, ours: str) -> bool:
    a = expected.strip().replace("\r\n", "\n").replace("\r", "\n")
    b = ours.strip().replace("\r\n", "\n").replace("\r", "\n")
    return a == b or (a != "" and b != "" and set(a) == {"#"} == set(b))


def _compare_sheet(book: str, sheet: str, expected: dict, ours: dict, report: Report,
                   date1904: bool = False, mac_codes: dict[str, str] | None = None) -> None:
    for key in sorted(set(expected) | set(ours)):
        cell = ours.get(key)
        exp = expected.get(key, "")
        if cell is not None and cell["merged_from"] is not None:
            if not exp:
                continue
            report.excluded["merged (covered) cell"] += 1
            continue
        if cell is not None and cell["value_status"] == "uncached_formula":
            report.excluded["formula without cached value"] += 1
            continue
        if cell is not None and cell["formula"] and _VOLATILE.search(cell["formula"]):
            report.excluded["volatile formula"] += 1
            continue
        text = (cell["display_text"] or "") if cell is not None else ""
        if not exp.strip() and not text.strip():
            continue
        if not _writable(text):
            report.excluded["text outside cp1252"] += 1
            continue
        report.compared += 1
        if _same(exp, text):
            report.matches += 1
            continue
        mac = (mac_codes or {}).get(cell["number_format"]) if cell is not None else None
        if cell is not None and (cell["number_format"] or "").upper().startswith("[$-F400]"):
            mac = _MAC_SYSTEM_TIME
        if mac and cell["number_value"] is not None and _same(
                exp, format_value(cell["number_value"], mac, date1904)):
            report.matches += 1
            report.platform_adjusted += 1
            continue
        a, b = exp.strip(), text.strip()
        code = cell["number_format"] if cell is not None else ""
        if cell is None or not b:
            kind = "missing cell"
        elif not a:
            kind = "extra cell"
        elif cell["value_type"] in ("string", "bool", "error"):
            kind = cell["value_type"]
        else:
            kind = _category(code)
        if cell is not None and cell["formula"]:
            kind = "formula: " + kind
        report.mismatches.append(Mismatch(
            kind, book, sheet, cell_ref(*key), code,
            cell["raw_value"] if cell is not None else None, exp, text))


def print_report(report: Report, out=sys.stdout, examples: int = _EXAMPLES_PER_KIND) -> None:
    """Human-readable summary: totals, match rate, mismatches by kind with examples."""
    w = out.write
    w(f"workbooks read: {report.files}, sheets compared: {report.sheets}\n")
    w(f"compared: {report.compared}  matches: {report.matches}  "
      f"match rate: {100 * report.match_rate:.2f} %\n")
    if report.platform_adjusted:
        w(f"platform-adjusted matches (Mac 2-digit year for numFmtId 14/22, Mac system time for "
          f"[$-F400]): {report.platform_adjusted}\n")
    if report.excluded:
        w("excluded from comparison: " + ", ".join(f"{k}: {v}" for k, v in report.excluded.items()) + "\n")
    for kind, items in report.by_kind().items():
        codes = Counter(m.code for m in items)
        w(f"\n[{kind}] {len(items)} mismatches; codes: "
          + "; ".join(f"{c!r}×{n}" for c, n in codes.most_common(5)) + "\n")
        for m in items[:examples]:
            w(f"  {m.file} / {m.sheet} / {m.ref}  code={m.code!r} raw={m.raw!r}\n"
              f"      expected={m.expected!r}\n      ours    ={m.ours!r}\n")
    reasons = Counter(r for _, r in report.skipped)
    w(f"\nskipped CSVs: {len(report.skipped)} ("
      + "; ".join(f"{r}: {n}" for r, n in reasons.most_common()) + ")\n")
    for name, reason in report.skipped:
        if not reason.startswith("not OOXML"):
            w(f"  {name}: {reason}\n")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m tools.display_check",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=None,
                        help="the shared corpus (default: $EXTRACTION_ASSETS_CORPUS or ../shared/corpus)")
    parser.add_argument("--json", type=Path, default=None, help="write the full report as JSON here")
    parser.add_argument("--examples", type=int, default=_EXAMPLES_PER_KIND,
                        help="examples printed per mismatch kind")
    args = parser.parse_args(argv)
    corpus = args.corpus or shared_dir("corpus")
    if not (corpus / GROUNDTRUTH).is_dir():
        print(f"no ground truth at {corpus / GROUNDTRUTH}", file=sys.stderr)
        return 2
    report = run(corpus)
    print_report(report, examples=args.examples)
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
