"""Hostile workbooks, each built in a few lines: the recipes of issues #27 and #34 that the
hostile-input benchmark (:mod:`tools.bench.hostile`) ingests, and the parts they are made of.

Every recipe is a function ``build(scale) -> (file name, bytes)``: ``scale=1`` is the size the
red-team run used (e.g. one cell of 250,000 characters, 1.9 GB of empty ``<row>`` elements
deflated to a few MB), a smaller scale shrinks what makes it costly (characters, elements,
cells) in proportion. The bytes are deterministic (fixed zip timestamps). Parts are streamed
(chains of generators), so building a recipe holds little memory. The documents (Word, PDF,
HTML, Markdown) are in :mod:`tools.bench.hostile_documents`.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterable
from xml.sax.saxutils import escape

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota")

#: A part: its text or bytes, or an iterable of byte blocks (streamed into the zip).
Part = str | bytes | Iterable[bytes]


def words(n_chars: int) -> str:
    """About ``n_chars`` characters of words separated by spaces, without a final full stop."""
    out, size, k = [], 0, 0
    while size < n_chars:
        word = _WORDS[k % len(_WORDS)] + str(k % 97)
        out.append(word)
        size += len(word) + 1
        k += 1
    return " ".join(out)


def repeated(unit: bytes, n_bytes: int, block: int = 1 << 20) -> Iterable[bytes]:
    """``unit`` repeated to about ``n_bytes`` bytes, as blocks of about ``block`` bytes."""
    per_block = max(1, block // len(unit))
    full, rest = divmod(max(1, n_bytes // len(unit)), per_block)
    for _ in range(full):
        yield unit * per_block
    if rest:
        yield unit * rest


def package(parts: dict[str, Part], *, duplicates: dict[str, Part] | None = None) -> bytes:
    """A zip of ``parts`` in order (deflated, fixed timestamps); ``duplicates`` are written as
    second entries under names already used (what a hostile writer can do)."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicates asked for
        entries = list(parts.items()) + list((duplicates or {}).items())
        for name, content in entries:
            info = zipfile.ZipInfo(name, _FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            if isinstance(content, str):
                content = content.encode()
            if isinstance(content, bytes):
                content = [content]
            with zf.open(info, "w", force_zip64=True) as out:
                for block in content:
                    out.write(block)
    return buf.getvalue()


def cell(ref: str, text: str | None = None, *, style: int | None = None,
         value: str | None = None) -> str:
    """A ``<c>``: inline text, or a ``<v>`` value, with an optional style index."""
    s = f' s="{style}"' if style is not None else ""
    if text is not None:
        return f'<c r="{ref}"{s} t="inlineStr"><is><t>{escape(text)}</t></is></c>'
    return f'<c r="{ref}"{s}><v>{value}</v></c>' if value is not None else f'<c r="{ref}"{s}/>'


def rows_xml(rows: dict[int, list[str]], hidden: Iterable[int] = ()) -> str:
    """``<row>`` elements of the cells by row (``hidden`` rows get ``hidden="1"``)."""
    hidden = set(hidden)
    return "".join(f'<row r="{r}"{_HIDDEN if r in hidden else ""}>{"".join(cells)}</row>'
                   for r, cells in sorted(rows.items()))


_HIDDEN = ' hidden="1"'


def worksheet(sheet_data: Part = "", *, before: str = "", after: Part = "") -> Iterable[bytes]:
    """A worksheet part: ``before`` (e.g. ``<cols>``), the ``<sheetData>`` content, ``after``
    (e.g. ``<mergeCells>``); the last two may be streamed."""
    yield f'{XML_DECL}<worksheet xmlns="{_MAIN}" xmlns:r="{REL_NS}">{before}<sheetData>'.encode()
    yield from part_blocks(sheet_data)
    yield b"</sheetData>"
    yield from part_blocks(after)
    yield b"</worksheet>"


def part_blocks(part: Part) -> Iterable[bytes]:
    if isinstance(part, str):
        return [part.encode()]
    if isinstance(part, bytes):
        return [part]
    return part


def styles_xml(cell_xfs: Iterable[str] = ('<xf numFmtId="0" fontId="0" fillId="0" '
                                          'borderId="0"/>',), *, num_fmts: str = "",
               fonts: str = '<font><sz val="11"/><name val="Calibri"/></font>') -> Iterable[bytes]:
    """A stylesheet with the given ``<numFmt>``s, ``<font>``s and ``cellXfs`` entries."""
    yield (f'{XML_DECL}<styleSheet xmlns="{_MAIN}"><numFmts>{num_fmts}</numFmts>'
           f'<fonts>{fonts}</fonts><fills><fill><patternFill patternType="none"/></fill></fills>'
           '<borders><border/></borders><cellXfs>').encode()
    batch: list[str] = []
    for xf in cell_xfs:
        batch.append(xf)
        if len(batch) >= 10_000:
            yield "".join(batch).encode()
            batch = []
    yield ("".join(batch) + "</cellXfs></styleSheet>").encode()


def workbook(sheets: list[tuple[str, Part]], *, states: dict[str, str] | None = None,
             styles: Part | None = None, targets: dict[str, str] | None = None,
             extra: dict[str, Part] | None = None, rels: dict[str, str] | None = None,
             duplicates: dict[str, Part] | None = None) -> bytes:
    """An xlsx of ``sheets`` (name, worksheet part) written as ``xl/worksheets/sheetN.xml``;
    ``targets`` maps a sheet name to another part name (several sheets may share one),
    ``states`` gives ``hidden``/``veryHidden``, ``extra`` adds parts, ``rels`` adds the
    relationships part (name -> XML) of a worksheet (``sheetN``)."""
    states, targets = states or {}, targets or {}
    parts: dict[str, Part] = {}
    sheet_els, rel_els = [], []
    for i, (name, xml) in enumerate(sheets, start=1):
        target = targets.get(name, f"worksheets/sheet{i}.xml")
        state = f' state="{states[name]}"' if name in states else ""
        sheet_els.append(f'<sheet name="{escape(name)}" sheetId="{i}"{state} r:id="rId{i}"/>')
        rel_els.append(f'<Relationship Id="rId{i}" Type="{REL_NS}/worksheet" Target="{target}"/>')
        if xml is not None and "xl/" + target not in parts:
            parts["xl/" + target] = xml
    if styles is not None:
        rel_els.append(f'<Relationship Id="rIdS" Type="{REL_NS}/styles" Target="styles.xml"/>')
        parts["xl/styles.xml"] = styles
    for sheet, xml in (rels or {}).items():
        parts[f"xl/worksheets/_rels/{sheet}.xml.rels"] = xml
    head = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.'
            'org/package/2006/content-types"><Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
            f'ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
            f'ContentType="{_CT}.sheet.main+xml"/></Types>'),
        "_rels/.rels": (f'{XML_DECL}<Relationships xmlns="{_PKG_REL}"><Relationship Id="rId1" '
                        f'Type="{REL_NS}/officeDocument" Target="xl/workbook.xml"/>'
                        '</Relationships>'),
        "xl/workbook.xml": (f'{XML_DECL}<workbook xmlns="{_MAIN}" xmlns:r="{REL_NS}"><sheets>'
                            f'{"".join(sheet_els)}</sheets></workbook>'),
        "xl/_rels/workbook.xml.rels": (f'{XML_DECL}<Relationships xmlns="{_PKG_REL}">'
                                       f'{"".join(rel_els)}</Relationships>'),
    }
    return package({**head, **parts, **(extra or {})}, duplicates=duplicates)


