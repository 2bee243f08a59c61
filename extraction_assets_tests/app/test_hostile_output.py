"""Hostile input, third pass (issue #34), what the outputs show: an unreadable argument of
``ingest`` is a failed file of the batch, not a usage error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.bench.hostile import cell, rows_xml, workbook, worksheet

REPO = Path(__file__).resolve().parents[2]


# -- the command ---------------------------------------------------------------------------------
def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _unreadable(tmp_path: Path) -> Path:
    """A file this process cannot read: mode 000 for a user, and for root (whom no mode stops)
    a symlink to a write-only kernel file that refuses to be opened for reading."""
    if os.geteuid() != 0:
        path = tmp_path / "noperm.xlsx"
        path.write_bytes(b"PK")
        path.chmod(0)
        return path
    target = Path("/proc/sys/vm/drop_caches")
    try:
        target.open("rb").close()
    except PermissionError:
        path = tmp_path / "noperm.xlsx"
        path.symlink_to(target)
        return path
    pytest.skip("no file that root cannot read on this machine")


def test_an_unreadable_argument_is_a_failed_file_and_the_others_are_ingested(tmp_path):
    noperm = _unreadable(tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    broken = tmp_path / "broken.xlsx"
    broken.symlink_to(tmp_path / "gone.xlsx")
    eio = tmp_path / "eio.xlsx"
    eio.symlink_to("/proc/self/mem")  # the reading process's memory: EIO at offset 0
    other = tmp_path / "other.xlsx"
    other.write_bytes(workbook([("S", worksheet(rows_xml({
        1: [cell("A1", "Item"), cell("B1", "Value")],
        **{r: [cell(f"A{r}", f"item {r}"), cell(f"B{r}", None, value=str(r))]
           for r in range(2, 6)}})))]))
    out = run_cli("ingest", str(noperm), str(folder), str(broken), str(eio), str(other),
                  "--data-dir", str(tmp_path / "data"), "--until", "rendered_chunks")
    assert out.returncode == 1, out.stdout + out.stderr
    lines = {line.split()[1]: line for line in out.stdout.splitlines()}
    assert lines[str(other)].startswith("success"), out.stdout
    assert lines[str(noperm)].startswith("failed") and "Permission denied" in lines[str(noperm)]
    assert lines[str(broken)].startswith("failed") and "No such file" in lines[str(broken)]
    assert lines[str(eio)].startswith("failed") and "Input/output error" in lines[str(eio)]
    assert lines[str(folder)].startswith("failed") and f"{folder}/*.xlsx" in lines[str(folder)]
