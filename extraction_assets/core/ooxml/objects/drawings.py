"""The drawing part of a sheet (SpreadsheetML drawing, §20.5): anchors, pictures (§20.5.2.25)
and the charts they place. A picture's text is its alt text (``descr``, else ``title``) and
what OCR reads in it (when Tesseract is installed); a chart's, its rendering
(:func:`~.charts.render_chart`) and its alt text.
"""

from __future__ import annotations

import hashlib
import posixpath
import struct
from typing import Any

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, cell_ref
from extraction_assets.core.errors import ExtractionError
from extraction_assets.core.model import SheetObject
from extraction_assets.core.ocr import MIN_SIDE_PX, OcrError, OcrSession, open_picture
from extraction_assets.core.ooxml.objects.charts import read_chart, read_chartex, render_chart
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    guarded,
    package_cache,
    read_content_types,
    strip_external,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.objects.resolve import CellResolver
from extraction_assets.core.ooxml.rels import rel_attr
from extraction_assets.core.ooxml.xml import child_element, child_elements, child_path, local

#: Bytes of an image kept to read its dimensions from the header.
_IMAGE_HEAD = 256 * 1024
_EMU_PER_PX = 9525
_ANCHORS = ("twoCellAnchor", "oneCellAnchor", "absoluteAnchor")


def _anchor_cell(el) -> str | None:
    if el is None:
        return None
    col = xml_int((child_element(el, "col").text if child_element(el, "col") is not None else None))
    row = xml_int((child_element(el, "row").text if child_element(el, "row") is not None else None))
    if col is None or row is None or not (0 <= col < MAX_COL and 0 <= row < MAX_ROW):
        return None
    return cell_ref(row + 1, col + 1)


def _ext_emu(el) -> list[int] | None:
    if el is None:
        return None
    cx, cy = xml_int(el.get("cx")), xml_int(el.get("cy"))
    if cx is None or cy is None:
        return None
    return [cx, cy]


