"""Comments: legacy notes (§18.7) and Office 2019+ threaded comments with their replies
([MS-XLSX] §2.1.7.1/§2.1.7.2).
"""

from __future__ import annotations

from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    clean_ref,
    guarded,
    read_persons,
    ref_key,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.xml import child_element, child_elements, rich_text


def _legacy_comments(ctx: ObjectContext, part: str) -> list[SheetObject]:
    """Comments of a legacy comments part (§18.7.6 ``comments``, §18.7.3 ``comment``)."""
    root = ctx.load_once(part, "comments part")
    if root is None:
        return []
    authors_el = child_element(root, "authors")
    authors = ([a.text or "" for a in child_elements(authors_el, "author")]
               if authors_el is not None else [])
    list_el = child_element(root, "commentList")
    out = []
    for c in child_elements(list_el, "comment") if list_el is not None else []:
        ref = clean_ref(c.get("ref"))
        aid = xml_int(c.get("authorId"))
        author = authors[aid] if aid is not None and 0 <= aid < len(authors) else None
        text_el = child_element(c, "text")
        text = rich_text(text_el) if text_el is not None else ""
        out.append(SheetObject("comment", ctx.sheet_name, ref, None, text, {
            "author": author, "created": None, "replies": [], "threaded": False,
            "resolved": None,
        }))
    return out


def _threaded_comments(ctx: ObjectContext, part: str) -> list[SheetObject]:
    """Threads of a ``threadedComments`` part ([MS-XLSX] §2.1.7.1), replies in order."""
    root = ctx.load_once(part, "threaded comments part")
    if root is None:
        return []
    persons = read_persons(ctx)
    entries = []
    for tc in root.iter("{*}threadedComment"):
        text_el = child_element(tc, "text")
        entries.append({
            "id": tc.get("id"), "parent": tc.get("parentId"), "ref": clean_ref(tc.get("ref")),
            "author": persons.get(tc.get("personId") or "") or None,
            "created": tc.get("dT"), "text": (text_el.text or "") if text_el is not None else "",
            "done": xml_bool(tc.get("done"), False),
        })
    roots = {e["id"]: e for e in entries if not e["parent"] and e["id"]}
    threads: list[tuple[dict, list[dict]]] = []
    by_root: dict[str, list[dict]] = {}
    for e in entries:
        if e["parent"] and e["parent"] in roots:
            by_root.setdefault(e["parent"], []).append(e)
        else:
            if e["parent"]:
                ctx.warn("orphan_reply", f"threaded reply {e['id']} names a missing parent "
                         f"{e['parent']}", e["ref"])
            replies: list[dict] = []
            if e["id"]:
                replies = by_root.setdefault(e["id"], [])
            threads.append((e, replies))
    out = []
    for root_e, replies in threads:
        rep = [{"author": r["author"], "created": r["created"], "text": r["text"]}
               for r in replies]
        lines = [root_e["text"]] + [
            (f"Reply by {r['author']}: " if r["author"] else "Reply: ") + r["text"] for r in rep]
        out.append(SheetObject("comment", ctx.sheet_name, root_e["ref"], None, "\n".join(lines), {
            "author": root_e["author"], "created": root_e["created"], "replies": rep,
            "threaded": True, "resolved": bool(root_e["done"]),
        }))
    return out


def read_comments(ctx: ObjectContext, rels: dict) -> list[SheetObject]:
    legacy: list[SheetObject] = []
    threaded: list[SheetObject] = []
    for rtype, target in rels.values():
        if rtype == "comments":
            legacy.extend(guarded(ctx, f"comments {target}",
                                 lambda t=target: _legacy_comments(ctx, t)))
        elif rtype == "threadedComment":
            threaded.extend(guarded(ctx, f"threaded comments {target}",
                                   lambda t=target: _threaded_comments(ctx, t)))
    threaded_refs = {o.ref for o in threaded}
    out = threaded + [o for o in legacy if o.ref not in threaded_refs]
    out.sort(key=lambda o: ref_key(o.ref))
    return out
