"""Package-level helpers shared by the workbook and object readers: safe XML parsing,
relationships (OPC, ECMA-376 Part 2 §9.3), the shared string table (§18.4.9) and the
:class:`Issue` record of ``extraction_issues``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from lxml import etree

from .container import PackageReader, resolve_target
from .errors import CorruptWorkbookError
from .worksheet import XML_OPTS, local, rich_text


@dataclass
class Issue:
    """A warning or error found while extracting (rows of the ``extraction_issues`` view)."""

    stage: str
    sheet_name: str | None
    ref: str | None
    severity: str
    code: str
    message: str


def rel_attr(el, name: str = "id") -> str | None:
    """Value of an ``r:``-namespaced attribute whatever namespace URI the package uses."""
    for key, value in el.attrib.items():
        if key.startswith("{") and local(key) == name and "relationships" in key:
            return value
    return None


def parse_part(stream: IO[bytes], part: str):
    """Parse a whole (small) part into an element tree: no DTD, no entities, no network.

    Raises:
        CorruptWorkbookError: the part is not well-formed XML.
    """
    try:
        return etree.parse(stream, etree.XMLParser(**XML_OPTS)).getroot()
    except etree.XMLSyntaxError as exc:
        raise CorruptWorkbookError(f"part {part} is not well-formed XML: {exc}") from exc


def read_rels(reader: PackageReader, part: str) -> dict[str, tuple[str, str]]:
    """Relationships of ``part``: id -> (type suffix, resolved target part). Empty if none."""
    folder, _, name = part.rpartition("/")
    rels_part = f"{folder}/_rels/{name}.rels" if folder else f"_rels/{name}.rels"
    if not reader.has(rels_part):
        return {}
    root = parse_part(reader.open(rels_part), rels_part)
    out = {}
    for rel in root:
        if local(rel.tag) != "Relationship":
            continue
        rtype = (rel.get("Type") or "").rsplit("/", 1)[-1]
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External":
            out[rel.get("Id") or ""] = (rtype, "external:" + target)
        else:
            out[rel.get("Id") or ""] = (rtype, resolve_target(part, target))
    return out


def read_shared_strings(reader: PackageReader, part: str | None) -> list[str]:
    """Read the shared string table (§18.4.9) with ``iterparse``; phonetic runs excluded."""
    if not part or not reader.has(part):
        return []
    out = []
    with reader.open(part) as stream:
        try:
            for _, el in etree.iterparse(stream, events=("end",), tag="{*}si", **XML_OPTS):
                out.append(rich_text(el))
                el.clear()
                parent = el.getparent()
                while el.getprevious() is not None:
                    del parent[0]
        except etree.XMLSyntaxError as exc:
            raise CorruptWorkbookError(f"part {part} is not well-formed XML: {exc}") from exc
    return out