def table_sheet(body_rows: dict[int, list[str]], *, before: str = "", after: str = "",
                hidden_rows: Iterable[int] = ()) -> Iterable[bytes]:
    """A worksheet whose row 1 is a header ``Item | Note`` and whose other rows are given."""
    rows = {1: [cell("A1", "Item"), cell("B1", "Note")], **body_rows}
    return worksheet(rows_xml(rows, hidden_rows), before=before, after=after)


# -- the recipes: hangs and blow-ups ---------------------------------------------------------
def long_sentence(scale: float) -> tuple[str, bytes]:
    """1. One cell of 250,000 characters of words without a final full stop."""
    text = words(int(250_000 * scale))
    return "long_sentence.xlsx", workbook([("S", worksheet(rows_xml({1: [cell("A1", text)]})))])


def merge_fill(scale: float) -> tuple[str, bytes]:
    """2. Eight merges of 256 x 256 cells over anchors of 1,000 characters."""
    n = max(2, int(256 * scale ** 0.5))
    anchors, merges = {}, []
    for k in range(8):
        top = 1 + k * n
        anchors[top] = [cell(f"A{top}", words(1000) + f" {k}")]
        merges.append(f'<mergeCell ref="A{top}:{_letters(n)}{top + n - 1}"/>')
    return "merge_fill.xlsx", workbook([("S", worksheet(
        rows_xml(anchors), after=f"<mergeCells>{''.join(merges)}</mergeCells>"))])


