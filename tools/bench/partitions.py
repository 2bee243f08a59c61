"""What a data dir's size costs each new file: ``extraction-assets ingest`` of a few small
workbooks into an instance that holds many partitions, against the same into one that holds
few (issue 35: "each file pays for every file before it").

``python -m tools.bench.partitions [--keys 100000] [--files 5] [--rows 50] [--repeat 3]
[--until rendered_chunks] [--batch-files N] [--json OUT]`` first prepares two data dirs
(untimed): in each it creates the Dagster instance
(:func:`~extraction_assets.app.ingest.open_instance`) and registers random sha256 hex partition
keys (:func:`~extraction_assets.defs.partitions.add_partition_keys`), ``--keys`` of them in the
*loaded* one and ``--fresh-keys`` (default 10) in the *fresh* one, with as many file names in
the files catalog (``file_names``: a data dir of N files holds both), and writes ``--files``
generated workbooks of ``--rows`` rows with distinct titles
(:func:`~tools.bench.workbooks.generate_workbook`). Then ``--repeat`` times, fresh and loaded
alternating (both meet the same moments of a noisy machine), it copies a prepared data dir to
a new folder (untimed: a copy of the SQLite files holds the same rows, so an ingest into it
does what it does into the folder the keys were registered in; only the page cache is warm,
equally for both) and times ``PYTHON -m extraction_assets.app.cli ingest --data-dir COPY
FILE...`` as a process (:func:`~tools.bench.command.run_ingest`): the registration of the
prepared keys is never inside the timed command, whose own work with the partitions (adding
its keys, planning its runs, finding what is stale) is. It reports the median wall and CPU
seconds of each, Dagster's seconds of each asset step, the ratio loaded / fresh, the extra
seconds per file and whether the issue 35 target holds: the ratio at most
:data:`TARGET_RATIO` at 100,000 keys. ``--batch-files 1`` measures one Dagster run per file
instead of one run over the range of the files' keys.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from extraction_assets.app.cli import AssetName
from extraction_assets.app.ingest import open_instance
from extraction_assets.defs.catalog import file_names
from extraction_assets.defs.partitions import add_partition_keys, workbook_partitions
from extraction_assets.store.storage import DataStore
from tools.bench.command import run_ingest
from tools.bench.workbooks import generate_workbook

#: The issue 35 target: the files into an instance of 100,000 partitions take at most this
#: many times what they take into a fresh one.
TARGET_RATIO = 1.2
#: Keys held by the instance of issue 35's target.
TARGET_KEYS = 100_000


def random_keys(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct sha256 hex digests of random bytes (the same for the same ``seed``), in
    the shape of the partition keys of files' contents."""
    rng = random.Random(seed)
    return [hashlib.sha256(rng.randbytes(32)).hexdigest() for _ in range(n)]


def _held(data_dir: Path) -> tuple[int, int]:
    """Partitions of the data dir's ``workbooks`` and ``file_names`` (0, 0 without a data dir)."""
    if not DataStore(data_dir).dagster_home.is_dir():
        return 0, 0
    with open_instance(DataStore(data_dir)) as instance:
        return tuple(len(instance.get_dynamic_partitions(d.name))
                     for d in (workbook_partitions, file_names))


def prepare_data_dir(data_dir: Path, n: int) -> float:
    """Create the data dir's Dagster instance and register ``n`` partitions of each kind a file
    brings: :func:`random_keys` (seed ``n``) as ``workbooks`` partitions and as many file names
    (``file_000001.xlsx``, ...) as ``file_names`` partitions (the files catalog), and the
    record of where each key's file came from (``sources/<hash>.json``, what ``ingest``
    counts the data dir's partitions by); returns the seconds the registration took.

    Raises:
        RuntimeError: the instance then holds other than ``n`` partitions of each (e.g. the
            folder was not new).
    """
    store = DataStore(data_dir)
    with open_instance(store) as instance:
        start = time.perf_counter()
        keys = random_keys(n, seed=n)
        add_partition_keys(instance, keys)
        add_partition_keys(instance, [f"file_{k:06d}.xlsx" for k in range(1, n + 1)],
                           partitions_def=file_names)
        seconds = time.perf_counter() - start
    (store.root / "sources").mkdir(parents=True, exist_ok=True)
    for k, key in enumerate(keys, start=1):
        name = f"file_{k:06d}.xlsx"
        (store.root / "sources" / f"{key}.json").write_text(json.dumps(
            {"filename": name, "source_path": f"/files/{name}"}))
    if _held(data_dir) != (n, n):
        raise RuntimeError(f"{data_dir} holds {_held(data_dir)} partitions, not {n} of each")
    return seconds


def write_workbooks(folder: Path, files: int, rows: int) -> list[Path]:
    """``files`` generated workbooks of ``rows`` rows each in ``folder``, each with its own
    title (so other bytes and another partition)."""
    folder.mkdir(parents=True, exist_ok=True)
    return [generate_workbook(folder / f"orders_{k}.xlsx", rows, title=f"Orders, branch {k}")
            for k in range(files)]


def _summary(runs: list[dict]) -> dict:
    steps = sorted({step for run in runs for step in run["steps_s"]})
    return {"wall_s": round(statistics.median(r["wall_s"] for r in runs), 3),
            "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
            "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs)),
            "runs": max(r["runs"] for r in runs),
            "walls_s": [round(r["wall_s"], 3) for r in runs],
            "steps_s": {step: round(statistics.median(r["steps_s"].get(step, 0.0)
                                                      for r in runs), 3) for step in steps}}


