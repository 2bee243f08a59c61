"""What the object readers share: the context of one call (reader, sheet, issue sink), guarded
steps, small XML helpers and the package facts read once per package (content types, the
workbook part, sheet parts, persons of threaded comments).
"""

from __future__ import annotations

import math
import struct
import weakref
from typing import Any, Callable, Iterable

from lxml import etree

from extraction_assets.core.a1 import cell_ref, parse_cell_ref
from extraction_assets.core.errors import ExtractionError, HostileContentError, LimitExceededError
from extraction_assets.core.model import Issue
from extraction_assets.core.ooxml.rels import parse_part, read_rels, rel_attr
from extraction_assets.core.ooxml.xml import local
from extraction_assets.core.package import PackageReader

STAGE = "parsed_sheets"


class ObjectContext:
    """Reader, issue sink and sheet name shared by the helpers of one call."""

    def __init__(self, reader: PackageReader, sheet_name: str | None, issues: list | None):
        self.reader = reader
        self.sheet_name = sheet_name
        self.issues = issues if issues is not None else []

    def warn(self, code: str, message: str, ref: str | None = None,
             severity: str = "warning") -> None:
        self.issues.append(Issue(STAGE, self.sheet_name, ref, severity, code, message))

    def _failed(self, part: str, exc: BaseException, what: str) -> None:
        if isinstance(exc, HostileContentError):
            self.warn("hostile_content", f"{what} {part} refused: {exc.message}",
                      severity="error")
        elif isinstance(exc, LimitExceededError):
            self.warn("limit_exceeded", f"{what} {part} skipped: {exc.message}", severity="error")
        elif isinstance(exc, ExtractionError):
            self.warn("malformed_part", f"{what} {part} skipped: {exc.message}")
        else:
            self.warn("malformed_part", f"{what} {part} skipped: {type(exc).__name__}: {exc}")

    def load(self, part: str | None, what: str = "part"):
        """Parse an optional XML part; ``None`` (and an issue) when it cannot be read."""
        if not part:
            return None
        if part.startswith("external:"):
            self.warn("external_part", f"{what} points outside the package ({part[9:]}); "
                      "not read")
            return None
        if not self.reader.has(part):
            self.warn("missing_part", f"{what} {part} is missing from the package")
            return None
        try:
            return parse_part(self.reader, part)
        except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
            self._failed(part, exc, what)
            return None

    def load_once(self, part: str | None, what: str = "part"):
        """:meth:`load` of a part that belongs to one sheet or chart (a drawing, chart,
        comments, table or pivot table part: Excel writes one per owner). A part reached again,
        by another relationship of the package, is not read again: ``None``, with a
        ``shared_part`` warning (one per part), so the work stays bounded by what the package
        holds, not by how often it is referenced."""
        if part and not part.startswith("external:") and self.reader.has(part):
            cache = package_cache(self.reader)
            first, warned = cache.setdefault("parts_read", {}), cache.setdefault("shared", set())
            key = part.lower()
            if key in first:
                if key not in warned:
                    warned.add(key)
                    owner = f"sheet {first[key]!r}" if first[key] is not None else "the workbook"
                    self.warn("shared_part", f"{what} {part} is reached by more than one "
                              f"relationship; read once, for {owner}")
                return None
            first[key] = self.sheet_name
        return self.load(part, what)

    def rels(self, part: str | None) -> dict[str, tuple[str, str]]:
        """Relationships of ``part`` ({} and an issue when the rels part is unreadable)."""
        if not part:
            return {}
        try:
            return read_rels(self.reader, part)
        except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
            self._failed(part, exc, "relationships of")
            return {}

    def target(self, rels: dict, rid: str | None, expected: Iterable[str], what: str,
               ref: str | None = None) -> str | None:
        """Target part of relationship ``rid`` (of one of the ``expected`` types) or None."""
        if not rid:
            self.warn("bad_relationship", f"{what} has no relationship id", ref)
            return None
        rel = rels.get(rid)
        if rel is None:
            self.warn("bad_relationship", f"{what} refers to relationship {rid!r}, which does "
                      "not exist", ref)
            return None
        rtype, target = rel
        expected = tuple(expected)
        if expected and rtype not in expected:
            self.warn("bad_relationship", f"{what} relationship {rid!r} has type {rtype!r}, "
                      f"expected {'/'.join(expected)}", ref)
            return None
        return target


def guarded(ctx: ObjectContext, what: str, fn: Callable[[], list], ref: str | None = None) -> list:
    """Run one reader step; an unexpected failure becomes an issue instead of an exception."""
    try:
        return fn()
    except (ExtractionError, etree.LxmlError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, OSError, struct.error, OverflowError, RecursionError) as exc:
        if isinstance(exc, (HostileContentError, LimitExceededError)):
            ctx._failed(what, exc, "object")
        else:
            ctx.warn("object_read_failed", f"{what}: {type(exc).__name__}: {exc}", ref)
        return []


