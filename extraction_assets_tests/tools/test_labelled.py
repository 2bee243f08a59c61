"""Scoring against the human-labelled real spreadsheets (``tools.labelled``): the
measures on hand-made truth, and the detector's figures on the labelled development set."""

from __future__ import annotations

import pytest

from tools.labelled import (
    eob,
    evaluate_labelled,
    failures,
    format_scores,
    match,
    score_tables,
)


def table(rng: str, sheet: str = "S", doc: str = "a.xlsx", **rows) -> dict:
    return {"doc": doc, "sheet": sheet, "range": rng, "kind": "table",
            **{k: frozenset(v) for k, v in rows.items()}}


def test_eob_allows_two_rows_or_columns_on_every_edge():
    assert eob("B2:G19", "B3:G19") and eob("A1:K8", "C3:K10")
    assert not eob("A1:K8", "A1:K11") and not eob("A20:G283", "A20:G157")


def test_matching_is_one_to_one_greedy_by_iou():
    truth = [table("A1:D10"), table("A12:D20")]
    preds = [table("A1:D20"), table("A1:D9"), table("A13:D20")]
    assert match(preds, truth, "iou") == [(0, 1), (1, 2)]
    assert match(preds, truth, "exact") == []
    assert sorted(match(preds, truth, "eob")) == [(0, 1), (1, 2)]


def test_scores_count_sheets_apart_and_recall_only_sets_have_no_precision():
    truth = [table("A1:D10"), table("A1:D10", sheet="T")]
    preds = [table("A1:D10"), table("F1:G5"), table("A1:D10", sheet="U")]
    s = score_tables(preds, truth)
    assert (s["n_truth"], s["n_pred"]) == (2, 3)
    assert s["exact"] == {"tp": 1, "precision": 1 / 3, "recall": 0.5, "f1": 0.4}
    assert score_tables(preds, truth, recall_only=True)["iou"] == {"tp": 1, "recall": 0.5}


def test_header_total_and_group_rows_are_scored_on_matched_tables():
    truth = [table("A1:D10", header_rows={1, 2}, total_rows={10}, group_rows={3}),
             table("A20:D30", header_rows={20}, total_rows=set(), group_rows=set())]
    preds = [table("A1:D10", header_rows={1}, total_rows={10}, group_rows={3}),
             table("A20:D30", header_rows={20}, total_rows={30}, group_rows=set())]
    s = score_tables(preds, truth)
    assert (s["header_rows"]["correct"], s["header_rows"]["tables"]) == (1, 2)
    assert s["header_rows"]["rows"] == {"tp": 2, "precision": 1.0, "recall": 2 / 3, "f1": 0.8}
    assert s["total_rows"]["accuracy"] == 0.5 and s["group_rows"]["accuracy"] == 1.0
    kinds = sorted(f["what"] for f in failures(preds, truth))
    assert kinds == ["header_rows [1, 2] vs [1]", "total_rows [] vs [30]"]
    assert format_scores("x", s)[2] == "  tables IoU>=0.8   P 1.000 R 1.000 F1 1.000"


def test_the_development_sets_reach_the_targets(labelled_dir):
    """The figures the README quotes, on the labelled development half (the other half is kept
    apart): DECO tables IoU >= 0.8 and EoB-2 F1 >= 0.85, header rows >= 0.90; Tasi recall
    (IoU >= 0.8) >= 0.85."""
    res = evaluate_labelled(labelled_dir)
    deco, tasi = res["deco"]["scores"], res["tasi"]["scores"]
    assert (res["deco"]["files"], res["tasi"]["files"]) == (24, 25)
    assert not res["deco"]["errors"] and not res["tasi"]["errors"]
    assert deco["iou"]["f1"] >= 0.85, format_scores("deco", deco)
    assert deco["eob"]["f1"] >= 0.85, format_scores("deco", deco)
    assert deco["header_rows"]["accuracy"] >= 0.90, format_scores("deco", deco)
    assert deco["total_rows"]["accuracy"] >= 0.85, format_scores("deco", deco)
    assert tasi["iou"]["recall"] >= 0.85, format_scores("tasi", tasi)


@pytest.mark.parametrize("name", ["deco", "tasi"])
def test_no_value_lost_on_the_labelled_sets(labelled_dir, name):
    """Every value of the labelled workbooks reaches records, headers or block text."""
    from extraction_assets.pipeline import run_pipeline
    from extraction_assets.search.embedding import LocalEmbedder

    embedder = LocalEmbedder()
    lost = []
    for path in sorted((labelled_dir / name / "files").glob("*.xlsx")):
        tables = run_pipeline(path.read_bytes(), count_tokens=embedder.count_tokens,
                              count_tokens_batch=embedder.count_tokens_batch)
        lost += [(path.name, i["sheet_name"], i["ref"], i["message"])
                 for i in tables["extraction_issues"].to_pylist()
                 if i["code"] == "value_not_in_output"]
    assert lost == []
