"""Crash safety: a real ``extraction-assets ingest`` of a 200k-cell workbook is SIGKILLed twice
(once while the extraction stages write Parquet, once while ``chunk_embeddings`` is embedding),
then re-run to completion.

After each kill every visible ``*.parquet`` opens, temp files of killed writers are never read
by the DuckDB views, and the views answer; after the final run there is exactly one Parquet
file per table for the partition and LanceDB holds one vector per chunk (no duplicates).
Embeddings come from a local fake OpenAI-compatible server that can hold requests, so the
second kill lands inside ``chunk_embeddings`` deterministically.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from dagster import DagsterRunStatus

from extraction_assets.app.ingest import open_instance
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore, sha256_file
from extraction_assets.store.warehouse import refresh_views, view_sql
from extraction_assets_tests.fault_helpers import fake_embedding_server
from tools.bench import generate_workbook

pytestmark = pytest.mark.slow  # kills and interrupts ingest processes

ROWS = 20_000  # x 10 columns = 200k cells


def _start(big: Path, data_dir: Path, url: str, log: Path) -> subprocess.Popen:
    """The CLI ingest in its own process group, output to ``log``."""
    cmd = [sys.executable, "-m", "extraction_assets.app.cli", "ingest", str(big),
           "--data-dir", str(data_dir), "--provider", "openai", "--model", "fake-embed",
           "--base-url", url]
    env = dict(os.environ, OPENAI_API_KEY="test-key", PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def _wait_for(proc: subprocess.Popen, condition, what: str, log: Path,
              timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"ingest ended ({proc.returncode}) before {what}:\n"
                                 f"{log.read_text()[-3000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _check_visible_state(store: DataStore) -> None:
    """Every ``*.parquet`` opens; with garbage temp files planted next to them (as a writer
    killed mid-write leaves), the refreshed views answer and count exactly the files' rows."""
    files = sorted(store.parquet_dir.rglob("*.parquet"))
    rows = {path: pq.read_table(path).num_rows for path in files}  # raises on a torn file
    for folder in {path.parent for path in files}:
        tmp = folder / f".{files[0].name}.killed.tmp"
        tmp.write_bytes(b"PAR1 torn write" * 100)
    # a table folder with only a temp file (its first writer was killed) reads as empty
    (store.parquet_dir / "rich_text").mkdir(parents=True, exist_ok=True)
    (store.parquet_dir / "rich_text" / f".{'0' * 64}.parquet.killed.tmp").write_bytes(b"PAR1")
    refresh_views(store)
    with duckdb.connect(str(store.warehouse_path), read_only=True) as con:
        for view in view_sql(store):
            con.execute(f"SELECT count(*) FROM {view}").fetchall()
        for view in ("workbooks", "sheets", "cells", "blocks", "records", "chunks"):
            path = store.parquet_dir / view
            expected = sum(n for p, n in rows.items() if p.parent == path)
            got = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
            assert got == expected, (view, got, expected)


