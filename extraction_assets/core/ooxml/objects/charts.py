"""DrawingML charts (§21.2.2.27 ``chartSpace``) and Office 2016 ``chartEx`` charts, read into
titles, series and values, and rendered as text.
"""

from __future__ import annotations

from typing import Any

from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    json_value,
    value_text,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.objects.resolve import CellResolver
from extraction_assets.core.ooxml.xml import child_element, child_elements, child_path, local

#: Most points kept per chart series (a cache may declare any ``ptCount``).
MAX_POINTS = 100_000
#: Points per series shown in a chart's text rendering.
MAX_RENDER_POINTS = 200


def _chart_type(tag: str) -> str:
    """``barChart``/``bar3DChart`` -> ``bar``, ``lineChart`` -> ``line``, ``ofPieChart`` -> ``ofPie``.

    The plot groups are the ``*Chart`` children of ``plotArea`` (§21.2.2.145).
    """
    base = tag[:-5] if tag.endswith("Chart") else tag
    return base.replace("3D", "")


def _para_text(rich) -> str:
    """Text of a DrawingML text body (``a:p`` paragraphs of ``a:r``/``a:fld`` runs)."""
    paras = []
    for p in rich.iter("{*}p"):
        runs = []
        for r in p:
            if isinstance(r.tag, str) and local(r.tag) in ("r", "fld"):
                t = child_element(r, "t")
                runs.append(t.text or "" if t is not None else "")
        paras.append("".join(runs))
    return " ".join(s for s in paras if s).strip()


class _Series:
    """A chart data source (§21.2.2.x ``strRef``/``numRef``/``strLit``/``numLit``)."""

    __slots__ = ("formula", "values", "source")

    def __init__(self, formula=None, values=None, source="none"):
        self.formula = formula
        self.values = values
        self.source = source


def _cache_points(cache, numeric: bool, count: int | None = None) -> list:
    """Points of a ``strCache``/``numCache``/literal/``lvl`` by ``idx`` (missing ones None)."""
    count_el = child_element(cache, "ptCount")
    if count_el is not None:
        count = xml_int(count_el.get("val"))
    pts: dict[int, Any] = {}
    for pt in child_elements(cache, "pt"):
        idx = xml_int(pt.get("idx"))
        v = child_element(pt, "v")
        if idx is None or idx < 0 or idx >= MAX_POINTS or v is None:
            continue
        value: Any = v.text
        if numeric and value is not None:
            try:
                value = float(value)
            except ValueError:
                pass
        pts[idx] = json_value(value)
    n = count if count is not None and count >= 0 else (max(pts) + 1 if pts else 0)
    n = min(n, MAX_POINTS)
    if pts and max(pts) >= n and count is None:
        n = min(max(pts) + 1, MAX_POINTS)
    return [pts.get(i) for i in range(n)]


def _data_source(el) -> _Series:
    """The reference formula and cached points of ``tx``/``cat``/``val``/``xVal``/``yVal``."""
    if el is None:
        return _Series()
    for child in el:
        if not isinstance(child.tag, str):
            continue
        name = local(child.tag)
        if name in ("strRef", "numRef", "multiLvlStrRef"):
            f = child_element(child, "f")
            formula = f.text.strip() if f is not None and f.text else None
            cache = None
            for c in child:
                if isinstance(c.tag, str) and local(c.tag) in ("strCache", "numCache",
                                                                "multiLvlStrCache"):
                    cache = c
            count = None
            if cache is not None and local(cache.tag) == "multiLvlStrCache":
                # the first level is the one next to the axis (§21.2.2.102 multiLvlStrCache)
                count_el = child_element(cache, "ptCount")
                count = xml_int(count_el.get("val")) if count_el is not None else None
                cache = child_element(cache, "lvl")
            if cache is not None:
                points = _cache_points(cache, local(cache.tag) == "numCache", count)
                if points:
                    return _Series(formula, points, "cache")
            return _Series(formula, None, "none")
        if name in ("strLit", "numLit"):
            return _Series(None, _cache_points(child, name == "numLit"), "literal")
        if name == "v":
            return _Series(None, [child.text], "literal")
    return _Series()


def _resolve(series: _Series, resolver: CellResolver) -> _Series:
    if series.values is None and series.formula:
        values = resolver.values(series.formula)
        if values is not None:
            return _Series(series.formula, values, "cells")
    return series


def _title(title_el, resolver: CellResolver) -> str | None:
    if title_el is None:
        return None
    tx = child_element(title_el, "tx")
    if tx is None:
        return None
    rich = child_element(tx, "rich")
    if rich is not None:
        return _para_text(rich) or None
    src = _resolve(_data_source(tx), resolver)
    if src.values:
        return " ".join(value_text(v) for v in src.values if v is not None) or None
    return None


