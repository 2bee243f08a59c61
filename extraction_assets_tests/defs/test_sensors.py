"""The inbox sensor's file-name filter: which files of the inbox it reads (the suffixes of the
format table, ``core/formats.py``)."""

from __future__ import annotations

from extraction_assets.core.formats import FORMATS, SUFFIXES
from extraction_assets.defs import sensors
from extraction_assets.defs.sensors import inbox_files

#: The suffixes the sensor accepted when they were a literal set in ``defs/sensors.py``, and
#: Word and PowerPoint 97-2003 since LibreOffice converts them.
ACCEPTED = {".xlsx", ".xlsm", ".xltx", ".xltm", ".xls", ".xlsb", ".ods", ".fods", ".csv",
            ".tsv", ".docx", ".docm", ".pptx", ".pptm", ".pdf", ".html", ".htm", ".md",
            ".markdown", ".doc", ".ppt"}


def test_the_inbox_sensor_reads_files_by_the_same_suffixes_as_ever(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    others = [".txt", ".json", ".zip", ".xml", ".rtf", ".odt", ".bak", ".xlsx.bak", ""]
    for suffix in sorted(ACCEPTED) + others:
        (inbox / f"file{suffix}").write_bytes(b"a,b\n1,2\n3,4\n")
    (inbox / "UPPER.XLSX").write_bytes(b"a,b\n1,2\n3,4\n")  # suffixes match in any case
    (inbox / ".hidden.csv").write_bytes(b"a,b\n1,2\n3,4\n")  # hidden names are left out
    read = {p.name for p in inbox_files(inbox)}
    assert read == {f"file{s}" for s in ACCEPTED} | {"UPPER.XLSX"}


def test_the_inbox_sensor_reads_the_suffixes_of_the_format_table(tmp_path):
    assert sensors.SUFFIXES is SUFFIXES  # the table's own set, no copy kept in the sensor
    assert SUFFIXES == ACCEPTED
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for fmt in FORMATS.values():
        for suffix in fmt.suffixes:
            (inbox / f"{fmt.name}{suffix}").write_bytes(b"a,b\n1,2\n3,4\n")
    (inbox / "notes.txt").write_bytes(b"a,b\n1,2\n3,4\n")
    assert {p.suffix for p in inbox_files(inbox)} == SUFFIXES
