"""Password-protected workbooks: ``encrypted`` without a password, read with one (B31)."""

from __future__ import annotations

import io
import json

import pytest
from msoffcrypto.format.ooxml import OOXMLFile
from openpyxl import Workbook

from extraction_assets.app.ingest import ingest_paths
from extraction_assets.core.errors import EncryptedWorkbookError
from extraction_assets.core.open import open_workbook


def _protected(password: str) -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "Secret"
    ws.append(["Account", "Balance"])
    ws.append(["Reserve", 42])
    plain = io.BytesIO()
    wb.save(plain)
    plain.seek(0)
    out = io.BytesIO()
    OOXMLFile(plain).encrypt(password, out)
    return out.getvalue()


def test_encrypted_workbook_needs_the_right_password():
    data = _protected("test-password")
    with pytest.raises(EncryptedWorkbookError, match="password required"):
        open_workbook(data)
    with pytest.raises(EncryptedWorkbookError, match="none of the 1 configured passwords"):
        open_workbook(data, passwords=["wrong"])
    workbook = open_workbook(data, passwords=["wrong", "test-password"])
    (sheet,) = list(workbook.iter_sheets())
    assert sheet.info.name == "Secret"
    assert sheet.column("value")[:4] == ["Account", "Balance", "Reserve", "42"]


@pytest.mark.integration
def test_ingest_with_and_without_password(tmp_path):
    path = tmp_path / "secret.xlsx"
    path.write_bytes(_protected("test-password"))
    locked = ingest_paths([path], tmp_path / "a")
    assert locked[0].status == "failed" and "encrypted" in locked[0].error
    opened = ingest_paths([path], tmp_path / "b", until="rendered_chunks",
                          passwords=["test-password"])
    assert opened[0].status == "success", opened[0].error
    import duckdb

    with duckdb.connect(str(tmp_path / "b" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT is_encrypted, format FROM workbooks").fetchall() == [
            (True, "encrypted-ooxml")]
        (record,), = con.execute("SELECT record FROM records").fetchall()
        assert json.loads(record) == {"Account": "Reserve", "Balance": 42}


def test_xor_obfuscated_xls_opens_with_its_password(corpus_dir):
    path = corpus_dir / "files" / "poi" / "xor-encryption-abc.xls"
    if not path.exists():
        pytest.skip("xor-encryption-abc.xls is not in the corpus")
    with pytest.raises(EncryptedWorkbookError):
        open_workbook(path.read_bytes())
    (sheet,) = list(open_workbook(path.read_bytes(), passwords=["abc"]).iter_sheets())
    assert sheet.info.name == "Sheet1" and sheet.column("value")[:3] == ["1", "2", "3"]