def test_killed_ingest_recovers_without_torn_or_duplicate_rows(tmp_path: Path) -> None:
    big = generate_workbook(tmp_path / "big.xlsx", ROWS)
    h = sha256_file(big)
    data_dir = tmp_path / "data"
    store = DataStore(data_dir)
    parquet = store.parquet_dir
    with fake_embedding_server() as server:
        # 1. kill while the extraction stages write: some Parquet exists, not all
        log = tmp_path / "ingest.log"
        proc = _start(big, data_dir, server.url, log)
        try:
            # the moment a big table is being written (its temp file exists), or at the latest
            # once normalized_grids has written ``cells``
            _wait_for(proc, lambda: any((parquet / "parsed_cells").glob(".*.tmp"))
                      or any((parquet / "cells").glob(".*.tmp"))
                      or (parquet / "cells" / f"{h}.parquet").exists(), "extraction output", log)
        finally:
            _kill(proc)
        assert proc.returncode == -signal.SIGKILL
        assert (parquet / "workbooks" / f"{h}.parquet").exists()
        assert not (parquet / "chunks" / f"{h}.parquet").exists()
        with open_instance(store) as instance:  # the killed run is left "in progress"
            assert any(run.status.value == "STARTED" for run in instance.get_runs())
        _check_visible_state(store)

        # 2. re-run; kill it while chunk_embeddings waits for the embedding server
        server.open.clear()
        proc = _start(big, data_dir, server.url, log)
        try:
            _wait_for(proc, server.held.is_set, "an embedding request", log)
        finally:
            _kill(proc)
            server.open.set()
        assert (parquet / "chunks" / f"{h}.parquet").exists()
        assert VectorStore(store.lancedb_uri).count() == 0
        _check_visible_state(store)

        # 3. re-run to completion
        proc = _start(big, data_dir, server.url, log)
        try:
            proc.wait(timeout=300)
        finally:
            _kill(proc)
        out = log.read_text()
        assert proc.returncode == 0, out[-3000:]
        assert "success" in out

    # exactly one Parquet file per table (and per asset for issues) for the one partition
    for folder in {p.parent for p in parquet.rglob("*.parquet")}:
        assert [p.name for p in folder.glob("*.parquet")] == [f"{h}.parquet"], folder
    chunk_ids = pq.read_table(parquet / "chunks" / f"{h}.parquet").column("chunk_id").to_pylist()
    assert chunk_ids and len(chunk_ids) == len(set(chunk_ids))
    with duckdb.connect(str(store.warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM workbooks").fetchone()[0] == 1
        n_records = pq.read_table(parquet / "records" / f"{h}.parquet").num_rows
        assert n_records >= ROWS
        assert con.execute("SELECT count(*), count(DISTINCT (sheet_name, row)) FROM records "
                           "WHERE role = 'data'").fetchone() == (ROWS, ROWS)
        assert con.execute("SELECT count(*) FROM records").fetchone()[0] == n_records
        assert con.execute("SELECT count(*), count(DISTINCT chunk_id) FROM chunks").fetchone() \
            == (len(chunk_ids), len(chunk_ids))
        assets = con.execute("SELECT DISTINCT asset FROM lineage").fetchall()
        assert len(assets) == 6
    vectors = VectorStore(store.lancedb_uri)
    assert vectors.count() == len(chunk_ids) + n_records
    assert sorted(vectors.unit_ids(h, kind="chunk")) == sorted(chunk_ids)
    stored = vectors.unit_ids(h)
    assert len(stored) == len(set(stored)) == len(chunk_ids) + n_records


def test_ctrl_c_stops_the_ingest_and_the_next_one_finishes_it(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) during ``ingest --jobs 2``
    stops the runs in progress, starts no further run and exits 130 with one line; ingesting
    the same files again finishes exactly the files that were not."""
    paths = []
    for k in range(8):
        paths.append(tmp_path / f"orders{k}.xlsx")
        generate_workbook(paths[-1], 3_000 + k)
    data_dir, log = tmp_path / "data", tmp_path / "ingest.log"
    cmd = [sys.executable, "-m", "extraction_assets.app.cli", "ingest", "--data-dir", str(data_dir),
           "--jobs", "2", "--batch-files", "1", "--until", "rendered_chunks", *map(str, paths)]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                start_new_session=True)
    try:
        _wait_for(proc, lambda: "success" in log.read_text(), "the first file", log)
        os.killpg(proc.pid, signal.SIGINT)
        sent = time.time()
        assert proc.wait(timeout=120) == 130, log.read_text()
    finally:
        _kill(proc)
    with open_instance(DataStore(data_dir)) as instance:  # no run started after the Ctrl-C
        records = instance.get_run_records()
    assert any(r.dagster_run.status == DagsterRunStatus.SUCCESS for r in records)
    # but the run of a step process the executor was launching as the signal came (its start
    # takes ~2 s, forked from Dagster's forkserver) may still begin: no later one
    assert max(r.start_time for r in records if r.start_time) < sent + 5
    lines = log.read_text().splitlines()
    finished = {line.split()[1] for line in lines if line.startswith("success")}
    stopped = {line.split()[1] for line in lines if line.startswith("interrupted /")}
    summary = [line for line in lines if line.startswith("interrupted:")]
    unfinished = len(paths) - len(finished)
    assert finished and unfinished > len(stopped)  # some files were never started
    assert summary == [f"interrupted: {unfinished} of 8 files not finished; run the same "
                       "command again to finish them"]
    assert lines.count("stopping: the runs in progress end their current step; no further "
                       "file is started") == 1  # said as soon as the run got the Ctrl-C
    assert not [line for line in lines if line.startswith("failed")]

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    status = {line.split()[1]: line.split()[0] for line in again.stdout.splitlines()}
    assert set(status) == {str(p) for p in paths}
    for path, state in status.items():
        if path in finished:
            assert state == "unchanged"
        elif path in stopped:  # the interrupt may have landed after its last asset
            assert state in ("success", "unchanged")
        else:
            assert state == "success"
    assert all("chunks=0" not in line for line in again.stdout.splitlines())