def frame_bloat(scale: float) -> tuple[str, bytes]:
    """3. 64 MB of ``<x/>`` in an ``<extLst>`` after the sheet data."""
    tail = chain([b"<extLst><ext uri=\"{0}\">"], repeated(b"<x/>", int(64e6 * scale)),
                 [b"</ext></extLst>"])
    return "frame_bloat.xlsx", workbook([("S", worksheet(
        rows_xml({1: [cell("A1", "kept")]}), after=tail))])


def empty_rows(scale: float) -> tuple[str, bytes]:
    """4. 1.9 GB of self-closing ``<row r="9"/>``."""
    data = chain([rows_xml({1: [cell("A1", "first")]}).encode()],
                 repeated(b'<row r="9"/>', int(1.9e9 * scale)))
    return "empty_rows.xlsx", workbook([("S", worksheet(data))])


def one_huge_row(scale: float) -> tuple[str, bytes]:
    """4. One ``<row>`` holding 512 MB (of empty cells)."""
    data = chain([b'<row r="1">', cell("A1", "first").encode()],
                 repeated(b'<c r="B1"/>', int(512e6 * scale)), [b"</row>"])
    return "one_huge_row.xlsx", workbook([("S", worksheet(data))])


def huge_cell(scale: float) -> tuple[str, bytes]:
    """5. A table cell of 1,000,000 characters."""
    rows = {r: [cell(f"A{r}", f"item {r}"), cell(f"B{r}", f"note {r}")] for r in range(2, 6)}
    rows[3][1] = cell("B3", words(int(1_000_000 * scale)))
    return "huge_cell.xlsx", workbook([("S", table_sheet(rows))])


def many_styles(scale: float) -> tuple[str, bytes]:
    """6. 1,000,000 ``cellXfs`` entries."""
    xfs = ('<xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
           for _ in range(int(1_000_000 * scale)))
    sheet = worksheet(rows_xml({1: [cell("A1", "x", style=1)]}))
    return "many_styles.xlsx", workbook([("S", sheet)], styles=styles_xml(xfs))


def shared_part(scale: float) -> tuple[str, bytes]:
    """7. 50 ``<sheet>`` entries pointing at one part of 100,000 cells."""
    n_rows = max(2, int(10_000 * scale))
    body = "".join(f'<row r="{r}">' + "".join(f'<c r="{c}{r}"><v>{r * 10 + k}</v></c>'
                                               for k, c in enumerate("ABCDEFGHIJ")) + "</row>"
                   for r in range(1, n_rows + 1))
    sheets = [(f"S{k}", worksheet(body) if k == 1 else None) for k in range(1, 51)]
    return "shared_part.xlsx", workbook(sheets, targets={f"S{k}": "worksheets/sheet1.xml"
                                                         for k in range(1, 51)})


def xlsb_parts(scale: float) -> tuple[str, bytes]:
    """8. An ``.xlsb`` package of 20,006 entries (the part-count limit is 10,000)."""
    parts: dict[str, Part] = {"[Content_Types].xml": "<Types/>", "xl/workbook.bin": b"\x83\x01\x00"}
    for k in range(int(20_004 * scale)):
        parts[f"xl/junk/{k}.bin"] = b""
    return "xlsb_parts.xlsb", package(parts)


# -- the recipes: odd values that crashed untyped --------------------------------------------
def _one_cell(cell_xml: str, *, before: str = "", styles: Part | None = None) -> bytes:
    return workbook([("S", worksheet(f'<row r="1">{cell("A1", "first")}</row>{cell_xml}',
                                     before=before))], styles=styles)


def odd_values() -> dict[str, bytes]:
    """The odd values of issue #27 that failed a file with an untyped error, one file each."""
    zeros = styles_xml(['<xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>',
                        '<xf numFmtId="164" fontId="0" fillId="0" borderId="0"/>'],
                       num_fmts='<numFmt numFmtId="164" formatCode="0.' + "0" * 400 + '"/>')
    return {
        "column_zzz.xlsx": _one_cell('<row r="7"><c r="ZZZ7"><v>1</v></c></row>'),
        "row_past_max.xlsx": _one_cell('<row r="1048577"><c r="A1048577"><v>1</v></c></row>'),
        "format_400_zeros.xlsx": _one_cell('<row r="2"><c r="A2" s="1"><v>1.5</v></c></row>',
                                           styles=zeros),
        "format_id_float.xlsx": _one_cell('<row r="2"><c r="A2" s="1"><v>2</v></c></row>',
                                          styles=styles_xml(['<xf numFmtId="0"/>',
                                                             '<xf numFmtId="1.5"/>'])),
        "font_id_negative.xlsx": _one_cell('<row r="2"><c r="A2" s="1"><v>3</v></c></row>',
                                           styles=styles_xml(['<xf numFmtId="0"/>',
                                                              '<xf fontId="-99"/>'])),
        "font_size_big.xlsx": _one_cell('<row r="2"><c r="A2"><v>4</v></c></row>',
                                        styles=styles_xml(fonts='<font><sz val="big"/></font>')),
        "pane_inf.xlsx": _one_cell('<row r="2"><c r="A2"><v>5</v></c></row>',
                                   before='<sheetViews><sheetView workbookViewId="0"><pane '
                                          'ySplit="inf" state="frozen"/></sheetView></sheetViews>'),
    }


