"""The shared string table (§18.4.9) with its rich-text runs (§18.4.4) and phonetic runs
(§18.4.6) kept apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from extraction_assets.core.errors import CorruptWorkbookError
from extraction_assets.core.ooxml.xml import XML_OPTS, local, syntax_error_message, unescape_xstring
from extraction_assets.core.package import PackageReader

#: Order of the keys of one rich-text run (JSON objects keep it); ``text`` always first.
RUN_KEYS = ("text", "bold", "italic", "underline", "strike", "vert_align", "size", "color", "font")


def color_code(el) -> str | None:
    """Encode a colour element (``CT_Color``, ECMA-376 Part 1 §18.8.3/§18.3.1.15) as written.

    ``rgb:AARRGGBB``, ``theme:N`` or ``theme:N;tint:T`` (tint only when non-zero),
    ``indexed:N``, or ``None`` (also for ``auto="1"``, the system colour). Resolution to ``RRGGBB`` is the
    normalizer's job (it needs the theme and the indexed palette).
    """
    if el is None:
        return None
    if el.get("rgb"):
        return "rgb:" + el.get("rgb").upper()
    if el.get("theme") is not None:
        tint = el.get("tint")
        try:
            tinted = bool(tint) and float(tint) != 0.0
        except ValueError:
            tinted = False
        return f"theme:{el.get('theme')}" + (f";tint:{tint}" if tinted else "")
    if el.get("indexed") is not None:
        return "indexed:" + el.get("indexed")
    return None


def _on(el) -> bool:
    """A boolean property element (``CT_BooleanProperty``): present and ``val`` not false."""
    return el.get("val", "1") not in ("0", "false")


def _elements(node):
    """(local name, element) of each child element of ``node`` (comments and processing
    instructions skipped)."""
    for child in node:
        if isinstance(child.tag, str):
            yield local(child.tag), child


def run_properties(rpr) -> dict:
    """The set properties of a run's ``<rPr>`` (ECMA-376 Part 1, §18.4.7), as run keys.

    ``bold``/``italic``/``strike`` (true only; false is omitted), ``underline`` (the ``u``
    value, ``single`` when the element has no ``val``; ``none`` omitted), ``vert_align``
    (``superscript``/``subscript``; ``baseline`` omitted), ``size`` (points, float), ``color``
    (see :func:`color_code`) and ``font`` (``rFont``, §18.4.5). Family, scheme, charset,
    outline, shadow, condense and extend are not kept.
    """
    props: dict = {}
    if rpr is None:
        return props
    for tag, el in _elements(rpr):
        if tag == "b":
            if _on(el):
                props["bold"] = True
        elif tag == "i":
            if _on(el):
                props["italic"] = True
        elif tag == "strike":
            if _on(el):
                props["strike"] = True
        elif tag == "u":
            value = el.get("val", "single")
            if value != "none":
                props["underline"] = value
        elif tag == "vertAlign":
            value = el.get("val")
            if value in ("superscript", "subscript"):
                props["vert_align"] = value
        elif tag == "sz":
            try:
                props["size"] = float(el.get("val"))
            except (TypeError, ValueError):
                pass
        elif tag == "color":
            color = color_code(el)
            if color:
                props["color"] = color
        elif tag == "rFont":
            if el.get("val"):
                props["font"] = el.get("val")
    return props


@dataclass
class RichString:
    """A shared string that carries formatting runs or a phonetic reading.

    Attributes:
        index: 0-based position in the shared string table (``parsed_cells.string_index``).
        text: the cell text: the runs' ``<t>`` joined, phonetic runs excluded (§18.4.8 ``si``).
        runs: one dict per run (§18.4.4 ``r``): ``text`` plus the keys of
            :func:`run_properties` that are set, in :data:`RUN_KEYS` order. The runs' texts
            join to ``text``; a string with phonetic runs but no ``<r>`` has one plain run.
        phonetic: the text of the phonetic runs (§18.4.6 ``rPh``) joined in document order, e.g.
            ``トウキョウト`` for 東京都, or ``None``. ``phoneticPr`` (§18.4.3) only names the
            phonetic font and conversion type and alone does not make a string phonetic.
    """

    index: int
    text: str
    runs: list[dict]
    phonetic: str | None = None


class SharedStrings(list):
    """The shared string table: a plain ``list[str]`` of cell texts, plus :attr:`rich`, the
    :class:`RichString` of every string that has rich runs or phonetic runs (in index order),
    and :attr:`truncated`, the indices of the strings cut at the cell text limit.

    Plain strings cost one ``str`` each; nothing else is built for them.
    """

    def __init__(self, texts=(), rich: list[RichString] | None = None):
        super().__init__(texts)
        self.rich: list[RichString] = rich if rich is not None else []
        self.truncated: list[int] = []


def _cut_runs(runs: list[dict], max_chars: int) -> list[dict]:
    """The runs whose texts join to the first ``max_chars`` characters of their text."""
    out, left = [], max_chars
    for run in runs:
        if left <= 0:
            break
        out.append({**run, "text": run["text"][:left]})
        left -= len(run["text"])
    return out


def _si_text(si, index: int, out: SharedStrings, max_chars: int) -> None:
    """Append the text of one ``<si>`` to ``out`` (and its :class:`RichString` if any); a
    text longer than ``max_chars`` is cut there (its index noted in ``out.truncated``)."""
    parts: list[str] = []
    runs: list[dict] | None = None
    phonetic: list[str] | None = None
    for tag, child in _elements(si):
        if tag == "t":
            parts.append(child.text or "")
        elif tag == "r":
            run_text = []
            rpr = None
            for sub_tag, sub in _elements(child):
                if sub_tag == "t":
                    run_text.append(sub.text or "")
                elif sub_tag == "rPr":
                    rpr = sub
            text = "".join(run_text)
            parts.append(text)
            if runs is None:
                runs = []
            runs.append({"text": unescape_xstring(text), **run_properties(rpr)})
        elif tag == "rPh":
            if phonetic is None:
                phonetic = []
            phonetic += [sub.text or "" for sub_tag, sub in _elements(child) if sub_tag == "t"]
    text = unescape_xstring("".join(parts))
    reading = unescape_xstring("".join(phonetic)) if phonetic else None
    if len(text) > max_chars or len(reading or "") > max_chars:
        out.truncated.append(index)
        text, reading = text[:max_chars], reading[:max_chars] if reading else reading
        runs = _cut_runs(runs, max_chars) if runs else runs
    out.append(text)
    if runs is None and phonetic is None:
        return
    if runs is None:
        runs = [{"text": text}] if text else []
    out.rich.append(RichString(index, text, runs, reading))


def read_rich_strings(reader: PackageReader, part: str | None) -> SharedStrings:
    """Read the shared string table (ECMA-376 Part 1, §18.4.9 ``sst``) with ``iterparse``.

    Returns a :class:`SharedStrings`: the texts (rich runs §18.4.4 joined, phonetic runs
    §18.4.6 excluded, ``_xHHHH_`` escapes decoded, §22.9.2.19) and, in ``.rich``, the runs and
    phonetic reading of the strings that have them. Elements are cleared as they are read. A
    text longer than the package's ``max_cell_chars`` is cut there (see
    :attr:`~.strings.SharedStrings.truncated`).

    Raises:
        CorruptWorkbookError: the part is not well-formed XML.
    """
    out = SharedStrings()
    if not part or not reader.has(part):
        return out
    with reader.open(part) as stream:
        try:
            for _, el in etree.iterparse(stream, events=("end",), tag="{*}si", **XML_OPTS):
                _si_text(el, len(out), out, reader.limits.max_cell_chars)
                el.clear()
                parent = el.getparent()
                while el.getprevious() is not None:
                    del parent[0]
        except etree.XMLSyntaxError as exc:
            raise CorruptWorkbookError(
                f"part {part} is not well-formed XML: {syntax_error_message(exc)}") from exc
    return out


def read_shared_strings(reader: PackageReader, part: str | None) -> SharedStrings:
    """The shared string table as a ``list[str]`` (phonetic runs excluded); it is a
    :class:`SharedStrings`, so the rich runs are in ``.rich``. See :func:`read_rich_strings`."""
    return read_rich_strings(reader, part)


def runs_without_defaults(runs: list[dict], base: dict) -> list[dict]:
    """``runs`` without the properties that equal the workbook's base font.

    Excel writes a full ``<rPr>`` on every run (size, colour, font name, family, scheme), so a
    run's listed keys are those that set it apart from the default cell font (the font of
    ``cellXfs`` 0, ECMA-376 Part 1 §18.8.10, normally the Normal style's font §18.8.22):
    ``base`` maps run keys (``size``, ``color``, ``font``...) to the default values.
    """
    out = []
    for run in runs:
        out.append({k: v for k, v in run.items() if k == "text" or base.get(k) != v})
    return out
