"""The ``colours`` and ``review`` commands: what people decide about colour meanings and about
the cells the two reads of a workbook disagree on and the words OCR is not sure of. Every
decision is appended to a registry (:mod:`extraction_assets.store.decisions`) with its actor
and note; nothing is overwritten."""

from __future__ import annotations

import getpass
import json
import shlex
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from extraction_assets.store.decisions import (
    DECISIONS,
    RegistryError,
    decide_mapping,
    mapping_versions,
    resolve_item,
)
from extraction_assets.store.storage import ENV_HOME, DataStore, default_data_dir
from extraction_assets.store.warehouse import connect, refresh_views

colours_app = typer.Typer(no_args_is_help=True, help="Colour meanings from the workbooks' "
                                                     "legends: list drafts, confirm, reject.")
review_app = typer.Typer(no_args_is_help=True, help="Cells the two reads of a workbook "
                                                    "disagree on, words OCR is not sure of: "
                                                    "list, resolve.")

DataDir = typer.Option(None, "--data-dir", help=f"Data folder (default: ${ENV_HOME} or ./data).")
Actor = typer.Option(None, "--actor", help="Who decides (default: your user name).")
Note = typer.Option("", "--note", help="Why (kept with the decision).")
AsJson = typer.Option(False, "--json", help="Print JSON lines instead of a table.")


def _store(data_dir: Optional[Path]) -> DataStore:
    return DataStore(data_dir.expanduser() if data_dir else default_data_dir())


def _print(text: str) -> None:
    from extraction_assets.app.cli import console, shown

    console.print(shown(text), highlight=False)


def _table(title: str, columns: list[str], rows: list[list]) -> None:
    from extraction_assets.app.cli import console, shown

    out = Table(title=title)
    for i, name in enumerate(columns):
        out.add_column(name, no_wrap=i == 0)  # the id, which commands take
    for row in rows:
        out.add_row(*[shown("" if v is None else v) for v in row])
    console.print(out)


def _fail(exc: Exception) -> None:
    from extraction_assets.app.cli import err_console, shown

    err_console.print(shown(exc), highlight=False)
    raise typer.Exit(code=2)


def _print_json(rows: list[dict]) -> None:
    """One JSON object a line (times in ISO 8601)."""
    for r in rows:
        print(json.dumps({k: (v.isoformat() if hasattr(v, "isoformat") else v)
                          for k, v in r.items()}, ensure_ascii=False))


def _actor(actor: Optional[str]) -> str:
    return actor if actor is not None else getpass.getuser()


@colours_app.command("list")
def colours_list(data_dir: Optional[Path] = DataDir,
                 all_versions: bool = typer.Option(False, "--all", help="Also superseded and "
                                                   "rejected versions."),
                 as_json: bool = AsJson) -> None:
    """Colour mappings: drafts proposed by legends and the decisions on them (id, scope,
    colour, version, status, tag, actor, note). Drafts tag nothing until confirmed."""
    rows = [r for r in mapping_versions(_store(data_dir))
            if all_versions or (r["status"] != "rejected" and not r["superseded"])]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        _print("no colour mappings yet: ingest a workbook with a legend (a filled cell beside "
               "a label)")
        return
    _table("colour mappings", ["id", "file", "colour", "v", "status", "tag", "actor", "note"],
           [[r["mapping_id"], Path(r["scope"]).name, f"#{r['fill_rgb']}", r["version"],
             "superseded" if r["superseded"] else r["status"], r["tag"], r["actor"], r["note"]]
            for r in rows])


def _decide(ident: str, status: str, data_dir: Optional[Path], actor: Optional[str],
            note: str) -> None:
    store = _store(data_dir)
    try:
        event = decide_mapping(store, ident, status, _actor(actor), note)
    except RegistryError as exc:
        _fail(exc)
    refresh_views(store)
    verb = "confirmed" if status == "active" else "rejected"
    _print(f"{verb} {event['mapping_id']}: #{event['fill_rgb']} = {event['tag']!r} "
           f"(version {event['version']}) for {event['scope']}")
    _print("records and chunks change on the next render: extraction-assets ingest --force "
           f"--data-dir {shlex.quote(str(store.root))} {shlex.quote(event['scope'])}")