# -- the recipes: leaks and refused packages ---------------------------------------------------
#: Text that must never reach ``chunks`` or LanceDB (hidden, or outside the inbox).
SECRETS = ("SECRET-SHEET", "SECRET-ROW", "SECRET-COL")
_C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"


def relationships(*rels: tuple[str, str, str]) -> str:
    return (f'{XML_DECL}<Relationships xmlns="{_PKG_REL}">' + "".join(
        f'<Relationship Id="{i}" Type="{REL_NS}/{t}" Target="{target}"/>' for i, t, target in rels)
        + "</Relationships>")


def hidden_chart() -> bytes:
    """A chart on a visible sheet, without cached values, whose series refer to a veryHidden
    sheet, a hidden row and a hidden column."""
    rows = {1: [cell("A1", "Month"), cell("B1", "Sales")],
            2: [cell("A2", "Jan"), cell("B2", value="10"), cell("C2", "SECRET-COL")],
            3: [cell("A3", "SECRET-ROW"), cell("B3", value="12")],
            4: [cell("A4", "Mar"), cell("B4", value="9")]}
    dashboard = worksheet(rows_xml(rows, hidden=[3]),
                          before='<cols><col min="3" max="3" hidden="1"/></cols>',
                          after='<drawing r:id="rId1"/>')
    series = ("<c:ser><c:idx val=\"{k}\"/><c:order val=\"{k}\"/><c:tx><c:strRef><c:f>{tx}</c:f>"
              "</c:strRef></c:tx><c:cat><c:strRef><c:f>Dashboard!$A$2:$A$4</c:f></c:strRef></c:cat>"
              "<c:val><c:numRef><c:f>Dashboard!$B$2:$B$4</c:f></c:numRef></c:val></c:ser>")
    chart = (f'<c:chartSpace xmlns:c="{_C}" xmlns:a="{_A}"><c:chart><c:plotArea><c:barChart>'
             + series.format(k=0, tx="'Secret'!$A$1") + series.format(k=1, tx="Dashboard!$C$2")
             + "</c:barChart></c:plotArea></c:chart></c:chartSpace>")
    drawing = (f'<xdr:wsDr xmlns:xdr="{_XDR}" xmlns:a="{_A}" xmlns:c="{_C}" xmlns:r="{REL_NS}">'
               "<xdr:oneCellAnchor><xdr:from><xdr:col>4</xdr:col><xdr:colOff>0</xdr:colOff>"
               "<xdr:row>1</xdr:row><xdr:rowOff>0</xdr:rowOff></xdr:from>"
               '<xdr:ext cx="5400000" cy="2700000"/><xdr:graphicFrame><xdr:nvGraphicFramePr>'
               '<xdr:cNvPr id="1" name="Chart 1"/><xdr:cNvGraphicFramePr/></xdr:nvGraphicFramePr>'
               '<xdr:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/'
               'drawingml/2006/chart"><c:chart r:id="rId1"/></a:graphicData></a:graphic>'
               "</xdr:graphicFrame><xdr:clientData/></xdr:oneCellAnchor></xdr:wsDr>")
    return workbook([("Dashboard", dashboard),
                     ("Secret", worksheet(rows_xml({1: [cell("A1", "SECRET-SHEET")]})))],
                    states={"Secret": "veryHidden"},
                    rels={"sheet1": relationships(("rId1", "drawing", "../drawings/drawing1.xml"))},
                    extra={"xl/drawings/drawing1.xml": drawing,
                           "xl/drawings/_rels/drawing1.xml.rels":
                               relationships(("rId1", "chart", "../charts/chart1.xml")),
                           "xl/charts/chart1.xml": chart})


#: Cell texts that a chat UI rendering the Markdown chunks would run or follow.
HTML_TEXTS = ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>",
              "[click me](javascript:alert(3))")