class DrawingReader:
    """Charts and pictures of one SpreadsheetML drawing part (§20.5.2.35 ``wsDr``)."""

    def __init__(self, ctx: ObjectContext, part: str, resolver: CellResolver):
        self.ctx = ctx
        self.part = part
        self.resolver = resolver
        self.rels: dict = {}

    def read(self) -> list[SheetObject]:
        root = self.ctx.load_once(self.part, "drawing part")
        if root is None:
            return []
        self.rels = self.ctx.rels(self.part)
        out: list[SheetObject] = []
        for anchor in self._anchors(root):
            out.extend(guarded(self.ctx, f"drawing anchor in {self.part}",
                              lambda a=anchor: self._anchor(a)))
        return out

    def _anchors(self, root) -> list:
        found = []
        for el in root:
            if not isinstance(el.tag, str):
                continue
            name = local(el.tag)
            if name in _ANCHORS:
                found.append(el)
            elif name == "AlternateContent":
                branches = child_elements(el, "Choice") + child_elements(el, "Fallback")
                for branch in branches:
                    inner = [c for c in branch if local(c.tag) in _ANCHORS]
                    if inner:
                        found.extend(inner)
                        break
        return found

    def _anchor(self, anchor) -> list[SheetObject]:
        kind = local(anchor.tag)
        info = {
            "anchor": _anchor_cell(child_element(anchor, "from")),
            "anchor_to": _anchor_cell(child_element(anchor, "to")) if kind == "twoCellAnchor" else None,
            "anchor_type": kind,
            "ext": _ext_emu(child_element(anchor, "ext")),
        }
        out: list[SheetObject] = []
        for el in anchor:
            if isinstance(el.tag, str):
                out.extend(self._content(el, info, 0))
        return out

    def _content(self, el, info: dict, depth: int) -> list[SheetObject]:
        if depth > 32:
            return []
        name = local(el.tag)
        if name == "graphicFrame":
            return self._frame(el, info)
        if name == "pic":
            return self._picture(el, info)
        if name == "grpSp":
            out = []
            for child in el:
                if isinstance(child.tag, str):
                    out.extend(self._content(child, info, depth + 1))
            return out
        if name == "AlternateContent":
            for branch in child_elements(el, "Choice") + child_elements(el, "Fallback"):
                out = []
                for child in branch:
                    if isinstance(child.tag, str):
                        out.extend(self._content(child, info, depth + 1))
                if out:
                    return out
        return []

    @staticmethod
    def _nv(el, nv_name: str) -> dict:
        c = child_path(el, nv_name, "cNvPr")
        if c is None:
            return {"name": None, "descr": None, "title": None, "hidden": False}
        return {"name": c.get("name"), "descr": c.get("descr"), "title": c.get("title"),
                "hidden": xml_bool(c.get("hidden"), False)}

    def _frame(self, frame, info: dict) -> list[SheetObject]:
        nv = self._nv(frame, "nvGraphicFramePr")
        chart_el = None
        for el in frame.iter():
            if isinstance(el.tag, str) and local(el.tag) == "chart" and rel_attr(el):
                chart_el = el
                break
        if chart_el is None:
            return []
        ref = info["anchor"]
        part = self.ctx.target(self.rels, rel_attr(chart_el), ("chart", "chartEx"),
                               f"chart frame {nv['name']!r}", ref)
        if part is None:
            return []
        rtype = self.rels[rel_attr(chart_el)][0]
        data = (read_chartex if rtype == "chartEx" else read_chart)(
            self.ctx, part, self.resolver)
        if data is None:
            return []
        details = {
            "anchor": info["anchor"], "anchor_to": info["anchor_to"],
            "anchor_type": info["anchor_type"], "frame_name": nv["name"],
            "alt_text": nv["descr"], "chart_part": part, **data,
        }
        alt_text = " ".join((nv["descr"] or nv["title"] or "").split())  # one line
        text = "\n".join(t for t in (render_chart(data), alt_text) if t)
        return [SheetObject("chart", self.ctx.sheet_name, ref, data["title"] or nv["name"],
                            text, details)]

    def _picture(self, pic, info: dict) -> list[SheetObject]:
        nv = self._nv(pic, "nvPicPr")
        ref = info["anchor"]
        blip = None
        blip_fill = child_element(pic, "blipFill")
        if blip_fill is not None:
            blip = child_element(blip_fill, "blip")
        details: dict[str, Any] = {
            "anchor": info["anchor"], "anchor_to": info["anchor_to"],
            "anchor_type": info["anchor_type"], "alt_text": nv["descr"], "title": nv["title"],
            "hidden": nv["hidden"], "media_part": None, "external_target": None,
            "content_type": None, "extension": None, "size_bytes": None, "sha256": None,
            "width_px": None, "height_px": None,
            "display_size_emu": info["ext"] or _ext_emu(child_path(pic, "spPr", "xfrm", "ext")),
        }
        if details["display_size_emu"] == [0, 0]:
            details["display_size_emu"] = None
        rid = rel_attr(blip, "embed") if blip is not None else None
        link = rel_attr(blip, "link") if blip is not None else None
        if rid:
            part = self.ctx.target(self.rels, rid, ("image",), f"picture {nv['name']!r}", ref)
            if part and part.startswith("external:"):
                details["external_target"] = part[9:]
            elif part:
                details["media_part"] = part
                _image_facts(self.ctx, part, details)
                _picture_ocr(self.ctx, part, details, f"picture {nv['name']!r}", ref)
        elif link:
            rel = self.rels.get(link)
            if rel is None:
                self.ctx.warn("bad_relationship", f"linked picture refers to relationship "
                              f"{link!r}, which does not exist", ref)
            else:
                details["external_target"] = strip_external(rel[1])
        else:
            self.ctx.warn("picture_without_image", f"picture {nv['name']!r} has no image "
                          "relationship", ref)
        if details["external_target"]:
            ext = posixpath.splitext(details["external_target"])[1]
            details["extension"] = ext.lstrip(".").lower() or None
        alt_text = " ".join((nv["descr"] or nv["title"] or "").split())  # one line
        text = "\n".join(t for t in (alt_text, details.get("ocr_text")) if t)
        return [SheetObject("picture", self.ctx.sheet_name, ref, nv["name"], text or None,
                            details)]


def _image_facts(ctx: ObjectContext, part: str, details: dict) -> None:
    """Content type, size, sha256 and pixel size of an embedded image (read under the limits),
    read once per package: Excel stores an image placed twice once, and the pictures that
    show it share its facts (so a drawing of many anchors on one large image reads it once)."""
    facts = package_cache(ctx.reader).setdefault("image_facts", {})
    key = part.lower()
    if key not in facts:
        found: dict = {}
        _read_image_facts(ctx, part, found)
        facts[key] = found
    details.update(facts[key])