@colours_app.command("confirm")
def colours_confirm(mapping: str = typer.Argument(..., help="Mapping id (or its first 6+ digits)."),
                    data_dir: Optional[Path] = DataDir, actor: Optional[str] = Actor,
                    note: str = Note) -> None:
    """Confirm a mapping version: cells of its colour (outside conditional-format ranges) are
    tagged from now on; an older active version of the colour is superseded, not deleted."""
    _decide(mapping, "active", data_dir, actor, note)


@colours_app.command("reject")
def colours_reject(mapping: str = typer.Argument(..., help="Mapping id (or its first 6+ digits)."),
                   data_dir: Optional[Path] = DataDir, actor: Optional[str] = Actor,
                   note: str = Note) -> None:
    """Reject a mapping version: it tags nothing (a rejected active version stops tagging)."""
    _decide(mapping, "rejected", data_dir, actor, note)


@review_app.command("list")
def review_list(data_dir: Optional[Path] = DataDir,
                all_items: bool = typer.Option(False, "--all", help="Also resolved items."),
                limit: int = typer.Option(50, "-n", min=1, help="Most items shown."),
                as_json: bool = AsJson) -> None:
    """Review items, open first, conflicts first: cell, reason, each read's value (an OCR
    word's confidence) and the latest resolution."""
    store = _store(data_dir)
    with connect(store) as con:
        cur = con.execute("SELECT * FROM review_queue" + ("" if all_items else
                                                           " WHERE status = 'open'")
                          + " LIMIT ?", [limit])
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row)) for row in cur.fetchall()]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        _print("nothing to review")
        return
    _table("review queue", ["item", "status", "p", "reason", "file", "cell", "first read",
                            "second read / OCR", "decision"],
           [[r["item_id"], r["status"], r["priority"], r["reason"], r["filename"],
             f"{r['sheet_name']}!{r['ref']}", r["first_value"],
             r["second_value"] if r["confidence"] is None
             else f"OCR confidence {r['confidence']:.0f}",
             r["decision"] and f"{r['decision']}: {r['resolved_value']} ({r['actor']})"]
            for r in rows])


@review_app.command("resolve")
def review_resolve(item: str = typer.Argument(..., help="Item id (or its first 6+ digits)."),
                   decision: str = typer.Option(
                       ..., "--decision", help=f"One of {', '.join(DECISIONS)}: first (our "
                       "read is right), second (the second read is), value (give --value), "
                       "dismiss."),
                   value: Optional[str] = typer.Option(None, "--value",
                                                       help="The right value."),
                   data_dir: Optional[Path] = DataDir, actor: Optional[str] = Actor,
                   note: str = Note) -> None:
    """Record a decision on a review item. The source tables never change; the decision is
    kept beside the item (view review_resolutions), the latest one shown in review_queue."""
    store = _store(data_dir)
    with connect(store) as con:
        cur = con.execute("SELECT * FROM review_items WHERE starts_with(item_id, ?)", [item])
        names = [d[0] for d in cur.description]
        found = [dict(zip(names, row)) for row in cur.fetchall()]
    try:
        if len(item) < 6 or len(found) != 1:
            raise RegistryError(f"{len(found) if len(item) >= 6 else 'no'} review items match "
                                f"{item!r}" + ("" if len(item) >= 6 else " (give 6+ digits)"))
        row = resolve_item(store, found[0], decision, _actor(actor), value, note)
    except RegistryError as exc:
        _fail(exc)
    refresh_views(store)
    _print(f"resolved {row['item_id']} ({found[0]['sheet_name']}!{found[0]['ref']}): "
           f"{row['decision']}" + (f" = {row['value']!r}" if row["value"] is not None else ""))
