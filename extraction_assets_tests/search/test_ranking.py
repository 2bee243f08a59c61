"""Structure-aware choices over ranked units (extraction_assets.search.ranking), on records as
the LanceDB ``units`` table holds them, and the search measures of tools.retrieval_hitab."""

from __future__ import annotations

import io
import re

from openpyxl import Workbook

from extraction_assets.search.ranking import Terms, best_cell, best_row
from tools.retrieval_hitab import (
    HitabQuestion,
    Result,
    aggregate,
    bm25_ranker,
    line_holds,
    pandas_blocks,
    question_scores,
)

TITLE = "Table 1: Average frequency of fruit consumption, including and excluding juice, 2007"


def _terms() -> Terms:
    # the index's tokenizer lower-cases and stems; plain lower-cased words suffice here
    return Terms(lambda text: [w.rstrip("s") for w in re.findall(r"\w+", text.lower())])


def _record(row: int, path: list[str], values: dict[str, str], title: str = TITLE) -> dict:
    return {"unit_id": f"u{row:03d}", "sheet_name": "Sheet1", "a1_ranges": [f"A{row}:C{row}"],
            "title": title, "row_path": path, "text": "",
            "cells": [{"ref": f"{col}{row}", "header": h, "value": v}
                      for col, (h, v) in zip("BC", values.items()) if v]}


TABLE = [
    _record(7, ["Including juice", "Age group", "12 to 18"], {"2007": "5.6", "Annual change": "-0.07"}),
    _record(8, ["Including juice", "Age group", "19 to 50"], {"2007": "4.9", "Annual change": "-0.04"}),
    _record(12, ["Excluding juice", "Age group", "12 to 18"], {"2007": "4.4", "Annual change": "0.01"}),
    _record(13, ["Excluding juice", "Age group", "19 to 50"], {"2007": "4.0", "Annual change": "0.01"}),
]


def _ask(text: str, records=TABLE, ranked=None) -> dict | None:
    terms = _terms()
    return best_row(terms(text), records, terms, ranked or {})


def test_the_row_whose_labels_the_question_names_answers():
    assert _ask("annual change at ages 19 to 50 excluding juice")["a1_ranges"] == ["A13:C13"]
    assert _ask("annual change at ages 12 to 18")["a1_ranges"] == ["A7:C7"]


def test_twin_rows_of_later_sections_yield_to_the_first_in_reading_order():
    """The question names the row label, not its section: the first twin answers, whatever
    the order of the records or of the units' ranking."""
    ranked = {"u013": 0, "u008": 1}
    assert _ask("annual change at ages 19 to 50", TABLE[::-1], ranked)["a1_ranges"] == \
        ["A8:C8"]


def test_words_of_the_title_weigh_less_than_a_row_label():
    """'juice' is in the title and in every row; 'Including' is in the title too, but the row
    label 'Métis' the question names outweighs a title word in another row's label."""
    records = [_record(5, ["Total population"], {"2007": "100"}, "Population by identity"),
               _record(6, ["Métis"], {"2007": "60"}, "Population by identity")]
    assert _ask("how many Métis were in the population", records)["a1_ranges"] == ["A6:C6"]


def test_a_row_with_a_value_in_the_named_column_outranks_one_without():
    records = [_record(10, ["Invoice 1002"], {"Debit": "500", "Credit": ""}, "Ledger"),
               _record(11, ["Invoice 1002"], {"Debit": "", "Credit": "500"}, "Ledger")]
    assert _ask("credit of invoice 1002", records)["a1_ranges"] == ["A11:C11"]


def test_a_row_label_said_whole_outranks_one_sharing_a_word():
    records = [_record(6, ["Black, white, or red currants"], {"2016": "12"}, "Exports"),
               _record(7, ["Garlic"], {"2016": "583"}, "Exports")]
    assert _ask("garlic or onions exports", records)["a1_ranges"] == ["A7:C7"]


def test_with_no_word_in_any_row_the_units_ranking_decides():
    assert _ask("something else entirely", ranked={"u012": 0, "u007": 3})["a1_ranges"] == \
        ["A12:C12"]
    assert _ask("something else entirely") is None
    assert _ask("anything", records=[]) is None


SEXES = [
    _record(4, ["Sex", "Male"], {"At risk (%)": "29.1", "Count": "(1,200)"}),
    _record(5, ["Sex", "Female"], {"At risk (%)": "37.5", "Count": "1,500"}),
    _record(7, ["Age group", "65 to 74"], {"At risk (%)": "32.0", "Count": "1,700"}),
    _record(8, ["Age group", "75 or older"], {"At risk (%)": "35.9", "Count": "1,000"}),
    _record(10, ["Income", "Lowest"], {"At risk (%)": "41.0", "Count": "900"}),
    _record(11, ["Income", "Highest"], {"At risk (%)": "25.0", "Count": "800"}),
]


def _said(text: str, records=SEXES) -> str | None:
    terms = _terms()
    row = best_row(terms(text), records, terms, {}, text)
    return row and row["a1_ranges"][0]