def xml_bool(value: str | None, default: bool | None = None) -> bool | None:
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "on")


def xml_int(value: str | None, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        try:
            return int(float(value))
        except (ValueError, OverflowError):
            return default


def strip_external(target: str) -> str:
    """A relationship target as written (``external:`` marks TargetMode="External")."""
    return target[9:] if target.startswith("external:") else target


def clean_ref(ref: str | None) -> str | None:
    """Normalise a cell reference (``$A$1`` -> ``A1``); unparseable refs are kept as written."""
    if not ref:
        return ref
    try:
        return cell_ref(*parse_cell_ref(ref))
    except ValueError:
        return ref.strip()


def ref_key(ref: str | None) -> tuple:
    try:
        r, c = parse_cell_ref((ref or "").split(":")[0].split(" ")[0])
        return (0, r, c)
    except ValueError:
        return (1, 0, 0)


def json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def value_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return format(v, ".15g")
    return str(v)


_PKG_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def package_cache(reader) -> dict:
    """Per-package cache (workbook part, persons, content types, sheet parts)."""
    try:
        cache = _PKG_CACHE.get(reader)
        if cache is None:
            cache = {}
            _PKG_CACHE[reader] = cache
        return cache
    except TypeError:  # not weak-referenceable
        return {}


def find_workbook_part(ctx: ObjectContext) -> str:
    cache = package_cache(ctx.reader)
    if "workbook_part" not in cache:
        part = None
        for rtype, target in ctx.rels("").values() if ctx.reader.has("_rels/.rels") else []:
            if rtype == "officeDocument" and not target.startswith("external:"):
                part = target
        cache["workbook_part"] = part if part and ctx.reader.has(part) else "xl/workbook.xml"
    return cache["workbook_part"]


def read_persons(ctx: ObjectContext) -> dict[str, str]:
    """Person id -> display name from the workbook's ``persons`` part ([MS-XLSX] §2.1.7.2)."""
    cache = package_cache(ctx.reader)
    if "persons" in cache:
        return cache["persons"]
    persons: dict[str, str] = {}
    wb = find_workbook_part(ctx)
    parts = [t for rt, t in ctx.rels(wb).values()
             if rt == "person" and not t.startswith("external:")]
    if not parts:
        parts = [n for n in ctx.reader.names() if n.lower().startswith("xl/persons/")
                 and n.lower().endswith(".xml")]
    for part in parts:
        root = ctx.load(part, "persons part")
        if root is None:
            continue
        for p in root.iter("{*}person"):
            if p.get("id"):
                persons[p.get("id")] = p.get("displayName") or p.get("userId") or ""
    cache["persons"] = persons
    return persons


def read_content_types(ctx: ObjectContext) -> tuple[dict[str, str], dict[str, str]]:
    """(extension -> content type, part name -> content type) of ``[Content_Types].xml``."""
    cache = package_cache(ctx.reader)
    if "content_types" not in cache:
        defaults: dict[str, str] = {}
        overrides: dict[str, str] = {}
        if ctx.reader.has("[Content_Types].xml"):
            root = ctx.load("[Content_Types].xml", "content types part")
            for el in root if root is not None else []:
                if not isinstance(el.tag, str):
                    continue
                if local(el.tag) == "Default" and el.get("Extension"):
                    defaults[el.get("Extension").lower()] = el.get("ContentType") or ""
                elif local(el.tag) == "Override" and el.get("PartName"):
                    overrides[el.get("PartName").lstrip("/").lower()] = el.get("ContentType") or ""
        cache["content_types"] = (defaults, overrides)
    return cache["content_types"]


def find_sheet_parts(ctx: ObjectContext) -> dict[str, str]:
    """Sheet name -> worksheet part, for resolving chart references to other sheets."""
    cache = package_cache(ctx.reader)
    if "sheet_parts" not in cache:
        out: dict[str, str] = {}
        states: dict[str, str] = {}
        wb = find_workbook_part(ctx)
        root = ctx.load(wb, "workbook part") if ctx.reader.has(wb) else None
        rels = ctx.rels(wb) if root is not None else {}
        for el in root.iter("{*}sheet") if root is not None else []:
            rel = rels.get(rel_attr(el) or "")
            if el.get("name"):
                states[el.get("name")] = el.get("state") or "visible"
            if rel and not rel[1].startswith("external:") and el.get("name"):
                out[el.get("name")] = rel[1]
        cache["sheet_parts"], cache["sheet_states"] = out, states
    return cache["sheet_parts"]


def find_sheet_state(ctx: ObjectContext, sheet: str) -> str:
    """The visibility of a sheet by name (§18.18.68: ``visible``, ``hidden``, ``veryHidden``)."""
    find_sheet_parts(ctx)
    return package_cache(ctx.reader).get("sheet_states", {}).get(sheet, "visible")