def html_cells() -> bytes:
    """A table whose cells, and a note under it, hold HTML and a ``javascript:`` link."""
    rows = {r: [cell(f"A{r}", f"item {r}"), cell(f"B{r}", text)]
            for r, text in enumerate(HTML_TEXTS, start=2)}
    rows[8] = [cell("A8", "<iframe src=javascript:alert(4)></iframe> see the notes above.")]
    return workbook([("S", table_sheet(rows))])


def _dtd_part(prologue: str) -> str:
    return (prologue + '<!DOCTYPE sst [<!ENTITY e "expanded">]>'
            f'<sst xmlns="{_MAIN}"><si><t>before &e; after</t></si></sst>')


def dtd_after_comment() -> bytes:
    """The shared strings declare a DTD after a comment of 64 KiB."""
    strings = _dtd_part('<?xml version="1.0" encoding="UTF-8"?><!--' + "x" * 65_536 + "-->")
    return _with_strings(strings.encode())


def dtd_utf16() -> bytes:
    """The shared strings declare a DTD in UTF-16 without a byte-order mark."""
    return _with_strings(_dtd_part('<?xml version="1.0" encoding="UTF-16"?>').encode("utf-16-le"))


def _with_strings(strings: bytes) -> bytes:
    sheet = worksheet('<row r="1"><c r="A1" t="s"><v>0</v></c></row>')
    rel = f'<Relationship Id="rIdT" Type="{REL_NS}/sharedStrings" Target="sharedStrings.xml"/>'
    data = workbook([("S", sheet)], extra={"xl/sharedStrings.xml": strings})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", rel.encode() + b"</Relationships>")
    return package(parts)


def duplicate_part(case: bool) -> bytes:
    """The worksheet part twice in the zip, under the same name or one differing in case."""
    name = "xl/worksheets/SHEET1.xml" if case else "xl/worksheets/sheet1.xml"
    return workbook([("S", worksheet(rows_xml({1: [cell("A1", "first")]})))],
                    duplicates={name: b"".join(worksheet(rows_xml({1: [cell("A1", "second")]})))})


#: Files whose content is refused or kept from the chunks, with the outcome an ingest ends with.
LEAKS: dict[str, tuple[Callable[[], bytes], str]] = {
    "hidden_chart.xlsx": (hidden_chart, "success"),
    "html_cells.xlsx": (html_cells, "success"),
    "dtd_after_comment.xlsx": (dtd_after_comment, "hostile_content"),
    "dtd_utf16.xlsx": (dtd_utf16, "hostile_content"),
    "duplicate_part.xlsx": (lambda: duplicate_part(False), "corrupt_workbook"),
    "case_part.xlsx": (lambda: duplicate_part(True), "corrupt_workbook"),
}


def _letters(col: int) -> str:
    from extraction_assets.core.a1 import column_letter

    return column_letter(col)


@dataclass(frozen=True)
class Recipe:
    """A hostile workbook: ``build(scale)`` gives its file name and bytes; ``expect`` is how an
    ingest of the full size ends: ``success`` (with issues) or the code of a typed error (a
    smaller size may end in success: what it makes stays within the limits)."""

    build: Callable[[float], tuple[str, bytes]]
    expect: str

    @property
    def description(self) -> str:
        return (self.build.__doc__ or "").strip()


#: The recipes whose cost grows with their size, by name (issue #27, items 1-8).
WORKBOOK_RECIPES: dict[str, Recipe] = {
    "long_sentence": Recipe(long_sentence, "success"),
    "merge_fill": Recipe(merge_fill, "limit_exceeded"),
    "frame_bloat": Recipe(frame_bloat, "limit_exceeded"),
    "empty_rows": Recipe(empty_rows, "success"),
    "one_huge_row": Recipe(one_huge_row, "success"),
    "huge_cell": Recipe(huge_cell, "success"),
    "many_styles": Recipe(many_styles, "limit_exceeded"),
    "shared_part": Recipe(shared_part, "success"),
    "xlsb_parts": Recipe(xlsb_parts, "limit_exceeded"),
}



