"""Append-only registries of what people decided: colour mappings and review resolutions.

Each registry is a folder of Parquet files under ``<data-dir>/parquet/<table>/``, one file per
change, never rewritten or deleted: a decision is a new row, and what came before stays readable
(the ``colour_mappings``, ``colour_mapping_events``, ``review_resolutions`` and ``review_queue``
views, see :mod:`.trust_views`). Writers of all processes queue on a file lock
(``<data-dir>/.<table>.lock``), so versions are numbered without gaps or repeats.

**Colour mappings** (table ``colour_mappings``: one row per event). A mapping version is a
(``scope``, ``fill_rgb``, ``version``) with an id (:func:`mapping_id`); its events are a
``draft`` (proposed by a legend, actor ``extraction-assets``), then ``active`` (confirmed) or
``rejected``, each with its actor and note. A version's status is its latest event's. The
scope is the workbook's source path, so a mapping confirmed once applies to the file's later
versions. Confirming a version makes it the one that tags cells; older active versions of the
same colour are then *superseded*, never deleted.

**Review resolutions** (table ``review_resolutions``): a decision on a review item
(``first``: our read is right, ``second``: the second read is right, ``value``: the right value
given by hand, ``dismiss``: not a problem), recorded beside the item; the source tables never
change.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from extraction_assets.pipeline.schemas import SCHEMAS
from extraction_assets.store.storage import DataStore, atomic_write_bytes, writing

#: The actor of the drafts that legends propose.
SYSTEM_ACTOR = "extraction-assets"
STATUSES = ("draft", "active", "rejected")
DECISIONS = ("first", "second", "value", "dismiss")


class RegistryError(ValueError):
    """A registry change that cannot be made (unknown id, a decision that does not apply)."""


def append_rows(store: DataStore, name: str, rows: list[dict]) -> None:
    """Append ``rows`` to registry table ``name`` as one new Parquet file (atomic).

    Raises:
        DataDirError: the data dir cannot be written.
    """
    if not rows:
        return
    data = pa.Table.from_pylist(rows, schema=SCHEMAS[name])
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, compression="zstd")
    folder = store.parquet_dir / name
    with writing(store.root):
        folder.mkdir(parents=True, exist_ok=True)
        n = len(list(folder.glob("*.parquet")))
        atomic_write_bytes(folder / f"{n:08d}-{uuid.uuid4().hex[:8]}.parquet",
                           sink.getvalue().to_pybytes())


def read_rows(store: DataStore, name: str) -> list[dict]:
    """Every row of registry table ``name``, in the order written."""
    folder = store.parquet_dir / name
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    return [row for f in files for row in pq.read_table(f, schema=SCHEMAS[name]).to_pylist()]


def _lock(store: DataStore, name: str) -> FileLock:
    store.root.mkdir(parents=True, exist_ok=True)
    return FileLock(str(store.root / f".{name}.lock"), timeout=600)


def mapping_id(scope: str, fill_rgb: str, version: int) -> str:
    """Id of a mapping version: sha256 of scope, colour and version (16 hex digits)."""
    return hashlib.sha256(f"{scope}\x1f{fill_rgb}\x1f{version}".encode()).hexdigest()[:16]


def mapping_versions(store: DataStore) -> list[dict]:
    """Every mapping version with its current status (its latest event's) and the actor,
    note and time of that event, ordered by scope, colour and version. ``superseded`` is true
    for an active version when a later version of the same colour is active."""
    latest: dict[str, dict] = {}
    for row in read_rows(store, "colour_mappings"):
        latest[row["mapping_id"]] = row
    versions = sorted(latest.values(), key=lambda r: (r["scope"], r["fill_rgb"], r["version"]))
    newest_active: dict[tuple[str, str], int] = {}
    for row in versions:
        if row["status"] == "active":
            newest_active[(row["scope"], row["fill_rgb"])] = row["version"]
    for row in versions:
        row["superseded"] = (row["status"] == "active"
                             and newest_active[(row["scope"], row["fill_rgb"])] > row["version"])
    return versions


def active_tags(store: DataStore, scope: str) -> dict[str, str]:
    """The tags of a scope's active mappings (the newest active version of each colour):
    ``RRGGBB -> tag``."""
    return {row["fill_rgb"]: row["tag"] for row in mapping_versions(store)
            if row["scope"] == scope and row["status"] == "active" and not row["superseded"]}


def undecided(store: DataStore, scope: str) -> list[dict]:
    """The newest version of each colour of ``scope`` when it is still a draft (it tags no
    cell until confirmed)."""
    newest: dict[str, dict] = {}
    for row in mapping_versions(store):
        if row["scope"] == scope:
            newest[row["fill_rgb"]] = row
    return [row for _, row in sorted(newest.items()) if row["status"] == "draft"]


def propose_drafts(store: DataStore, scope: str, legends: list[dict]) -> list[dict]:
    """Add a ``draft`` version for each legend entry (rows of ``colour_legends``) whose colour
    has no version in ``scope`` yet, or whose newest version says something else; returns the
    drafts added. A legend already proposed (whatever was decided) adds nothing."""
    if not legends:
        return []
    with _lock(store, "colour_mappings"):
        newest: dict[str, dict] = {}
        for row in mapping_versions(store):
            if row["scope"] == scope:
                newest[row["fill_rgb"]] = row
        now = datetime.now(timezone.utc)
        added = []
        for legend in legends:
            last = newest.get(legend["fill_rgb"])
            if last is not None and last["tag"] == legend["tag"]:
                continue
            version = last["version"] + 1 if last else 1
            added.append(dict(
                mapping_id=mapping_id(scope, legend["fill_rgb"], version), scope=scope,
                fill_rgb=legend["fill_rgb"], version=version, status="draft",
                key=legend["key"], label=legend["label"], tag=legend["tag"],
                workbook_hash=legend["workbook_hash"], sheet_name=legend["sheet_name"],
                swatch_ref=legend["swatch_ref"], actor=SYSTEM_ACTOR,
                note=f"legend at {legend['sheet_name']}!{legend['swatch_ref']}:"
                     f"{legend['label_ref']}", created_at=now))
            newest[legend["fill_rgb"]] = added[-1]
        append_rows(store, "colour_mappings", added)
    return added


def decide_mapping(store: DataStore, ident: str, status: str, actor: str, note: str = ""
                   ) -> dict:
    """Record a decision on a mapping version (``active`` confirms, ``rejected`` rejects; an
    id prefix of at least 6 digits is enough); returns the event row.

    Raises:
        RegistryError: no version or several match ``ident``; ``status`` is not a decision;
            the version already has that status; ``actor`` is empty.
    """
    if status not in ("active", "rejected"):
        raise RegistryError(f"status {status!r}: a decision is 'active' or 'rejected'")
    if not actor.strip():
        raise RegistryError("a decision needs an actor (who decided)")
    with _lock(store, "colour_mappings"):
        found = [r for r in mapping_versions(store) if r["mapping_id"].startswith(ident)]
        if len(ident) < 6 or len(found) != 1:
            raise RegistryError(f"{len(found) if len(ident) >= 6 else 'no'} mapping versions "
                                f"match id {ident!r}" + ("" if len(ident) >= 6 else
                                                         " (give at least 6 digits)"))
        row = found[0]
        if row["status"] == status:
            raise RegistryError(f"mapping {row['mapping_id']} is already {status}")
        event = {k: row[k] for k in SCHEMAS["colour_mappings"].names}
        event.update(status=status, actor=actor.strip(), note=note,
                     created_at=datetime.now(timezone.utc))
        append_rows(store, "colour_mappings", [event])
    return event


def resolve_item(store: DataStore, item: dict, decision: str, actor: str, value: str | None = None,
                 note: str = "") -> dict:
    """Record a decision on a review item (a row of ``review_items``); returns the resolution
    row. A later resolution of the same item replaces it in ``review_queue`` (both are kept).

    Raises:
        RegistryError: an unknown decision, ``value`` missing for (or given without) the
            ``value`` decision, ``second`` on an item without a second read (OCR), or an
            empty ``actor``.
    """
    if decision not in DECISIONS:
        raise RegistryError(f"decision {decision!r}: choose one of {', '.join(DECISIONS)}")
    if (decision == "value") != (value is not None):
        raise RegistryError("give --value with the 'value' decision, and only then")
    if not actor.strip():
        raise RegistryError("a resolution needs an actor (who decided)")
    if decision == "second" and item.get("second_read") is None:
        raise RegistryError(f"item {item['item_id']} has no second read (a word OCR is not "
                            "sure of): choose first, value or dismiss")
    chosen = {"first": item["first_value"], "second": item["second_value"],
              "value": value, "dismiss": None}[decision]
    now = datetime.now(timezone.utc)
    row = dict(resolution_id=hashlib.sha256(f"{item['item_id']}\x1f{now.isoformat()}".encode())
               .hexdigest()[:16], item_id=item["item_id"], workbook_hash=item["workbook_hash"],
               decision=decision, value=chosen, actor=actor.strip(), note=note, resolved_at=now)
    with _lock(store, "review_resolutions"):
        append_rows(store, "review_resolutions", [row])
    return row