def test_a_comparison_is_answered_by_the_compared_row_with_the_extreme_value():
    # two row labels said whole: the larger (smaller) number in the column named
    assert _said("which age group was more at risk, 75 or older or 65 to 74?") == "A8:C8"
    assert _said("which age group was less at risk, 75 or older or 65 to 74?") == "A7:C7"
    # the rows under a row group said whole compete; parentheses are a negative number
    assert _said("Which sex was more likely to be at risk?") == "A5:C5"
    assert _said("Which sex has the lowest count?") == "A4:C4"
    # a label made of the comparison's words names no row: the group said whole does
    assert _said("which income has the highest count?") == "A10:C10"
    # no comparison word, or no column named: the rows named alike, in reading order
    assert _said("at risk 75 or older or 65 to 74") == "A7:C7"
    assert _said("which sex was more likely?") == "A4:C4"


def test_a_comparison_of_rows_of_twin_sections_stays_in_the_section_named():
    terms = _terms()
    text = "Excluding juice, which age group has a lower 2007 frequency, 12 to 18 or 19 to 50?"
    row = best_row(terms(text), TABLE, terms, {}, text)
    assert row["a1_ranges"] == ["A13:C13"]  # 4.0 < 4.4, in the Excluding section
    text = "which age group has a higher 2007 frequency, 12 to 18 or 19 to 50?"
    assert best_row(terms(text), TABLE, terms, {}, text)["a1_ranges"] == ["A7:C7"]


def test_the_cell_is_the_one_whose_header_the_question_names():
    terms = _terms()
    record = TABLE[1]
    assert best_cell(terms("annual change at 19 to 50"), record, terms) == {
        "ref": "C8", "header": "Annual change", "value": "-0.04"}
    assert best_cell(terms("19 to 50"), record, terms) is None
    # the words that name the row name no column: "to" is no "confidence interval > to"
    ranged = _record(9, ["Aged 2 to 8"], {"n": "1,511", "95% confidence interval > to": "17.8"})
    assert best_cell(terms("respondents aged 2 to 8"), ranged, terms) is None
    assert best_cell(terms("n of respondents aged 2 to 8"), ranged, terms)["ref"] == "B9"
    # a value the question says whole is the row's key, not the column asked for
    field = _record(4, [], {"FIELD": "Loop Field", "COUNTY": "Gaines"})
    text = "county of Loop Field"
    assert best_cell(terms(text), field, terms, text) == {
        "ref": "C4", "header": "COUNTY", "value": "Gaines"}
    assert best_cell(terms(text), field, terms)["header"] == "FIELD"  # without the text


def test_a_line_holds_a_gold_value_and_its_row_label():
    pairs = [(1091.0, "men"), ("yes", "answer")]
    assert line_holds("| Men | 1,091.0 | 35.3 |", pairs)
    assert not line_holds("| Women | 1,091.0 |", pairs)  # the value, not its label
    assert not line_holds("| Men | 10,910 |", pairs)  # numbers compare as numbers
    assert line_holds("Answer: Yes", pairs)


def test_question_scores_and_their_means_over_the_questions_they_apply_to():
    q = HitabQuestion("1-1", "1.xlsx", "men?", 2, frozenset({8}), ((64.7, "male"),))
    ours = [Result("2.xlsx", ("| Male | 64.7 |",), frozenset({8})),
            Result("1.xlsx", ("| Female | 35.3 |", "| Male | 64.7 |"), frozenset({9}))]
    scores = question_scores(q, ours)
    assert scores == {"table@1": 0.0, "table@5": 1.0, "mrr": 0.5, "row@1": 0.0, "row@5": 0.0,
                      "cell-line@1": 0.0, "cell-line@5": 1.0}
    baseline = question_scores(q, [Result("1.xlsx", ("| Male | 64.7 |",))])
    assert baseline["row@1"] is None and baseline["cell-line@1"] == 1.0  # names no row
    table_only = HitabQuestion("1-2", "1.xlsx", "which?", 0, frozenset(), ())
    means = aggregate([q, table_only], [scores, question_scores(table_only, ours)])
    assert means["all"]["n"] == 2 and means["all"]["table@5"] == 1.0
    assert means["all"]["row@5"] == 0.0 and means["held_apart"]["n"] == 1
    assert means["look"]["cell-line@5"] is None  # no look question has gold values


def test_the_pandas_baseline_reads_rows_under_the_first_row_into_bm25_blocks():
    wb = Workbook()
    ws = wb.active
    ws.append(["Fruit", "Price"])
    for k in range(35):
        ws.append([f"fruit{k}", k])
    buf = io.BytesIO()
    wb.save(buf)
    blocks = pandas_blocks("f.xlsx", buf.getvalue())
    assert [len(b.lines) for b in blocks] == [30, 5]
    assert blocks[0].lines[0] == "Fruit: fruit0; Price: 0" and blocks[0].rows is None
    top = bm25_ranker(blocks)("price of fruit33")
    assert top[0] is blocks[1] and len(top) == 2
