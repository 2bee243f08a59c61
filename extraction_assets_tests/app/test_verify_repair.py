"""A data dir that checks and repairs itself (issue #34): ``verify`` names every damaged
Parquet file, LanceDB data file and stored file; ``refresh``, ``ingest`` and the DuckDB views
skip a damaged partition with a typed ``damaged`` result instead of failing every file; a lost
LanceDB table is rebuilt by ``refresh`` and ``repair``; ``repair`` rebuilds exactly what was
damaged, byte for byte, from the stored bytes (or the source path), and says when it cannot.

One ingest of three small workbooks is copied for each test; the damage is random bytes
written over a file, as a disk or a careless copy leaves it."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import lancedb
import pytest

from extraction_assets.app.ingest import ingest_paths, refresh_stale
from extraction_assets.app.verify import repair, verify
from extraction_assets.search.vectors import TABLE_NAME
from extraction_assets.store.integrity import summarize
from extraction_assets.store.storage import DamagedFileError, DataStore
from extraction_assets.store.warehouse import CONTRACT_VIEWS, connect, refresh_views
from extraction_assets_tests.fault_helpers import write_batch

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, list[str]]:
    """A data dir with three workbooks ingested through the asset graph, and their keys in
    the order of the files."""
    base = tmp_path_factory.mktemp("pristine")
    paths = write_batch(base / "in", n_files=3, n_rows=12)
    results = ingest_paths(paths, base / "data")
    assert [r.status for r in results] == ["success"] * 3
    return base / "data", [r.workbook_hash for r in results]


@pytest.fixture
def data(pristine, tmp_path) -> Path:
    """A copy of the pristine data dir to damage."""
    return Path(shutil.copytree(pristine[0], tmp_path / "data"))


def damage(path: Path) -> None:
    """Write random bytes (seeded: the same every run) over a file, keeping its size."""
    size = max(path.stat().st_size, 64)
    path.write_bytes(random.Random(path.name).randbytes(size))


def outputs(root: Path) -> dict[str, bytes]:
    """Every Parquet file (but ``lineage``, which records the repair's runs) and stored file
    of a data dir, by path relative to it."""
    files = [p for p in (root / "parquet").rglob("*.parquet") if "lineage" not in p.parts]
    files += [p for p in (root / "store").rglob("*") if p.is_file()]
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(files)}


def units(root: Path) -> list[dict]:
    """The LanceDB units of a data dir, sorted by (partition, unit id)."""
    table = lancedb.connect(str(root / "lancedb")).open_table(TABLE_NAME).to_arrow()
    return table.sort_by([("workbook_hash", "ascending"), ("unit_id", "ascending")]).to_pylist()


def records_by_partition(root: Path) -> dict[str, int]:
    store = DataStore(root)
    refresh_views(store)
    with connect(store) as con:
        for view in CONTRACT_VIEWS:  # every contract view answers
            con.execute(f"SELECT count(*) FROM {view}").fetchall()
        return dict(con.execute("SELECT workbook_hash, count(*) FROM records "
                                "GROUP BY workbook_hash").fetchall())


@pytest.mark.integration
def test_a_damaged_parquet_file_leaves_the_views_and_the_refresh_to_the_others(data, pristine):
    """Random bytes over one partition's ``records`` file: ``refresh`` names that partition
    ``damaged`` (the file, the reason, what to run) and reports the others, and the views
    answer for every other partition (the file went to the quarantine, out of their globs).
    Before, every partition failed with an untyped ``ArrowInvalid`` and the view could not be
    queried at all."""
    keys = pristine[1]
    store = DataStore(data)
    damage(store.table_path("records", keys[0]))
    results = {r.workbook_hash: r for r in refresh_stale(data)}
    assert results[keys[0]].status == "damaged"
    assert f"parquet/records/{keys[0]}.parquet: Parquet magic bytes not found" in \
        results[keys[0]].error and "extraction-assets repair" in results[keys[0]].error
    assert [results[k].status for k in keys[1:]] == ["unchanged", "unchanged"]
    assert results[keys[1]].counts["records"] == 12
    assert records_by_partition(data) == {keys[1]: 12, keys[2]: 12}
    assert (data / "quarantine" / "parquet" / "records" / f"{keys[0]}.parquet").exists()
    # ingest of the same file names it too, and the others stay unchanged
    again = ingest_paths([DataStore(data).source_of(k)["source_path"] for k in keys], data)
    assert [r.status for r in again] == ["damaged", "unchanged", "unchanged"]


@pytest.mark.integration
def test_a_partition_summary_counts_a_damaged_file_instead_of_failing_the_batch(data, pristine):
    """``summarize`` (the counts of every result line) reading a file damaged past its footer
    check names it in ``damaged`` and moves it to the quarantine; before, its
    ``ArrowInvalid`` failed every file of the batch."""
    key = pristine[1][1]
    store = DataStore(data)
    path = store.table_path("chunks", key)
    raw = bytearray(path.read_bytes())
    raw[8:len(raw) // 2] = bytes(len(raw) // 2 - 8)  # pages zeroed, footer intact
    path.write_bytes(bytes(raw))
    counts = summarize(store, key)
    assert counts["damaged"] == 1 and counts["chunks"] == 0 and counts["records"] == 12
    assert not path.exists()


@pytest.mark.integration
def test_a_lost_lancedb_folder_is_rebuilt_by_refresh_and_by_repair(data, pristine):
    """With ``lancedb/`` gone, ``search`` says the index is missing and to run ``repair``
    (exit 1; before: "ingest some files first"); ``refresh`` embeds every partition again
    (before: all ``unchanged``, never rebuilt), as does ``repair``; the units are those lost,
    and search finds a row again."""
    before = units(data)
    shutil.rmtree(data / "lancedb")
    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "text")
    assert found.returncode == 1
    assert "missing" in found.stderr and "extraction-assets repair" in found.stderr
    assert [r.status for r in refresh_stale(data)] == ["success"] * 3
    assert units(data) == before
    shutil.rmtree(data / "lancedb")
    repaired = repair(data)
    assert [(r.workbook_hash, r.status, r.assets) for r in repaired] == [
        (k, "repaired", ["chunk_embeddings"]) for k in sorted(pristine[1])]
    assert units(data) == before
    assert list(verify(data)) == []
    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "text", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert "wb_01.xlsx" in found.stdout


@pytest.mark.integration
def test_a_partition_missing_from_lancedb_is_embedded_again_alone(data, pristine):
    """One partition's rows deleted from a sound table: ``verify`` names its unit counts,
    ``refresh`` embeds that partition again and leaves the others ``unchanged`` (before:
    all ``unchanged``)."""
    keys = pristine[1]
    before = units(data)
    table = lancedb.connect(str(data / "lancedb")).open_table(TABLE_NAME)
    table.delete(f"workbook_hash = '{keys[1]}'")
    assert [(d.workbook_hash, d.kind) for d in verify(data)] == [(keys[1], "unit_count")]
    results = {r.workbook_hash: r.status for r in refresh_stale(data)}
    assert [results[k] for k in keys] == ["unchanged", "success", "unchanged"]
    assert units(data) == before


@pytest.mark.integration
def test_a_damaged_sources_file_is_named_by_ingest_and_rebuilt(data, pristine):
    """The ``sources`` file (the paths a content hash was registered under) of one
    partition damaged: ``ingest`` of the three files reports that partition ``damaged``,
    naming the file (moved to the quarantine), and the others ``unchanged``;
    ``repair`` writes it again from ``sources/<hash>.json`` and says what is lost."""
    keys = pristine[1]
    store = DataStore(data)
    paths = [store.source_of(k)["source_path"] for k in keys]
    damage(store.table_path("sources", keys[0]))
    results = ingest_paths(paths, data)
    assert [r.status for r in results] == ["damaged", "unchanged", "unchanged"]
    assert results[0].error.startswith(f"parquet/sources/{keys[0]}.parquet: ")
    assert [(d.workbook_hash, d.kind) for d in verify(data)] == [(keys[0], "quarantined")]
    [repaired] = repair(data)
    assert repaired.status == "repaired" and "later paths of these bytes are lost" in \
        repaired.detail
    assert list(verify(data)) == []
    assert [row["source_path"] for row in store.read_table("sources", keys[0]).to_pylist()] \
        == [paths[0]]
    assert [r.status for r in ingest_paths(paths, data)] == ["unchanged"] * 3


def test_registering_bytes_whose_sources_file_is_damaged_is_an_error_of_that_file(tmp_path):
    """A path that goes back to bytes registered before reads their ``sources`` file: when it
    is damaged, ``register_source`` raises :class:`DamagedFileError`, an ``OSError`` naming
    the file, which ``ingest`` and the inbox sensor report for that one file (before: an
    ``ArrowInvalid`` that stopped the whole ingest)."""
    store = DataStore(tmp_path / "data")
    path = tmp_path / "book.xlsx"
    path.write_bytes(b"first bytes")
    first, _ = store.register_source(path)
    path.write_bytes(b"second bytes")
    store.register_source(path)
    path.write_bytes(b"first bytes")
    damage(store.table_path("sources", first))
    with pytest.raises(OSError, match=f"^parquet/sources/{first}.parquet: .*repair") as caught:
        store.register_source(path)
    assert isinstance(caught.value, DamagedFileError)


@pytest.mark.integration
def test_stored_bytes_come_back_from_the_source_path_or_are_unrecoverable(tmp_path):
    """A damaged stored file and a damaged ``workbooks`` file of the same partition: ``repair``
    copies the bytes again from the source path (same hash) and re-materializes the asset,
    byte for byte; with the source changed since, the partition is ``unrecoverable`` (its
    ``workbook`` asset reads those bytes) and named so."""
    [path] = write_batch(tmp_path / "in", n_files=1, n_rows=3)
    root = tmp_path / "data"
    [result] = ingest_paths([path], root, until="workbook")
    key, store = result.workbook_hash, DataStore(root)
    before = outputs(root)
    damage(store.blob_path(key))
    damage(store.table_path("workbooks", key))
    found = {(d.name, d.kind) for d in verify(root)}
    assert found == {(f"store/{key[:2]}/{key}", "hash_mismatch"),
                     (f"parquet/workbooks/{key}.parquet", "unreadable")}
    [repaired] = repair(root)
    assert (repaired.status, repaired.assets) == ("repaired", ["workbook"])
    assert outputs(root) == before
    damage(store.blob_path(key))
    path.write_bytes(b"other bytes now")
    [lost] = repair(root)
    assert lost.status == "unrecoverable"
    assert f"store/{key[:2]}/{key}: hash_mismatch; {path} holds other bytes now" in lost.detail
    os.remove(path)
    assert repair(root)[0].status == "unrecoverable"
    assert [(d.name, d.kind) for d in verify(root)] == [(f"store/{key[:2]}/{key}", "missing")]


@pytest.mark.slow
def test_verify_names_the_damage_refresh_goes_on_and_repair_restores_it(data, pristine):
    """End to end through the command: one ``records`` file, one LanceDB data file and one
    stored file overwritten with random bytes. ``verify`` names the three (exit 1), ``search``
    says the index does not read and to repair it (before: a traceback);
    ``refresh`` completes every other file and the views answer for them; ``repair``
    restores the three byte for byte (Parquet and stored bytes; LanceDB rows, sorted), and
    ``verify`` then finds nothing (exit 0)."""
    keys = pristine[1]
    store = DataStore(data)
    before, before_units = outputs(data), units(data)
    records = store.table_path("records", keys[0])
    fragment = max((data / "lancedb" / f"{TABLE_NAME}.lance" / "data").glob("*.lance"),
                   key=lambda p: p.stat().st_mtime_ns)  # the newest: the table reads it
    blob = store.blob_path(keys[2])
    for path in (records, fragment, blob):
        damage(path)

    checked = run_cli("verify", "--data-dir", str(data))
    assert checked.returncode == 1, checked.stderr
    lines = checked.stdout.splitlines()
    for path, kind in ((records, "unreadable"), (fragment, "unreadable"),
                       (blob, "hash_mismatch")):
        assert any(str(path.relative_to(data)) in line and f"  {kind}: " in line
                   for line in lines), checked.stdout

    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "text")
    assert found.returncode == 1 and "Traceback" not in found.stderr
    assert "does not read" in found.stderr and "extraction-assets repair" in found.stderr

    refreshed = run_cli("refresh", "--data-dir", str(data))
    assert refreshed.returncode == 1, refreshed.stderr
    status = {line.split()[1]: line.split()[0] for line in refreshed.stdout.splitlines()}
    assert [status[store.source_of(k)["source_path"]] for k in keys] == [
        "damaged", "success", "success"], refreshed.stdout
    assert records_by_partition(data) == {keys[1]: 12, keys[2]: 12}

    repaired = run_cli("repair", "--data-dir", str(data))
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert outputs(data) == before
    assert units(data) == before_units
    assert records_by_partition(data) == {k: 12 for k in keys}
    clean = run_cli("verify", "--data-dir", str(data))
    assert clean.returncode == 0 and clean.stdout.startswith("ok: 3 partitions"), clean.stdout


@pytest.mark.integration
def test_a_damaged_full_text_index_is_named_and_rebuilt_and_search_says_one_line(data):
    """Random bytes over the full-text index's files (``_indices/``): ``search`` in ``text``
    and ``hybrid`` mode is one line naming the table and ``repair`` (before: a traceback,
    ``does not include tokenizer details``, and ``verify`` found nothing); ``verify`` names
    the table, ``repair`` writes it again and search finds the row again. Damaged data files
    in ``text`` mode are one line too (before: a traceback from the query's tokenizer)."""
    before = units(data)
    for path in sorted((data / "lancedb" / f"{TABLE_NAME}.lance" / "_indices").rglob("*")):
        if path.is_file():
            damage(path)
    for mode in ("text", "hybrid"):
        found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", mode)
        assert found.returncode == 1 and "Traceback" not in found.stderr, found.stderr
        assert "does not read" in found.stderr and "repair" in found.stderr, found.stderr
    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "vector")
    assert "Traceback" not in found.stderr, found.stderr  # (the row's terms read the index)
    damaged = list(verify(data))
    assert [(d.workbook_hash, d.kind) for d in damaged] == [("", "unreadable")]
    assert damaged[0].name == f"lancedb/{TABLE_NAME}.lance"
    repair(data)
    assert units(data) == before and list(verify(data)) == []
    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "text", "-k", "1")
    assert found.returncode == 0 and "wb_01.xlsx" in found.stdout, found.stderr
    for path in (data / "lancedb" / f"{TABLE_NAME}.lance" / "data").glob("*.lance"):
        damage(path)
    found = run_cli("search", "wb_01", "--data-dir", str(data), "--mode", "text")
    assert found.returncode == 1 and "Traceback" not in found.stderr, found.stderr
    assert "does not read" in found.stderr, found.stderr


