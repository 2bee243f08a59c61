"""Display text against Excel's own CSV exports of the corpus (tools.display_check).

Skips when the shared corpus is absent (``$EXTRACTION_ASSETS_CORPUS``, default
``../shared/corpus``). The thresholds sit just under what the formatter reached (99.98 % of
111,690 comparable cells, every remaining mismatch a formula cell whose value Excel recomputed),
so a regression in number formatting fails here.
"""

from __future__ import annotations

import pytest

from tools import display_check
from tools.display_check import GROUNDTRUTH, decode_csv, read_csv, run

pytestmark = pytest.mark.slow  # formats every cell of the corpus against its CSV exports

MIN_MATCH_RATE = 0.999
MAX_NON_FORMULA_MISMATCHES = 5


@pytest.fixture(scope="module")
def report(corpus_dir):
    if not (corpus_dir / GROUNDTRUTH).is_dir():
        pytest.skip("no Excel CSV ground truth in the corpus")
    return run(corpus_dir)


def test_match_rate(report):
    assert report.compared > 100_000
    assert report.match_rate >= MIN_MATCH_RATE, {k: len(v) for k, v in report.by_kind().items()}


def test_only_recomputed_formulas_mismatch(report):
    kinds = report.by_kind()
    others = {k: [(m.file, m.sheet, m.ref, m.code, m.expected, m.ours) for m in v[:3]]
              for k, v in kinds.items() if not k.startswith("formula: ")}
    assert sum(len(kinds[k]) for k in others) <= MAX_NON_FORMULA_MISMATCHES, others


def test_non_ooxml_workbooks_are_listed_as_skipped(report):
    assert report.skipped
    assert all(name.endswith(".csv") for name, _ in report.skipped)
    assert any(".xls." in name and "not OOXML" in reason for name, reason in report.skipped)


def test_csv_decoding_and_quirks(tmp_path):
    # cp1252, not Mac Roman: 0x80 is the euro sign, 0x93/0x94 curly quotes
    assert decode_csv(b"\x80 \x93x\x94") == "\u20ac \u201cx\u201d"
    assert decode_csv("é".encode()) == "é"
    assert decode_csv(b"\x81") == "\x81"  # undefined in cp1252: read as Latin-1
    path = tmp_path / "s.csv"
    path.write_bytes(b'a,,"b\rc"\r\n,"1,234"\r\n')
    assert read_csv(path) == {(1, 1): "a", (1, 3): "b\rc", (2, 2): "1,234"}
    assert display_check._same("b\rc", "b\nc")
    assert display_check._same("#" * 255, "#######")
    assert display_check._same("12,346 ", "12,346")
    assert not display_check._same("", "x")
