"""How ``ingest`` cuts files into batches (one Dagster run each): consecutive partition keys,
the caps, and with ``--jobs N`` shares of about equal bytes with no short batch left over."""

from __future__ import annotations

from extraction_assets.app.ingest import _Item, plan_batches

ASSETS = ("workbook", "parsed_sheets")


def _items(sizes: list[int], assets=ASSETS) -> tuple[list[_Item], dict[str, int]]:
    items = [_Item(k, f"f{k}.xlsx", f"{k:064x}", assets, size) for k, size in enumerate(sizes)]
    return items, {item.workbook_hash: item.k for item in items}


def _paths(batches) -> list[list[str]]:
    return [[item.path for item in batch] for batch in batches]


def test_jobs_get_equal_shares_and_no_short_batch_is_left_alone():
    # eight files growing a little: a greedy cut at half the bytes left the last one alone
    items, order = _items([295_866 + 60 * k for k in range(8)])
    assert _paths(plan_batches(items, order, jobs=2)) == [
        [f"f{k}.xlsx" for k in range(4)], [f"f{k}.xlsx" for k in range(4, 8)]]
    assert len(plan_batches(items, order, jobs=1)) == 1
    assert [len(b) for b in plan_batches(items, order, jobs=3)] == [3, 3, 2]


def test_caps_and_gaps_in_the_keys_cut_batches():
    items, order = _items([10] * 5)
    assert [len(b) for b in plan_batches(items, order, batch_files=2)] == [2, 2, 1]
    assert [len(b) for b in plan_batches(items, order, batch_bytes=25)] == [2, 2, 1]
    order[items[3].workbook_hash] = 10  # f3 is not next to f2 in the partitions' order
    assert _paths(plan_batches(items, order)) == [["f0.xlsx", "f1.xlsx", "f2.xlsx"],
                                                  ["f4.xlsx"], ["f3.xlsx"]]