# -- issue #34, rendering: live links and bidirectional names (kinds 7 and 8) ------------------
#: Cell texts that a Markdown renderer with GFM autolinks (a chat UI) would make links, images
#: or formatting if a chunk wrote them as they are; each must render as itself.
LIVE_LINK_TEXTS = (
    "http://attacker.example/?leak=session-token", "https://x.example/a_b_c?q=1&r=2#frag",
    "www.attacker.example", "WWW.X.COM/path", "mail ada@example.com now", "<http://x.example>",
    "<ada@example.com>", "//localhost/x", "ftp://files.example/x", "mailto:a@b.co",
    "**bold** and __strong__", "_em_ and *em*", "`code` and ``code``", "~~struck~~ ~one~",
    "![img](http://attacker.example/p.png)", "[link](javascript:alert(1))", "# heading",
    "a ## b ##", "> quote", "a | b", "&amp; &#x41; &#65; &lt;b&gt;",
    "<b>bold</b> <br> <sup>1</sup>",
    "snake_case_name", "C# and x.com", "back\\slash \\*", "line one\nline two",
)
#: A note under the table: lines that start blocks, and an autolink, each a line.
LIVE_LINK_NOTE = "\n".join(["# Not a heading", "> not a quote", "=====", "---", "    not code",
                            "www.note.example and a@b.co", "| x | y |", "```", "~~~"])


def live_links(scale: float) -> tuple[str, bytes]:
    """#34.7. A table of 5,000 rows whose cells hold URLs, e-mail addresses, Markdown and HTML
    (:data:`LIVE_LINK_TEXTS`, a row number in each), and a note of block-starting lines."""
    n = max(len(LIVE_LINK_TEXTS), int(5_000 * scale))

    def rows() -> Iterable[bytes]:
        batch = [f'<row r="1">{cell("A1", "Item")}{cell("B1", "Value")}</row>']
        for r in range(2, n + 2):
            text = LIVE_LINK_TEXTS[(r - 2) % len(LIVE_LINK_TEXTS)]
            batch.append(f'<row r="{r}">{cell(f"A{r}", f"item {r}")}'
                         f'{cell(f"B{r}", text if r < 2 + len(LIVE_LINK_TEXTS) else f"{text} {r}")}'
                         "</row>")
            if len(batch) >= 1000:
                yield "".join(batch).encode()
                batch = []
        note = n + 4
        batch.append(f'<row r="{note}">{cell(f"A{note}", LIVE_LINK_NOTE)}</row>')
        yield "".join(batch).encode()
    return "live_links.xlsx", workbook([("Links", worksheet(rows()))])


#: Bidirectional formatting characters (UAX #9) in names: the override that shows
#: ``rtl\u202eexe.txt`` as ``rtltxt.exe``, an isolate, the marks.
BIDI_NAME = "rtl\u202eexe.txt"


def bidi_names(scale: float) -> tuple[str, bytes]:
    """#34.8. 50 sheets named ``rtl\u202eexe.txt`` (and a number), each with a title and
    headers holding bidirectional controls over 50 rows."""
    sheets = []
    for k in range(max(1, int(50 * scale))):
        rows = {1: [cell("A1", f"Title \u2067{k}\u2069 \u202dover\u202c")],
                3: [cell("A3", "Name\u200f"), cell("B3", "Amount \u061c\u200e")]}
        rows.update({r: [cell(f"A{r}", f"name {r}"), cell(f"B{r}", None, value=str(r))]
                     for r in range(4, 54)})
        sheets.append((f"{BIDI_NAME}{k}", worksheet(rows_xml(rows))))
    return "bidi_names.xlsx", workbook(sheets)


def long_text_column(scale: float) -> tuple[str, bytes]:
    """#34. One column of 100,000 numbers and no header: a text block cut in 510 chunks (its
    check against the cells was quadratic, and each chunk cited every row: 51 s and 2.6 GB)."""
    n = max(2, int(100_000 * scale))

    def rows() -> Iterable[bytes]:
        for start in range(1, n + 1, 1000):
            yield "".join(f'<row r="{r}"><c r="A{r}"><v>{r * 7}</v></c></row>'
                          for r in range(start, min(n, start + 999) + 1)).encode()
    return "long_text_column.xlsx", workbook([("Numbers", worksheet(rows()))])


#: The recipes of issue #34 items 7 and 8 and of a long text (success: the tests check what
#: the chunks show).
RENDER_RECIPES: dict[str, Recipe] = {
    "live_links": Recipe(live_links, "success"),
    "bidi_names": Recipe(bidi_names, "success"),
    "long_text_column": Recipe(long_text_column, "success"),
}
WORKBOOK_RECIPES.update(RENDER_RECIPES)

# -- issue #34, the OOXML reader: integers past 64 bits, parts shared by references, start
# -- tags of many attributes ----------------------------------------------------------------
#: A number past 64 bits (2**64 + 1).
HUGE_INT = "18446744073709551617"
#: A comment in ``<sheetData>``: the worksheet is read by the tree reader, not the fast one.
_TREE = "<!-- the tree reader -->"
_SST_REL = f'<Relationship Id="rIdT" Type="{REL_NS}/sharedStrings" Target="sharedStrings.xml"/>'


