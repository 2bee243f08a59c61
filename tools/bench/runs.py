"""Timed runs through Dagster: one partition end to end, and several files in parallel."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.store.storage import DataStore


def dagster_run(path: Path, data_dir: Path, force: bool = False) -> dict:
    """Materialize the six assets for one file with the in-process executor
    (:func:`~extraction_assets.app.ingest.ingest_paths`, local embedder) on ``data_dir``.

    Returns ``wall_s`` (the whole call: instance, partition, run, lineage export), ``steps_s``
    (seconds of each asset's step as Dagster recorded them), ``embedded`` and ``reused``
    (chunks sent to the model vs vectors reused by chunk id, from ``chunk_embeddings``'s
    materialization) and ``chunks``.

    Raises:
        RuntimeError: the run did not succeed (the message names the failed asset).
    """
    start = time.perf_counter()
    [result] = ingest_paths([path], data_dir, EmbedderResource(), force=force)
    wall = time.perf_counter() - start
    if result.status != "success":
        raise RuntimeError(f"Dagster run of {path.name} {result.status}: {result.error}")
    with open_instance(DataStore(data_dir)) as instance:
        steps = {s.step_key: s.end_time - s.start_time
                 for s in instance.get_run_step_stats(result.run_id)}
        record = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey("chunk_embeddings"),
                               asset_partitions=[result.workbook_hash]), limit=1).records[0]
        metadata = record.asset_materialization.metadata
    return {"wall_s": wall, "steps_s": steps, "embedded": metadata["embedded"].value,
            "reused": metadata["reused"].value, "chunks": result.counts["chunks"]}


def ingest_processes(groups: list[tuple[list[Path], Path]], jobs: int,
                     until: str | None = None) -> float:
    """Wall seconds of ``extraction-assets ingest --jobs JOBS`` processes started together, one
    per ``(paths, data_dir)`` group, until the last one exits (each a fresh interpreter, as a
    user runs it: imports, instance, registration and the runs).

    Raises:
        RuntimeError: an ingest exited non-zero (its stderr tail is in the message).
    """
    start = time.perf_counter()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "extraction_assets.app.cli", "ingest", "--data-dir", str(data_dir),
         "--jobs", str(jobs), *(["--until", until] if until else []), *[str(p) for p in paths]],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for paths, data_dir in groups]
    failures = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            failures.append(f"ingest exited {proc.returncode}: {err[-2000:]}")
    wall = time.perf_counter() - start
    if failures:
        raise RuntimeError(failures[0])
    return wall