def bench_partitions(prepared: dict[str, Path], paths: list[Path], repeat: int,
                     until: str | None, batch_files: int | None = None,
                     python: str = sys.executable) -> dict:
    """``repeat`` rounds of :func:`~tools.bench.command.run_ingest` of ``paths`` (with
    ``batch_files``) into a copy of each prepared data dir (name -> folder), the names
    alternating in each round. Returns by name the median ``wall_s`` and ``cpu_s``, the median
    seconds of each asset step (``steps_s``, summed over the Dagster runs of an ingest), the
    Dagster runs of an ingest, the largest ``peak_rss_mb`` and every ingest's walls."""
    runs: dict[str, list[dict]] = {name: [] for name in prepared}
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        for round_ in range(repeat):
            for name, folder in prepared.items():
                copy = Path(tmp) / f"{name}-{round_}"
                shutil.copytree(folder, copy)
                runs[name].append(run_ingest(python, paths, copy, until, batch_files))
                shutil.rmtree(copy)
    return {name: _summary(done) for name, done in runs.items()}


app = typer.Typer(add_completion=False)


@app.command()
def main(
    keys: Annotated[int, typer.Option(
        "--keys", min=1, help="Partition keys of the loaded instance.")] = TARGET_KEYS,
    fresh_keys: Annotated[int, typer.Option(
        "--fresh-keys", min=0, help="Partition keys of the fresh instance.")] = 10,
    files: Annotated[int, typer.Option("--files", min=1, help="Workbooks ingested.")] = 5,
    rows: Annotated[int, typer.Option("--rows", min=1, help="Rows of each workbook.")] = 50,
    repeat: Annotated[int, typer.Option(
        "--repeat", min=1, help="Timed runs of each (medians).")] = 3,
    until: Annotated[AssetName | None, typer.Option(
        "--until", help="Last asset to materialize (default: all six).")] = None,
    batch_files: Annotated[int | None, typer.Option(
        "--batch-files", min=1, help="Passed to ingest (1: one Dagster run per file; default: "
                                     "ingest's, one run of them all).")] = None,
    work_dir: Annotated[Path | None, typer.Option(
        "--work-dir", help="Keep the prepared data dirs and workbooks here and reuse them on "
                           "the next run with the same --keys and --fresh-keys (default: a "
                           "temporary folder).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write results here.")] = None,
) -> None:
    """Time ``extraction-assets ingest`` of a few small workbooks into an instance of --keys
    partitions against the same into one of --fresh-keys: medians, the ratio, the target."""
    until_name = until.value if until else None
    results: dict = {"keys": keys, "fresh_keys": fresh_keys, "files": files, "rows": rows,
                     "repeat": repeat, "until": until_name, "batch_files": batch_files,
                     "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        root = work_dir.expanduser().resolve() if work_dir else Path(tmp)
        paths = write_workbooks(root / "workbooks", files, rows)
        prepared = {"fresh": root / f"fresh-{fresh_keys}", "loaded": root / f"loaded-{keys}"}
        register_s = {}
        for (name, folder), n in zip(prepared.items(), (fresh_keys, keys)):
            if _held(folder) != (n, n):  # new, or prepared by an older version of this tool
                shutil.rmtree(folder, ignore_errors=True)
                typer.echo(f"registering {n:,} partition keys and file names in {folder} ...")
                try:
                    register_s[name] = round(prepare_data_dir(folder, n), 1)
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)  # never reused half made
                    raise
        results["register_s"] = register_s  # untimed: before any copy is ingested into
        results["runs"] = bench_partitions(prepared, paths, repeat, until_name, batch_files)
    fresh, loaded = results["runs"]["fresh"], results["runs"]["loaded"]
    results["ratio"] = round(loaded["wall_s"] / fresh["wall_s"], 2)
    results["extra_s_per_file"] = round((loaded["wall_s"] - fresh["wall_s"]) / files, 3)
    typer.echo(f"ingest of {files} workbooks x {rows} rows"
               f"{f' --until {until_name}' if until_name else ''}"
               f"{f' --batch-files {batch_files}' if batch_files else ''} "
               f"({loaded['runs']} Dagster runs), as a process: medians of {repeat}")
    typer.echo(f"{'instance':24s} {'wall s':>7s} {'cpu s':>7s} {'peak MB':>8s}  walls")
    for name, n in (("fresh", fresh_keys), ("loaded", keys)):
        r = results["runs"][name]
        typer.echo(f"{f'{name} ({n:,} keys)':24s} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} "
                   f"{r['peak_rss_mb']:8d}  {r['walls_s']}")
    typer.echo("asset steps (Dagster's seconds, medians): "
               + ", ".join(f"{step} {fresh['steps_s'].get(step, 0.0):.2f} -> {s:.2f}"
                           for step, s in loaded["steps_s"].items()))
    typer.echo(f"ratio loaded / fresh: {results['ratio']:.2f}; "
               f"{results['extra_s_per_file']:+.3f} s per file")
    if keys >= TARGET_KEYS:
        met = results["ratio"] <= TARGET_RATIO
        results["target"] = {"ratio": results["ratio"], "limit": TARGET_RATIO, "met": met}
        typer.echo(f"target: <= {TARGET_RATIO:g}x at {TARGET_KEYS:,} keys: "
                   f"{results['ratio']:.2f}x, " + ("met" if met else "missed"))
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    app(prog_name="python -m tools.bench.partitions")