def _with_sst(data: bytes, strings: list[str]) -> bytes:
    """``data`` (an xlsx of :func:`workbook`) with a shared string table of ``strings``."""
    sst = (f'{XML_DECL}<sst xmlns="{_MAIN}" count="{len(strings)}">'
           + "".join(f"<si><t>{escape(t)}</t></si>" for t in strings) + "</sst>")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", _SST_REL.encode() + b"</Relationships>")
    parts["xl/sharedStrings.xml"] = sst.encode()
    return package(parts)


def huge_int_files() -> dict[str, bytes]:
    """One file per integer of a worksheet or stylesheet that is read as a number, each
    :data:`HUGE_INT` (a crash of ``pyarrow`` or of a C long before issue #34), read by the
    fast reader and, where it differs, by the tree reader (``_tree``)."""
    style = f'<row r="2"><c r="A2" s="{HUGE_INT}"><v>1</v></c></row>'
    index = f'<row r="2"><c r="A2" t="s"><v>{HUGE_INT}</v></c></row>'
    row = f'<row r="{HUGE_INT}" hidden="1" customHeight="1" ht="30"><c><v>2</v></c></row>'
    xfs = ['<xf numFmtId="0"/>', f'<xf numFmtId="0"><alignment indent="{HUGE_INT}" '
           f'textRotation="{HUGE_INT}"/></xf>']
    lists = ['<xf numFmtId="0"/>', f'<xf numFmtId="{HUGE_INT}" fontId="{HUGE_INT}" '
             f'fillId="{HUGE_INT}" borderId="{HUGE_INT}"/>']
    styled = '<row r="2"><c r="A2" s="1"><v>3</v></c></row>'
    cols = f'<cols><col min="{HUGE_INT}" max="{HUGE_INT}" width="9" hidden="1"/></cols>'
    return {
        "style_id": _one_cell(style),
        "style_id_tree": _one_cell(style + _TREE),
        "string_index": _with_sst(_one_cell(index), ["only"]),
        "string_index_tree": _with_sst(_one_cell(index + _TREE), ["only"]),
        "string_index_no_table": _one_cell(index),
        "row_number": _one_cell(row.replace("<c>", '<c r="A3">')),
        "row_number_tree": _one_cell(row + _TREE),
        "alignment": _one_cell(styled, styles=styles_xml(xfs)),
        "style_lists": _one_cell(styled, before=cols, styles=styles_xml(lists)),
    }


def huge_ints(scale: float) -> tuple[str, bytes]:
    """Issue #34: 200,000 cells whose style id or shared-string index is 2**64 + 1 (so they
    show nothing: what is read of them costs nothing downstream), then a row numbered
    2**64 + 1, and a stylesheet whose ids and alignment are 2**64 + 1 too."""
    n_rows = max(2, int(100_000 * scale))
    row = (f'<row r="{{r}}"><c r="A{{r}}" s="{HUGE_INT}"/>'
           f'<c r="B{{r}}" t="s"><v>{HUGE_INT}</v></c></row>')
    body = chain([rows_xml({1: [cell("A1", "first")]}).encode()],
                 [row.format(r=r).encode() for r in range(2, n_rows + 2)],
                 [f'<row r="{HUGE_INT}" hidden="1"><c><v>1</v></c></row>'.encode()])
    xfs = ['<xf numFmtId="0"/>', f'<xf numFmtId="{HUGE_INT}" fontId="{HUGE_INT}"><alignment '
           f'indent="{HUGE_INT}" textRotation="{HUGE_INT}"/></xf>']
    return "huge_ints.xlsx", _with_sst(workbook([("S", worksheet(body))], styles=styles_xml(xfs)),
                                       ["only"])


def _png(n_bytes: int) -> Iterable[bytes]:
    """A PNG of 1 x 1 pixel whose file is padded to about ``n_bytes`` (a large image)."""
    yield (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01"
           b"\x08\x02\x00\x00\x00")
    yield from repeated(b"\x00" * 64, n_bytes)


