"""Relationships (OPC, ECMA-376 Part 2 §9.3) and safe parsing of an XML part (no DTD, no
entity, no network).
"""

from __future__ import annotations

import posixpath

from lxml import etree

from extraction_assets.core.errors import CorruptWorkbookError
from extraction_assets.core.ooxml.xml import XML_OPTS, local, syntax_error_message
from extraction_assets.core.package import PackageReader


def resolve_target(source_part: str, target: str) -> str:
    """Resolve a relationship ``Target`` against the part that owns the relationship.

    Follows OPC (ECMA-376 Part 2, §9.3): a target starting with ``/`` is package-absolute,
    otherwise it is relative to the source part's folder. Returns a part name without a leading
    slash.
    """
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    base = posixpath.dirname(source_part)
    return posixpath.normpath(posixpath.join(base, target))


def rel_attr(el, name: str = "id") -> str | None:
    """Value of an ``r:``-namespaced attribute whatever namespace URI the package uses."""
    for key, value in el.attrib.items():
        if key.startswith("{") and local(key) == name and "relationships" in key:
            return value
    return None


def parse_part(reader: PackageReader, part: str):
    """Parse a whole (small) part of ``reader`` into an element tree: no DTD, no entities, no
    network, at most ``max_tree_bytes`` of XML.

    Raises:
        CorruptWorkbookError: the part is missing or not well-formed XML.
        HostileContentError: the part declares a DTD.
        LimitExceededError: the part holds more than ``max_tree_bytes``.
    """
    with reader.open(part, max_bytes=reader.limits.max_tree_bytes) as stream:
        try:
            return etree.parse(stream, etree.XMLParser(**XML_OPTS)).getroot()
        except etree.XMLSyntaxError as exc:
            raise CorruptWorkbookError(
                f"part {part} is not well-formed XML: {syntax_error_message(exc)}") from exc


def read_rels(reader: PackageReader, part: str) -> dict[str, tuple[str, str]]:
    """Relationships of ``part``: id -> (type suffix, resolved target part). Empty if none."""
    folder, _, name = part.rpartition("/")
    rels_part = f"{folder}/_rels/{name}.rels" if folder else f"_rels/{name}.rels"
    if not reader.has(rels_part):
        return {}
    root = parse_part(reader, rels_part)
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