def read_chart(ctx: ObjectContext, part: str, resolver: CellResolver) -> dict | None:
    """Types, title, axis titles and series of a DrawingML chart part (§21.2.2.27)."""
    root = ctx.load_once(part, "chart part")
    if root is None:
        return None
    chart = child_element(root, "chart")
    plot = child_element(chart, "plotArea")
    specs = []
    types: list[str] = []
    for group in plot if plot is not None else []:
        if not isinstance(group.tag, str):
            continue
        gname = local(group.tag)
        if not gname.endswith("Chart"):
            continue
        ctype = _chart_type(gname)
        if ctype not in types:
            types.append(ctype)
        for ser in child_elements(group, "ser"):
            cat_el = child_element(ser, "cat")
            val_el = child_element(ser, "val")
            if cat_el is None and val_el is None:
                cat_el, val_el = child_element(ser, "xVal"), child_element(ser, "yVal")
            order_el = child_element(ser, "order")
            order = xml_int(order_el.get("val")) if order_el is not None else None
            specs.append((ctype, order, _data_source(child_element(ser, "tx")), _data_source(cat_el),
                          _data_source(val_el)))
    formulas = [s.formula for spec in specs for s in spec[2:] if s.values is None and s.formula]
    title_src = _data_source(child_path(chart, "title", "tx"))
    if title_src.values is None and title_src.formula:
        formulas.append(title_src.formula)
    resolver.prefetch(formulas)
    series = []
    for ctype, order, tx, cat, val in sorted(
            specs, key=lambda s: (s[1] is None, s[1] if s[1] is not None else 0)):
        tx, cat, val = _resolve(tx, resolver), _resolve(cat, resolver), _resolve(val, resolver)
        name = " ".join(value_text(v) for v in tx.values if v is not None) if tx.values else None
        series.append({
            "name": name or None, "chart_type": ctype,
            "categories": cat.values or [], "values": val.values or [],
            "name_ref": tx.formula, "categories_ref": cat.formula, "values_ref": val.formula,
            "source": val.source,
        })
    title_el = child_element(chart, "title") if chart is not None else None
    title = _title(title_el, resolver)
    auto_deleted = xml_bool(child_path(chart, "autoTitleDeleted").get("val"), True) \
        if child_path(chart, "autoTitleDeleted") is not None else False
    if title is None and title_el is not None and len(series) == 1 and not auto_deleted:
        title = series[0]["name"]
    axis_titles = []
    for ax in plot if plot is not None else []:
        if isinstance(ax.tag, str) and local(ax.tag) in ("catAx", "valAx", "dateAx", "serAx"):
            t = _title(child_element(ax, "title"), resolver)
            if t:
                axis_titles.append(t)
    return {"chart_types": types, "title": title, "axis_titles": axis_titles, "series": series}


def read_chartex(ctx: ObjectContext, part: str, resolver: CellResolver) -> dict | None:
    """A reduced reading of an Office 2016 ``chartEx`` part (waterfall, treemap, funnel...)."""
    root = ctx.load_once(part, "chartEx part")
    if root is None:
        return None
    data: dict[str, dict[str, _Series]] = {}
    for d in root.iter("{*}data"):
        dims: dict[str, _Series] = {}
        for dim in d:
            if not isinstance(dim.tag, str) or local(dim.tag) not in ("strDim", "numDim"):
                continue
            f = child_element(dim, "f")
            lvl = child_element(dim, "lvl")
            values = _cache_points(lvl, local(dim.tag) == "numDim") if lvl is not None else None
            dims.setdefault(dim.get("type") or "val", _Series(
                f.text.strip() if f is not None and f.text else None, values or None,
                "cache" if values else "none"))
        data[d.get("id") or str(len(data))] = dims
    chart = child_element(root, "chart")
    title_el = child_element(chart, "title")
    title = None
    if title_el is not None:
        rich = child_path(title_el, "tx", "rich")
        v = child_path(title_el, "tx", "txData", "v")
        if rich is not None:
            title = _para_text(rich) or None
        elif v is not None:
            title = v.text or None
    types: list[str] = []
    series = []
    for ser in root.iter("{*}series"):
        ctype = ser.get("layoutId") or "chartEx"
        if ctype not in types:
            types.append(ctype)
        did = child_path(ser, "dataId")
        dims = data.get(did.get("val") if did is not None else "0", {})
        cat = _resolve(dims.get("cat", _Series()), resolver)
        val = _resolve(dims.get("val", dims.get("size", _Series())), resolver)
        name_v = child_path(ser, "tx", "txData", "v")
        name_f = child_path(ser, "tx", "txData", "f")
        series.append({
            "name": name_v.text if name_v is not None else None, "chart_type": ctype,
            "categories": cat.values or [], "values": val.values or [],
            "name_ref": name_f.text if name_f is not None else None,
            "categories_ref": cat.formula, "values_ref": val.formula, "source": val.source,
        })
    return {"chart_types": types, "title": title, "axis_titles": [], "series": series}


def render_chart(data: dict) -> str:
    """Readable text: title, type(s) and each series' category/value pairs."""
    types = ", ".join(data["chart_types"]) or "unknown"
    head = f'Chart "{data["title"]}" ({types})' if data["title"] else f"Chart ({types})"
    lines = [head]
    if data["axis_titles"]:
        lines.append("Axes: " + "; ".join(data["axis_titles"]))
    for i, s in enumerate(data["series"], 1):
        name = s["name"] or f"Series {i}"
        values = s["values"]
        cats = s["categories"]
        pairs = []
        for j, v in enumerate(values[:MAX_RENDER_POINTS]):
            label = value_text(cats[j]) if j < len(cats) and cats[j] is not None else str(j + 1)
            pairs.append(f"{label} = {value_text(v)}")
        more = ""
        if len(values) > MAX_RENDER_POINTS:
            more = f"; … ({len(values) - MAX_RENDER_POINTS} more)"
        lines.append(f'Series "{name}": ' + ("; ".join(pairs) or "(no data)") + more)
    return "\n".join(lines)