def shared_objects(scale: float) -> tuple[str, bytes]:
    """Issue #34: 50 sheets whose relationships all name one drawing, one comments part and
    one table; the drawing holds 1,000 anchors, half of them one chart (without cached values:
    its series are resolved from 10,000 cells of the sheet ``Data``), half one picture of
    4 MB (anchors, cells and image shrink with ``scale``). Read per reference, that is
    50 x 500 charts streaming the data and 50 x 500 reads of the image."""
    n, n_data = max(2, int(1_000 * scale)), max(10, int(10_000 * scale))
    data = worksheet(rows_xml({r: [cell(f"A{r}", value=str(r))] for r in range(1, n_data + 1)}))
    frame = ('<xdr:twoCellAnchor><xdr:from><xdr:col>3</xdr:col><xdr:colOff>0</xdr:colOff>'
             '<xdr:row>{k}</xdr:row><xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:to><xdr:col>6'
             '</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>{k}</xdr:row><xdr:rowOff>0'
             '</xdr:rowOff></xdr:to>{body}<xdr:clientData/></xdr:twoCellAnchor>')
    chart_body = ('<xdr:graphicFrame><xdr:nvGraphicFramePr><xdr:cNvPr id="{k}" name="Chart {k}"/>'
                  '<xdr:cNvGraphicFramePr/></xdr:nvGraphicFramePr><xdr:xfrm/><a:graphic>'
                  '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
                  '<c:chart r:id="rId1"/></a:graphicData></a:graphic></xdr:graphicFrame>')
    pic_body = ('<xdr:pic><xdr:nvPicPr><xdr:cNvPr id="{k}" name="Picture {k}"/><xdr:cNvPicPr/>'
                '</xdr:nvPicPr><xdr:blipFill><a:blip r:embed="rId2"/></xdr:blipFill><xdr:spPr/>'
                '</xdr:pic>')
    anchors = "".join(frame.format(k=k, body=(chart_body if k % 2 else pic_body).format(k=k))
                      for k in range(n))
    drawing = (f'<xdr:wsDr xmlns:xdr="{_XDR}" xmlns:a="{_A}" xmlns:c="{_C}" xmlns:r="{REL_NS}">'
               f"{anchors}</xdr:wsDr>")
    chart = (f'<c:chartSpace xmlns:c="{_C}" xmlns:a="{_A}"><c:chart><c:plotArea><c:barChart>'
             "<c:ser><c:idx val=\"0\"/><c:order val=\"0\"/><c:val><c:numRef>"
             "<c:f>Data!$A$1:$A$10000</c:f></c:numRef></c:val></c:ser></c:barChart></c:plotArea>"
             "</c:chart></c:chartSpace>")
    comments = (f'<comments xmlns="{_MAIN}"><authors><author>a</author></authors><commentList>'
                '<comment ref="A1" authorId="0"><text><t>note</t></text></comment>'
                "</commentList></comments>")
    table = (f'<table xmlns="{_MAIN}" id="1" name="T1" displayName="T1" ref="A1:B2">'
             '<tableColumns count="2"><tableColumn id="1" name="Item"/><tableColumn id="2" '
             'name="Note"/></tableColumns></table>')
    sheet_rels = relationships(("rId1", "drawing", "../drawings/drawing1.xml"),
                       ("rId2", "comments", "../comments1.xml"),
                       ("rId3", "table", "../tables/table1.xml"))
    sheets = [("Data", data)] + [(f"S{k}", table_sheet(
        {2: [cell("A2", f"item {k}"), cell("B2", "note")]},
        after='<drawing r:id="rId1"/><tableParts count="1"><tablePart r:id="rId3"/>'
              "</tableParts>")) for k in range(1, 51)]
    return "shared_objects.xlsx", workbook(
        sheets, rels={f"sheet{k}": sheet_rels for k in range(2, 52)},
        extra={"xl/drawings/drawing1.xml": drawing,
               "xl/drawings/_rels/drawing1.xml.rels": relationships(
                   ("rId1", "chart", "../charts/chart1.xml"),
                   ("rId2", "image", "../media/image1.png")),
               "xl/charts/chart1.xml": chart,
               "xl/media/image1.png": _png(max(1 << 16, int((4 << 20) * scale))),
               "xl/comments1.xml": comments, "xl/tables/table1.xml": table})


def many_attributes(scale: float) -> tuple[str, bytes]:
    """Issue #34: one ``<row>`` start tag of 2,500,000 attributes (about 30 MB)."""
    n = max(2, int(2_500_000 * scale))
    blocks = (b"".join(b' a%d="1"' % k for k in range(at, min(at + 65_536, n)))
              for at in range(0, n, 65_536))
    attrs = chain([b'<row r="1"'], blocks, [b">", cell("A1", "first").encode(), b"</row>"])
    return "many_attributes.xlsx", workbook([("S", worksheet(attrs))])


#: The recipes of issue #34 in the OOXML reader.
WORKBOOK_RECIPES.update({
    "huge_ints": Recipe(huge_ints, "success"),
    "shared_objects": Recipe(shared_objects, "success"),
    "many_attributes": Recipe(many_attributes, "limit_exceeded"),
})
