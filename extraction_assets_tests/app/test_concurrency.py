"""B37/B38: 16 partitions materialized 8 at a time in separate processes, all writing to ONE
DuckDB warehouse file and ONE LanceDB table (and one Dagster instance).

Eight worker processes each run :func:`extraction_assets.app.ingest.ingest_paths` on two of the
16 workbooks against the same data dir, so up to 8 Dagster runs (one partition each) write
Parquet, refresh the DuckDB views and commit to LanceDB at the same time. Embeddings come from
a local fake OpenAI-compatible server so the test measures the writers, not a model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from dagster import RunsFilter

from extraction_assets.app.ingest import open_instance
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.fault_helpers import batch_value, fake_embedding_server, write_batch

pytestmark = pytest.mark.slow  # many ingest processes at once

WORKER = Path(__file__).resolve().parent.parent / "fault_helpers.py"
N_FILES, N_WORKERS, N_ROWS = 16, 8, 20
FORBIDDEN = ("Could not set lock", "IO Error", "IOException", "Commit conflict",
             "database is locked", "Traceback")


def _run_workers(data_dir: Path, paths: list[Path], url: str, force: bool) -> list[dict]:
    """Start the 8 workers at once (files k and k+8 each), wait, return all 16 results."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = []
    try:
        for w in range(N_WORKERS):
            cmd = [sys.executable, str(WORKER), "--data-dir", str(data_dir), "--base-url", url,
                   *(["--force"] if force else []), *[str(p) for p in paths[w::N_WORKERS]]]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, env=env, start_new_session=True))
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            for marker in FORBIDDEN:
                assert marker not in out + err, f"worker output has {marker!r}:\n{err[-3000:]}"
            assert proc.returncode == 0, f"worker failed ({proc.returncode}):\n{out}\n{err[-3000:]}"
            results.extend(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _check_store(data_dir: Path, hashes: dict[str, int]) -> dict[str, int]:
    """Assert the B37/B38 expectations; return the row counts checked."""
    store = DataStore(data_dir)
    with duckdb.connect(str(store.warehouse_path), read_only=True) as con:
        workbooks = con.sql("SELECT workbook_hash, sheet_count FROM workbooks").fetchall()
        assert len(workbooks) == N_FILES
        assert {h for h, _ in workbooks} == set(hashes)
        assert all(n == 1 for _, n in workbooks)
        per_hash = {h: (s, t, r) for h, s, t, r in con.sql(
            "SELECT w.workbook_hash, "
            "(SELECT count(*) FROM sheets s WHERE s.workbook_hash = w.workbook_hash), "
            "(SELECT count(*) FROM blocks b WHERE b.workbook_hash = w.workbook_hash "
            " AND b.kind = 'table'), "
            "(SELECT count(*) FROM records r WHERE r.workbook_hash = w.workbook_hash "
            " AND r.role = 'data') FROM workbooks w").fetchall()}
        assert per_hash == {h: (1, 1, N_ROWS) for h in hashes}
        for h, k in hashes.items():
            values = [json.loads(rec)["Value"] for (rec,) in con.execute(
                "SELECT record FROM records WHERE workbook_hash = ? ORDER BY row", [h]
            ).fetchall()]
            assert values == [batch_value(k, r) for r in range(1, N_ROWS + 1)]
        chunks = con.sql("SELECT workbook_hash, chunk_id FROM chunks").fetchall()
        lineage = con.execute("SELECT count(DISTINCT workbook_hash) FROM lineage").fetchone()[0]
        assert lineage == N_FILES
    assert chunks and len(chunks) == len(set(chunks))
    vectors = VectorStore(store.lancedb_uri)
    assert vectors.count(kind="chunk") == len(chunks)
    for h in hashes:
        ids = vectors.unit_ids(h)
        assert len(ids) == len(set(ids)), f"duplicate unit ids in LanceDB for {h}"
        assert sorted(vectors.unit_ids(h, kind="chunk")) == sorted(
            c for wh, c in chunks if wh == h)
    # one Parquet file per partition per table, no stray files read by the views
    for table in ("workbooks", "sheets", "blocks", "records", "chunks"):
        assert len(list((store.parquet_dir / table).glob("*.parquet"))) == N_FILES
    return {"workbooks": len(workbooks), "chunks": len(chunks), "vectors": vectors.count()}


def test_sixteen_partitions_eight_at_a_time(tmp_path: Path) -> None:
    paths = write_batch(tmp_path / "batch", N_FILES, N_ROWS)
    data_dir = tmp_path / "data"
    with fake_embedding_server() as server:
        first = _run_workers(data_dir, paths, server.url, force=False)
        assert [r["status"] for r in first] == ["success"] * N_FILES, first
        hashes = {r["workbook_hash"]: int(Path(r["path"]).stem.split("_")[1]) for r in first}
        assert len(hashes) == N_FILES
        counts = _check_store(data_dir, hashes)

        # re-running all 16 partitions (forced, 8 at a time again) changes no count
        again = _run_workers(data_dir, paths, server.url, force=True)
        assert [r["status"] for r in again] == ["success"] * N_FILES, again
        assert _check_store(data_dir, hashes) == counts


def test_ingest_with_two_jobs_materializes_each_partition_once(tmp_path: Path) -> None:
    from extraction_assets.app.ingest import ingest_paths
    from extraction_assets.defs.resources import EmbedderResource

    paths = write_batch(tmp_path / "batch", 4, N_ROWS)
    not_a_workbook = tmp_path / "batch" / "notes.xlsx"
    not_a_workbook.write_text("just some text\n")
    inputs = [paths[0], not_a_workbook, *paths[1:], paths[2]]
    data_dir = tmp_path / "data"
    seen = []
    with fake_embedding_server() as server:
        embedder = EmbedderResource(provider="openai", model="fake-embed", base_url=server.url,
                                    api_key_env="")
        results = ingest_paths(inputs, data_dir, embedder, jobs=2, on_result=seen.append)
    # one result per input, in input order; progress saw every one of them
    assert [Path(r.path).name for r in results] == [p.name for p in inputs]
    assert sorted(r.path for r in seen) == sorted(r.path for r in results)
    assert [r.status for r in results] == ["success", "failed", "success", "success", "success",
                                           "duplicate"]
    assert "not_a_spreadsheet" in results[1].error
    hashes = {r.workbook_hash: int(Path(r.path).stem.split("_")[1])
              for r in results if r.status == "success"}
    assert len(hashes) == 4 and all(r.run_id for r in results if r.status != "duplicate")
    # each batch's run ran in a step process of one ingest_batches run, whose steps Dagster's
    # multiprocess executor started
    with open_instance(DataStore(data_dir)) as instance:
        batch_runs = {r.run_id for r in results if r.run_id}
        pids = {e.message for run_id in batch_runs for e in instance.all_logs(run_id)
                if e.message.startswith("Executing steps in process")}
        [outer] = instance.get_runs(filters=RunsFilter(job_name="ingest_batches"))
        engine = [e.message for e in instance.all_logs(outer.run_id)]
    assert pids and f"(pid: {os.getpid()})" not in " ".join(pids)
    assert any("multiprocess executor" in message for message in engine)
    store = DataStore(data_dir)
    with duckdb.connect(str(store.warehouse_path), read_only=True) as con:
        for h, k in hashes.items():
            values = [json.loads(rec)["Value"] for (rec,) in con.execute(
                "SELECT record FROM records WHERE workbook_hash = ? ORDER BY row", [h]).fetchall()]
            assert values == [batch_value(k, r) for r in range(1, N_ROWS + 1)]
            assets = [a for (a,) in con.execute(
                "SELECT asset FROM lineage WHERE workbook_hash = ? ORDER BY materialized_at",
                [h]).fetchall()]
            assert assets == ["workbook", "parsed_sheets", "normalized_grids", "segmented_blocks",
                              "rendered_chunks", "chunk_embeddings"]
        n_chunks = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert VectorStore(store.lancedb_uri).count(kind="chunk") == n_chunks > 0


def test_cli_ingest_with_two_jobs_prints_every_file_and_exits_cleanly(tmp_path: Path) -> None:
    """The ``extraction-assets`` entry point in a fresh interpreter, as a user runs it: with
    ``--jobs 2`` the files are materialized by Dagster runs whose steps run in processes of
    their own; a second ingest where every file is already up to date reports them unchanged.
    Every file's line reaches stdout although the command leaves without the interpreter's
    final garbage collection (``gc.freeze`` on the way out)."""
    paths = write_batch(tmp_path / "batch", 3, N_ROWS)
    command = [sys.executable, "-m", "extraction_assets.app.cli", "ingest", "--data-dir",
               str(tmp_path / "data"), "--jobs", "2", "--until", "rendered_chunks",
               *map(str, paths)]

    def lines() -> list[list[str]]:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        return sorted(line.split()[:2] for line in proc.stdout.splitlines() if line.strip())

    names = sorted(str(p) for p in paths)
    assert lines() == [["success", name] for name in names]
    assert lines() == [["unchanged", name] for name in names]
    with duckdb.connect(str(DataStore(tmp_path / "data").warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT workbook_hash), count(*) FROM records"
                           ).fetchone() == (3, 3 * N_ROWS)


def test_import_for_runs_freezes_the_imports_and_restores_the_collector() -> None:
    """In a fresh interpreter, :func:`import_for_runs` imports every module a run needs and
    freezes their objects; the collector is left as it was found (on, or off)."""
    script = (
        "import gc, sys\n"
        "from extraction_assets.app.cli import RUN_MODULES, import_for_runs\n"
        "was_on = sys.argv[1] == 'on'\n"
        "gc.enable() if was_on else gc.disable()\n"
        "import_for_runs()\n"
        "print(gc.isenabled(), gc.get_freeze_count(), all(m in sys.modules for m in RUN_MODULES))\n"
    )
    for state in ("on", "off"):
        proc = subprocess.run([sys.executable, "-c", script, state], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        enabled, frozen, imported = proc.stdout.split()
        assert enabled == str(state == "on")
        assert int(frozen) > 100_000
        assert imported == "True"
