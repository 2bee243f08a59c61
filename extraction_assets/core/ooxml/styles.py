"""The stylesheet (ECMA-376 Part 1 §18.8): number formats, fonts, fills, borders and alignment of
every ``cellXfs`` entry, with the theme's colours (DrawingML §20.1.6.2).
"""

from __future__ import annotations

import math

from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.model import CellStyle, Issue
from extraction_assets.core.ooxml.rels import parse_part
from extraction_assets.core.ooxml.strings import color_code
from extraction_assets.core.ooxml.xml import child_element, local
from extraction_assets.core.package import PackageReader

#: Built-in number formats of ECMA-376 Part 1, §18.8.30 (en-US rendering of the locale ids).
BUILTIN_NUMBER_FORMATS: dict[int, str] = {
    0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00",
    5: '"$"#,##0_);("$"#,##0)', 6: '"$"#,##0_);[Red]("$"#,##0)',
    7: '"$"#,##0.00_);("$"#,##0.00)', 8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
    9: "0%", 10: "0.00%", 11: "0.00E+00", 12: "# ?/?", 13: "# ??/??",
    14: "m/d/yyyy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yyyy h:mm",
    37: "#,##0 ;(#,##0)", 38: "#,##0 ;[Red](#,##0)", 39: "#,##0.00;(#,##0.00)",
    40: "#,##0.00;[Red](#,##0.00)", 41: '_(* #,##0_);_(* (#,##0);_(* "-"_);_(@_)',
    42: '_("$"* #,##0_);_("$"* (#,##0);_("$"* "-"_);_(@_)',
    43: '_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)',
    44: '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)',
    45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0", 48: "##0.0E+0", 49: "@",
}


def _color(el) -> str | None:
    """Encode a colour element (``<color>``, ``<fgColor>``, §18.8.3) as written; see
    :class:`CellStyle` and :func:`~.strings.color_code` (shared with rich-text runs)."""
    return color_code(el)


def _alignment_int(align, name: str, most: int, problems: list[str], where: str) -> int | None:
    """An integer attribute of ``<alignment>`` (§18.8.1: ``indent``, ``textRotation``; a
    decimal is cut to its integer part): ``None`` when absent, and with a problem when it is
    no number from 0 to ``most`` (stored as int32)."""
    value = align.get(name) if align is not None else None
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if 0 <= number <= most:
        return int(number)
    problems.append(f"{where}: {name} {value!r} is not a number from 0 to {most}; not used")
    return None


def _border_sides(border) -> dict[str, str | None]:
    """``border_left`` ... ``border_bottom`` of one ``<border>`` (§18.8.4): the side's ``style``
    (``none`` and absent read as ``None``); ``start``/``end`` (§18.8.39, used by Strict and by
    some writers) fill left/right when those carry no style."""
    styles: dict[str, str] = {}
    for side in border:
        if not isinstance(side.tag, str):
            continue
        style = side.get("style")
        if style not in (None, "", "none"):
            styles[local(side.tag)] = style
    return {"border_left": styles.get("left") or styles.get("start"),
            "border_right": styles.get("right") or styles.get("end"),
            "border_top": styles.get("top"), "border_bottom": styles.get("bottom")}


def _flag(el, name: str) -> bool:
    c = child_element(el, name)
    return c is not None and c.get("val", "1") not in ("0", "false", "none")


#: The lists of a stylesheet (§18.8.39) whose entries :attr:`Limits.max_styles` bounds.
_STYLE_LISTS = ("numFmts", "fonts", "fills", "borders", "cellStyleXfs", "cellXfs", "cellStyles",
                "dxfs")
#: Largest id a style attribute (``numFmtId``, ``fontId``...) may have: stored as int32.
_MAX_STYLE_ID = 2**31 - 1


def _style_id(el, name: str, problems: list[str], where: str) -> int:
    """A style id attribute (``numFmtId``, ``fontId``, ``fillId``, ``borderId``: an unsigned
    int, ECMA-376 Part 1 §18.8.45): 0 when absent; 0 and a problem when it is not one."""
    value = el.get(name)
    if value is None:
        return 0
    if value.strip().isdigit() and int(value) <= _MAX_STYLE_ID:
        return int(value)
    problems.append(f"{where}: {name} {value!r} is not a style id; 0 is used")
    return 0


def _font_size(font, problems: list[str], where: str) -> float | None:
    """The ``<sz val>`` of a font in points; ``None`` when absent, and with a problem when it
    is not a finite positive number."""
    size = child_element(font, "sz")
    if size is None or not size.get("val"):
        return None
    try:
        points = float(size.get("val"))
    except ValueError:
        points = math.nan
    if math.isfinite(points) and points > 0:
        return points
    problems.append(f"{where}: font size {size.get('val')!r} is not a size; not used")
    return None


