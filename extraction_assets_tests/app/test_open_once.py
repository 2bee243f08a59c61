"""Each file is opened once per ingest: the ``workbook`` asset opens it and hands the opened
workbook to ``parsed_sheets`` through the IO manager, for a run of one file and for a batch."""

from __future__ import annotations

import pytest

import extraction_assets.pipeline.stages as stages
from extraction_assets.app.ingest import ingest_paths
from tools.bench.workbooks import generate_workbook

pytestmark = pytest.mark.integration  # ingests through the asset graph


@pytest.mark.parametrize("batch_files", [1, 3])
def test_each_file_is_opened_once(tmp_path, monkeypatch, batch_files):
    paths = [generate_workbook(tmp_path / f"orders_{n}.xlsx", 20, title=f"Orders {n}")
             for n in range(3)]
    opened: list[int] = []
    real = stages.open_workbook

    def counting(data, *args, **kwargs):
        opened.append(len(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(stages, "open_workbook", counting)
    results = ingest_paths(paths, tmp_path / "data", until="rendered_chunks",
                           batch_files=batch_files)
    assert [r.status for r in results] == ["success"] * 3
    assert [r.counts["records"] for r in results] == [20] * 3
    assert sorted(opened) == sorted(p.stat().st_size for p in paths)