def _picture_ocr(ctx: ObjectContext, part: str, details: dict, what: str,
                 ref: str | None) -> None:
    """The text OCR reads in an embedded picture (:mod:`extraction_assets.core.ocr`; once per
    image part, like its facts) into ``details``: ``ocr_text`` (its paragraphs, one a line)
    and the OCR facts of :func:`~extraction_assets.core.ocr.item_details` (boxes in pixels of
    the picture). Pictures Pillow cannot decode (Windows metafiles) are not read; one
    declaring more than ``max_image_pixels`` is skipped with an error issue."""
    cache = package_cache(ctx.reader)
    session = cache.setdefault("ocr_session", OcrSession(ctx.reader.limits))
    done = cache.setdefault("ocr_read", {})
    key = part.lower()
    if key not in done:
        done[key] = None
        small = details.get("width_px") is not None and min(
            details["width_px"], details["height_px"]) < MIN_SIDE_PX  # an icon, a rule
        if (details.get("size_bytes") and not small and ctx.reader.has(part)
                and session.available(what, ctx.issues, ctx.sheet_name, ref)):
            try:
                with ctx.reader.open(part) as stream:
                    image = open_picture(stream.read(), ctx.reader.limits.max_image_pixels)
            except OcrError as exc:  # damaged: said, the picture's alt text kept
                ctx.warn("ocr_failed", f"{what}: {exc.message}", ref)
                image = None
            except (ExtractionError, OSError, ValueError) as exc:
                ctx._failed(part, exc, "picture")
                image = None
            if image is not None:
                done[key] = session.picture_details(image, what, ctx.issues, ctx.sheet_name,
                                                    ref)
    details.update(done[key] or {})


def _read_image_facts(ctx: ObjectContext, part: str, details: dict) -> None:
    """The facts of :func:`_image_facts`, read from the image part into ``details``."""
    ext = posixpath.splitext(part)[1].lstrip(".").lower() or None
    details["extension"] = ext
    defaults, overrides = read_content_types(ctx)
    details["content_type"] = overrides.get(part.lower()) or (defaults.get(ext) if ext else None)
    if not ctx.reader.has(part):
        ctx.warn("missing_part", f"image {part} is missing from the package")
        return
    digest = hashlib.sha256()
    head = bytearray()
    size = 0
    try:
        with ctx.reader.open(part) as stream:
            while True:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                digest.update(chunk)
                size += len(chunk)
                if len(head) < _IMAGE_HEAD:
                    head += chunk[: _IMAGE_HEAD - len(head)]
    except (ExtractionError, OSError, ValueError) as exc:
        ctx._failed(part, exc, "image")
        return
    details["size_bytes"] = size
    details["sha256"] = digest.hexdigest()
    sniffed, wh = _image_header(bytes(head))
    if not details["content_type"] and sniffed:
        details["content_type"] = sniffed
    if wh:
        details["width_px"], details["height_px"] = wh


def _image_header(data: bytes) -> tuple[str | None, tuple[int, int] | None]:
    """(content type, (width, height)) from a PNG, JPEG, GIF or BMP header; cheap, no decoding."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            w, h = struct.unpack(">II", data[16:24])
            return "image/png", (w, h)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", data[6:10])
            return "image/gif", (w, h)
        if data.startswith(b"BM") and len(data) >= 26:
            w, h = struct.unpack("<ii", data[18:26])
            return "image/bmp", (abs(w), abs(h))
        if data.startswith(b"\xff\xd8"):
            i = 2
            while i + 9 < len(data):
                if data[i] != 0xFF:
                    i += 1
                    continue
                marker = data[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                    i += 1 if marker == 0xFF else 2
                    continue
                length = struct.unpack(">H", data[i + 2:i + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", data[i + 5:i + 9])
                    return "image/jpeg", (w, h)
                if length < 2:
                    break
                i += 2 + length
            return "image/jpeg", None
        if data[:4] in (b"\x01\x00\x00\x00",) and data[40:44] == b" EMF":
            return "image/x-emf", None
    except struct.error:
        pass
    return None, None