def read_styles(reader: PackageReader, part: str | None, issues: list[Issue]
                 ) -> tuple[list[CellStyle], list[str] | None]:
    """Read ``cellXfs`` (§18.8.10) with their fonts (§18.8.23), fills (§18.8.21), borders
    (§18.8.5), alignment (§18.8.1) and number formats (§18.8.31) from the stylesheet
    (§18.8.39); returns the styles and the workbook's indexed palette (§18.8.27) or ``None``.
    An id or font size that is not one is read as the default, with a ``bad_style`` warning
    in ``issues`` (one per stylesheet, naming the first and how many); a workbook without a
    stylesheet gets the default style and an ``info`` issue ``styles_missing``.

    Raises:
        LimitExceededError: a list of the stylesheet has more than ``max_styles`` entries.
    """
    if not part or not reader.has(part):
        issues.append(Issue("parsed_sheets", None, None, "info", "styles_missing", (
            f"the stylesheet {part} is missing from the package" if part else
            "the workbook has no stylesheet (xl/styles.xml)") + ": every cell is read with "
            "the default style (General number format, 11 pt, not bold, no fill)"))
        return [CellStyle()], None
    root = parse_part(reader, part)
    for section in root:
        if local(section.tag) in _STYLE_LISTS and len(section) > reader.limits.max_styles:
            raise LimitExceededError(
                f"the stylesheet has more than {reader.limits.max_styles} "
                f"{local(section.tag)} entries")
    problems: list[str] = []
    num_fmts = dict(BUILTIN_NUMBER_FORMATS)
    fonts: list[dict] = []
    fills: list[str | None] = []
    borders: list[dict[str, str | None]] = []
    xfs_el = None
    indexed = None
    for section in root:
        name = local(section.tag)
        if name == "numFmts":
            for nf in section:
                try:
                    num_fmts[int(nf.get("numFmtId"))] = nf.get("formatCode") or "General"
                except (TypeError, ValueError):
                    continue
        elif name == "fonts":
            for k, font in enumerate(section):
                underline = child_element(font, "u")
                fonts.append(dict(
                    bold=_flag(font, "b"), italic=_flag(font, "i"),
                    underline=underline is not None and underline.get("val", "single") != "none",
                    strike=_flag(font, "strike"),
                    font_size=_font_size(font, problems, f"font {k}"),
                    font_color=_color(child_element(font, "color")),
                    font_name=(child_element(font, "name").get("val")
                               if child_element(font, "name") is not None else None),
                ))
        elif name == "fills":
            for fill in section:
                pattern = child_element(fill, "patternFill")
                color = None
                if pattern is not None and pattern.get("patternType") not in (None, "none"):
                    color = _color(child_element(pattern, "fgColor"))
                fills.append(color)
        elif name == "borders":
            for border in section:
                borders.append(_border_sides(border))
        elif name == "cellXfs":
            xfs_el = section
        elif name == "colors":
            ic = child_element(section, "indexedColors")
            if ic is not None:
                indexed = [(c.get("rgb") or "FF000000")[-6:].upper() for c in ic]
    styles = []
    for k, xf in enumerate(xfs_el if xfs_el is not None else []):
        where = f"cellXfs entry {k}"
        nf_id = _style_id(xf, "numFmtId", problems, where)
        font_id = _style_id(xf, "fontId", problems, where)
        fill_id = _style_id(xf, "fillId", problems, where)
        border_id = _style_id(xf, "borderId", problems, where)
        font = fonts[font_id] if font_id < len(fonts) else {}
        align = child_element(xf, "alignment")
        sides = borders[border_id] if border_id < len(borders) else {}
        styles.append(CellStyle(
            number_format_id=nf_id,
            number_format=num_fmts.get(nf_id, "General"),
            fill_color=fills[fill_id] if fill_id < len(fills) else None,
            has_border=any(sides.values()),
            wrap_text=align is not None and align.get("wrapText") in ("1", "true"),
            horizontal=align.get("horizontal") if align is not None else None,
            vertical=align.get("vertical") if align is not None else None,
            indent=_alignment_int(align, "indent", _MAX_STYLE_ID, problems, where) or 0,
            text_rotation=_alignment_int(align, "textRotation", 255, problems, where),
            **sides,
            **font,
        ))
    if problems:
        issues.append(Issue("parsed_sheets", None, None, "warning", "bad_style",
                            f"{problems[0]}" + (f" (and {len(problems) - 1} more)"
                                                if len(problems) > 1 else "")))
    return styles or [CellStyle()], indexed


def read_theme_colors(reader: PackageReader, part: str | None) -> list[str]:
    """The 12 colours of the theme's ``clrScheme`` in document order (DrawingML §20.1.6.2)."""
    if not part or not reader.has(part):
        return []
    root = parse_part(reader, part)
    colors = []
    for scheme in root.iter("{*}clrScheme"):
        for slot in scheme:
            value = None
            for c in slot:
                if local(c.tag) == "srgbClr":
                    value = (c.get("val") or "000000").upper()
                elif local(c.tag) == "sysClr":
                    value = (c.get("lastClr") or "000000").upper()
            colors.append(value or "000000")
        break
    return colors