@pytest.mark.integration
def test_a_damaged_warehouse_file_is_named_and_written_again(data, tmp_path):
    """Random bytes over ``warehouse.duckdb`` (it holds only the views): ``verify`` names it,
    ``refresh`` and ``repair`` write it again and the views answer (before: every DuckDB
    connection failed, ``not a valid DuckDB database file``, and nothing noticed); ``repair``
    of a data dir that does not exist creates none."""
    store = DataStore(data)
    refresh_views(store)
    before = records_by_partition(data)
    damage(store.warehouse_path)
    assert [(d.name, d.kind) for d in verify(data)] == [("warehouse.duckdb", "unreadable")]
    refresh_stale(data)
    assert records_by_partition(data) == before
    damage(store.warehouse_path)
    assert [r.path for r in repair(data)] == ["warehouse.duckdb"]
    assert records_by_partition(data) == before and list(verify(data)) == []
    missing = tmp_path / "no-such-dir"
    out = run_cli("repair", "--data-dir", str(missing))
    assert out.returncode == 1 and "no data dir" in out.stderr and not missing.exists()


@pytest.mark.integration
def test_deleted_parquet_files_make_their_assets_stale(data, pristine):
    """A partition's ``records`` and ``chunks`` files deleted (not damaged): ``refresh``
    writes them again from ``rendered_chunks`` on and leaves the other partitions
    ``unchanged`` (before: ``unchanged … records=0 chunks=0``, the rows gone from the views
    until someone ran ``verify``)."""
    keys = pristine[1]
    before = outputs(data)
    store = DataStore(data)
    for table in ("records", "chunks"):
        store.table_path(table, keys[0]).unlink()
    results = {r.workbook_hash: r for r in refresh_stale(data)}
    assert [results[k].status for k in keys] == ["success", "unchanged", "unchanged"]
    assert results[keys[0]].counts["records"] > 0
    assert outputs(data) == before
