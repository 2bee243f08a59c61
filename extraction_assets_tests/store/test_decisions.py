"""The append-only registries: colour mapping versions (draft, confirm, supersede, reject,
never delete) and review resolutions, and their views."""

from __future__ import annotations

import pytest

from extraction_assets.store.decisions import (
    RegistryError,
    active_tags,
    decide_mapping,
    mapping_versions,
    propose_drafts,
    read_rows,
    resolve_item,
    undecided,
)
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import connect, refresh_views

SCOPE = "/books/invoices.xlsx"


def legend(rgb: str, label: str, key: str = "status") -> dict:
    return dict(workbook_hash="ab" * 32, sheet_name="Invoices", fill_rgb=rgb, key=key,
                label=label, tag=f"{key}: {label}", swatch_ref="F3", label_ref="G3")


def test_drafts_confirmations_and_superseding(tmp_path):
    store = DataStore(tmp_path)
    drafts = propose_drafts(store, SCOPE, [legend("FF0000", "overdue"), legend("00B050", "paid")])
    assert [(d["fill_rgb"], d["version"], d["status"], d["actor"]) for d in drafts] == [
        ("FF0000", 1, "draft", "extraction-assets"), ("00B050", 1, "draft", "extraction-assets")]
    assert active_tags(store, SCOPE) == {}  # drafts tag nothing
    assert [d["tag"] for d in undecided(store, SCOPE)] == ["status: paid", "status: overdue"]
    assert propose_drafts(store, SCOPE, [legend("FF0000", "overdue")]) == []  # seen already

    red = drafts[0]["mapping_id"]
    decide_mapping(store, red[:8], "active", "alice", "legend checked")
    assert active_tags(store, SCOPE) == {"FF0000": "status: overdue"}
    with pytest.raises(RegistryError, match="already active"):
        decide_mapping(store, red, "active", "bob")

    # the legend's label changes: a new draft; the confirmed version keeps tagging until then
    (v2,) = propose_drafts(store, SCOPE, [legend("FF0000", "late")])
    assert v2["version"] == 2 and active_tags(store, SCOPE) == {"FF0000": "status: overdue"}
    decide_mapping(store, v2["mapping_id"], "active", "bob", "renamed in the sheet")
    assert active_tags(store, SCOPE) == {"FF0000": "status: late"}
    versions = {(v["fill_rgb"], v["version"]): v for v in mapping_versions(store)}
    assert versions[("FF0000", 1)]["status"] == "active" and versions[("FF0000", 1)]["superseded"]
    assert not versions[("FF0000", 2)]["superseded"]

    decide_mapping(store, drafts[1]["mapping_id"], "rejected", "alice", "not a status")
    assert active_tags(store, SCOPE) == {"FF0000": "status: late"}
    assert active_tags(store, "/other.xlsx") == {}
    # every event is kept: 3 drafts and 3 decisions
    events = read_rows(store, "colour_mappings")
    assert [(e["version"], e["status"], e["actor"]) for e in events] == [
        (1, "draft", "extraction-assets"), (1, "draft", "extraction-assets"),
        (1, "active", "alice"), (2, "draft", "extraction-assets"), (2, "active", "bob"),
        (1, "rejected", "alice")]

    refresh_views(store)
    with connect(store) as con:
        rows = con.execute("SELECT fill_rgb, version, status, superseded, actor, note "
                           "FROM colour_mappings ORDER BY fill_rgb, version").fetchall()
        assert rows == [("00B050", 1, "rejected", False, "alice", "not a status"),
                        ("FF0000", 1, "active", True, "alice", "legend checked"),
                        ("FF0000", 2, "active", False, "bob", "renamed in the sheet")]
        assert con.execute("SELECT count(*) FROM colour_mapping_events").fetchone() == (6,)


def test_decisions_need_an_actor_and_a_known_id(tmp_path):
    store = DataStore(tmp_path)
    (draft,) = propose_drafts(store, SCOPE, [legend("FF0000", "overdue")])
    with pytest.raises(RegistryError, match="actor"):
        decide_mapping(store, draft["mapping_id"], "active", " ")
    with pytest.raises(RegistryError, match="0 mapping versions"):
        decide_mapping(store, "ffffffff", "active", "alice")
    with pytest.raises(RegistryError, match="at least 6"):
        decide_mapping(store, draft["mapping_id"][:3], "active", "alice")


def test_resolutions_are_appended_never_overwritten(tmp_path):
    store = DataStore(tmp_path)
    item = dict(item_id="0123456789abcdef", workbook_hash="cd" * 32,
                first_read="extraction-assets", first_value="10", second_read="python-calamine",
                second_value="99")
    with pytest.raises(RegistryError, match="--value"):
        resolve_item(store, item, "value", "alice")
    first = resolve_item(store, item, "second", "alice", note="calamine keeps the last copy")
    assert first["value"] == "99"
    resolve_item(store, item, "value", "bob", "10")
    rows = read_rows(store, "review_resolutions")
    assert [(r["decision"], r["value"], r["actor"]) for r in rows] == [
        ("second", "99", "alice"), ("value", "10", "bob")]
    refresh_views(store)
    with connect(store) as con:  # no review_items yet: the queue is empty, and typed
        assert con.execute("SELECT count(*) FROM review_queue").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM review_resolutions").fetchone() == (2,)
