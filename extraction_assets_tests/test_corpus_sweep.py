"""Every file of the shared corpus (the robustness tier included) either parses and normalizes,
or fails with a typed :class:`ExtractionError` — no other exception and no hang."""

from __future__ import annotations

import pytest

from extraction_assets.core.errors import ExtractionError

try:
    from extraction_assets_tests.builders import deadline
except ImportError:  # tests run with the tests folder on sys.path
    from builders import deadline
from extraction_assets.stages import StageError, normalize_stage, parse_stage

SECONDS_PER_FILE = 120
H = "0" * 64




def _manifest(corpus_dir):
    lines = (corpus_dir / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]


def test_every_corpus_file_parses_or_fails_typed(corpus_dir):
    outcomes: dict[str, str] = {}
    for entry in _manifest(corpus_dir):
        path = corpus_dir / entry["corpus_path"]
        if not path.exists():
            continue
        with deadline(SECONDS_PER_FILE, entry["corpus_path"]):
            try:
                parsed = parse_stage(H, path.read_bytes()).tables
                normalized = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                             parsed["styles"], parsed["workbook_properties"])
            except StageError as exc:
                assert isinstance(exc.error, ExtractionError)
                assert exc.error.message and "\n" not in exc.error.message
                outcomes[entry["corpus_path"]] = exc.error.code
                continue
        sheets = normalized.tables["sheets"]
        assert sheets.num_rows == parsed["parsed_sheets"].num_rows
        outcomes[entry["corpus_path"]] = "success"
    assert len(outcomes) >= 100
    codes = set(outcomes.values())
    assert codes <= {"success", "not_a_spreadsheet", "unsupported_format", "encrypted",
                     "corrupt_workbook", "hostile_content", "limit_exceeded"}, codes
    # a known file of each kind ends as it should
    expected = {
        "files/poi/poc-xmlbomb.xlsx": "hostile_content",
        "files/unstructured/password_protected.xlsx": "encrypted",
        "files/calamine/too_small.xls": None,  # 68 bytes: typed, whichever code
        "files/closedxml/universal-content-strict.xlsx": "success",
        "files/docling/xlsx_01.xlsx": "success",
    }
    for name, code in expected.items():
        if name in outcomes:
            assert outcomes[name] != "success" if code is None else outcomes[name] == code, name


def test_strict_ooxml_reads_like_transitional(corpus_dir):
    path = corpus_dir / "files/closedxml/universal-content-strict.xlsx"
    if not path.exists():
        pytest.skip("the Strict OOXML sample is not in the corpus")
    cells = parse_stage(H, path.read_bytes()).tables["parsed_cells"].to_pylist()
    assert {(c["sheet_name"], c["ref"], c["value"]) for c in cells} >= {("Sheet1", "B1", "String1")}
