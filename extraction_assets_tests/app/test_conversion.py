"""A file LibreOffice converts is converted once per ingest: the ``workbook`` asset converts
it and keeps the result in ``<data-dir>/converted``, and ``parsed_sheets`` reads that.

LibreOffice itself is not needed: a stand-in ``soffice`` (``EXTRACTION_ASSETS_SOFFICE``)
answers ``--version`` and writes the converted ``.xlsx`` with openpyxl, logging each call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest

from extraction_assets.app.ingest import ingest_paths
from extraction_assets.core.readers import libreoffice
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.builders import ods_bytes

pytestmark = pytest.mark.integration  # ingests through the graph; runs a stand-in soffice

ROWS = [["Name", "Value"], ["alpha", 1.5], ["beta", 2]]

STAND_IN = '''#!{python}
import sys
from pathlib import Path

args = sys.argv[1:]
if "--version" in args:
    print("LibreOffice 7.6.4.1 stand-in")
    sys.exit(0)
with open({log!r}, "a") as log:
    log.write(args[-1] + "\\n")
import openpyxl

wb = openpyxl.Workbook()
wb.active.title = "Data"
for row in {rows!r}:
    wb.active.append(row)
wb.save(Path(args[args.index("--outdir") + 1]) / (Path(args[-1]).stem + ".xlsx"))
'''


def _stand_in(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "conversions.log"
    script = tmp_path / "soffice"
    script.write_text(STAND_IN.format(python=sys.executable, log=str(log), rows=ROWS))
    script.chmod(0o755)
    return script, log


def test_an_ods_is_converted_once_and_read_as_xlsx(tmp_path, monkeypatch):
    script, log = _stand_in(tmp_path)
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", str(script))
    libreoffice.soffice_version.cache_clear()
    book = tmp_path / "stock.ods"
    book.write_bytes(ods_bytes({"Data": ROWS}))
    (result,) = ingest_paths([book], tmp_path / "data", until="rendered_chunks")
    assert result.status == "success", result.error
    assert log.read_text().count("\n") == 1  # the workbook asset converted, parsed_sheets reused
    kept = DataStore(tmp_path / "data").converted_dir
    assert sorted(p.suffix for p in kept.iterdir()) == [".json", ".xlsx"]
    assert json.loads(next(kept.glob("*.json")).read_text())["version"] == "7.6.4.1"
    con = duckdb.connect(str(tmp_path / "data" / "warehouse.duckdb"), read_only=True)
    records = [json.loads(r) for (r,) in con.execute(
        "SELECT record FROM records ORDER BY row").fetchall()]
    assert records == [{"Name": "alpha", "Value": 1.5}, {"Name": "beta", "Value": 2}]
    (message,) = con.execute("SELECT message FROM extraction_issues "
                             "WHERE code = 'converted'").fetchone()
    assert "converted to xlsx by LibreOffice 7.6.4.1" in message


def test_without_a_folder_to_keep_it_each_call_converts(tmp_path, monkeypatch):
    script, log = _stand_in(tmp_path)
    data = ods_bytes({"Data": ROWS})
    for _ in range(2):
        xlsx, version, _ = libreoffice.convert(data, "ods", str(script))
        assert xlsx.startswith(b"PK") and version == "7.6.4.1"
    assert log.read_text().count("\n") == 2
    kept = tmp_path / "kept"
    first = libreoffice.convert(data, "ods", str(script), keep_in=kept)
    assert libreoffice.convert(data, "ods", str(script), keep_in=kept) == first
    assert log.read_text().count("\n") == 3


DOCUMENT_STAND_IN = '''#!{python}
import shutil
import sys
from pathlib import Path

args = sys.argv[1:]
if "--version" in args:
    print("LibreOffice 7.6.4.1 stand-in")
    sys.exit(0)
target = args[args.index("--convert-to") + 1].split(":")[0]
with open({log!r}, "a") as log:
    log.write(target + " " + args[-1] + "\\n")
shutil.copy({made!r} + "." + target,
            Path(args[args.index("--outdir") + 1]) / (Path(args[-1]).stem + "." + target))
'''


def test_a_doc_and_a_ppt_are_converted_and_read_as_documents(tmp_path, monkeypatch):
    from extraction_assets_tests.documents import docx_bytes, ole2_bytes, pptx_bytes

    made = tmp_path / "made"
    made.with_suffix(".docx").write_bytes(docx_bytes())
    made.with_suffix(".pptx").write_bytes(pptx_bytes())
    log, script = tmp_path / "conversions.log", tmp_path / "soffice"
    script.write_text(DOCUMENT_STAND_IN.format(python=sys.executable, log=str(log),
                                               made=str(made)))
    script.chmod(0o755)
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", str(script))
    libreoffice.soffice_version.cache_clear()
    paths = [tmp_path / "pump_spec.doc", tmp_path / "review.ppt"]
    paths[0].write_bytes(ole2_bytes("WordDocument", b"\xec\xa5"))
    paths[1].write_bytes(ole2_bytes("PowerPoint Document", b""))
    results = ingest_paths(paths, tmp_path / "data", until="rendered_chunks")
    assert [r.status for r in results] == ["success"] * 2, [r.error for r in results]
    assert sorted(line.split()[0] for line in log.read_text().splitlines()) == ["docx", "pptx"]
    con = duckdb.connect(str(tmp_path / "data" / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT filename, format, container FROM workbooks ORDER BY filename"
                       ).fetchall() == [("pump_spec.doc", "doc", "ole2"),
                                        ("review.ppt", "ppt", "ole2")]
    records = {json.loads(r)["Model"] for (r,) in con.execute(
        "SELECT record FROM records r JOIN workbooks w USING (workbook_hash) "
        "WHERE w.filename = 'pump_spec.doc'").fetchall()}
    assert records == {"P-100", "P-200"}
    slides = con.execute("SELECT DISTINCT sheet_name FROM blocks b JOIN workbooks w "
                         "USING (workbook_hash) WHERE w.filename = 'review.ppt' "
                         "ORDER BY 1").fetchall()
    assert slides == [("Slide 1",), ("Slide 2",)]
    messages = [m for (m,) in con.execute("SELECT message FROM extraction_issues "
                                          "WHERE code = 'converted' ORDER BY message"
                                          ).fetchall()]
    assert messages[0].startswith("doc (ole2) converted to docx by LibreOffice 7.6.4.1 in ")
    assert messages[1].startswith("ppt (ole2) converted to pptx by LibreOffice 7.6.4.1 in ")
