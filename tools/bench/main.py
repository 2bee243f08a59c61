"""The benchmark command: ``python -m tools.bench [OPTIONS] [FILE...]``.

For every workbook (the generated ones chosen with ``--generate``, plus the files given) it
measures, ``--repeat`` times each, in fresh processes (a run of our stages and one of the
reference readers alternating: both meet the same moments of a noisy machine, and a peak RSS
is not what other measurements left in the heap):

* our stages one by one (hash, parse, normalize, segment, render, then embed with the model
  loaded only after the others; see :mod:`.measure`), the sum of hash..render being
  "hash -> chunks" (no embeddings);
* in another process, alternating, the reference readers on the same bytes: python-calamine
  reading all values (our proxy for the physical limit), openpyxl read-only, and Docling's
  Excel backend conversion plus Markdown export when Docling is installed
  (``pip install -e ".[bench-docling]"``).

Then the Dagster run end to end (in-process executor, six assets, local embedder) of one
workbook on temporary data dirs (each after a first small ingest that creates the instance),
against the same stages run in-process: the difference is
Dagster's overhead per partition (storage, views, checks, event log), and a forced re-run
shows the embeddings reused by chunk id. Last, ``--parallel-files`` files ingested by
``extraction-assets ingest --jobs 1``, by ``--jobs N`` (``--parallel-workers``) and, for
reference, by N independent ``--jobs 1`` ingests on data dirs of their own, each on a new data
dir whose instance is created first.

It prints medians (peaks: the largest of the runs) as tables, the ratios ours / calamine and
Docling / ours, the targets of issue #8 met or missed, and writes everything as JSON with
``--json``.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from extraction_assets.app.cli import import_for_runs
from extraction_assets.app.ingest import open_instance
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.store.storage import DataStore
from tools.bench.command import run_ingest
from tools.bench.measure import (
    STAGES,
    TO_CHUNKS,
    Timing,
    convert_docling,
    docling_available,
    read_calamine,
    read_openpyxl,
    run_embed,
    run_stages,
    stages_wall,
    timed,
)
from tools.bench.report import console, print_results, targets
from tools.bench.runs import dagster_run, ingest_processes
from tools.bench.workbooks import GENERATED, generate_workbook

Generated = Enum("Generated", {name: name for name in GENERATED}, type=str)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _summary(timings: list[Timing], cells: int, records: int) -> dict:
    """Median seconds (to the microsecond: hashing a small file takes well under 0.1 ms),
    throughputs and the largest peak of repeated timings of one thing."""
    seconds = _median([t.seconds for t in timings])
    peaks = [t.peak_rss_mb for t in timings if t.peak_rss_mb is not None]
    return {"seconds": round(seconds, 6), "rows": timings[0].rows,
            "cells_per_s": round(cells / seconds) if seconds else None,
            "records_per_s": round(records / seconds) if seconds and records else None,
            "peak_rss_mb": round(max(peaks)) if peaks else None}


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a new interpreter (spawned), so that its peak RSS is its own and not
    what earlier measurements left in this process's heap; returns its result."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _warm_up_workbook() -> bytes:
    """A generated workbook of 20 rows, read untimed before the measured runs of a process:
    first-call costs (lazy imports, compiled patterns) are paid outside the timings, as by
    any file after the first in an ingest process."""
    with tempfile.TemporaryDirectory(prefix="bench-warm-up-") as tmp:
        return generate_workbook(Path(tmp) / "warm_up.xlsx", 20).read_bytes()


def bench_references(path: Path, repeat: int, docling: bool,
                     openpyxl: bool = True) -> dict[str, list[Timing]]:
    """The reference readers on one file, alternating, ``repeat`` times each (each first called
    once, untimed, on a small workbook, as :func:`bench_ours` warms up ours): python-calamine,
    openpyxl (unless ``openpyxl`` is false) and Docling (when ``docling``)."""
    data = path.read_bytes()
    readers = {"calamine": read_calamine, **({"openpyxl": read_openpyxl} if openpyxl else {})}
    if docling:
        readers["docling"] = lambda data: convert_docling(data, path.name)
    warm_up = _warm_up_workbook()
    for read in readers.values():
        read(warm_up)
    runs: dict[str, list[Timing]] = {name: [] for name in readers}
    for _ in range(repeat):
        for name, fn in readers.items():
            runs[name].append(timed(lambda: fn(data), lambda n: n)[1])
    return runs


def bench_ours(path: Path, repeat: int, embed_chunks: int | None,
               embed_runs: int | None = None) -> tuple[dict, dict]:
    """Our stages on one file ``repeat`` times, then (the model loaded only then, so that the
    hash -> chunks peaks do not hold it) the embedding of the first ``embed_chunks`` chunks
    (all when ``None``, none when 0) ``embed_runs`` times (default ``repeat``). Returns
    (timings by stage, counts)."""
    data = path.read_bytes()
    embedder = LocalEmbedder()
    embedder.count_tokens("")  # the tokenizer loads outside the timings
    run_stages(_warm_up_workbook(), "warm_up.xlsx", embedder)
    runs: dict[str, list[Timing]] = {name: [] for name in STAGES}
    for _ in range(repeat):
        timings, counts, texts = run_stages(data, path.name, embedder)
        for name, timing in timings.items():
            runs[name].append(timing)
    texts = texts[:embed_chunks]
    counts["embedded"] = len(texts)
    counts["embedded_tokens"] = sum(embedder.count_tokens_batch(texts))
    if texts:
        embedder.embed(["model load"])
        runs["embed"] = [run_embed(embedder, texts) for _ in range(embed_runs or repeat)]
    return {name: t for name, t in runs.items() if t}, counts


def bench_file(path: Path, repeat: int, embed_chunks: int, docling: bool,
               expected: dict | None = None) -> dict:
    """Measure one workbook ``repeat`` times: each time the reference readers in a fresh
    process, then our stages in another (:func:`bench_references`, :func:`bench_ours`), so that
    both meet the same moments of a noisy machine and every peak is a first run's; the
    embedding is measured ``repeat`` times in the last of our processes.

    Returns a JSON-compatible dict: ``cells`` (calamine's non-empty count), ``records``,
    ``chunks``, ``references`` and ``stages`` (each: median ``seconds``, ``cells_per_s``,
    ``records_per_s``, ``peak_rss_mb``), ``hash_to_chunks`` (sum of the stage medians, largest
    stage peak), ``embed`` throughput and the ratios. ``expected`` (generated files) holds
    the ``cells`` and ``data_rows`` the generator wrote.
    """
    ref_runs: dict[str, list[Timing]] = {}
    stage_runs: dict[str, list[Timing]] = {}
    for k in range(repeat):
        for name, runs in in_fresh_process(bench_references, path, 1, docling).items():
            ref_runs.setdefault(name, []).extend(runs)
        last = k == repeat - 1
        ours, counts = in_fresh_process(bench_ours, path, 1, embed_chunks if last else 0, repeat)
        for name, runs in ours.items():
            stage_runs.setdefault(name, []).extend(runs)
    cells, records = ref_runs["calamine"][0].rows, counts["records"]
    out: dict = {"file": path.name, "path": str(path), "size_bytes": path.stat().st_size,
                 "cells": cells, "records": records, "chunks": counts["chunks"],
                 "tokens": counts["tokens"], "expected": expected,
                 "references": {name: _summary(runs, cells, records)
                                for name, runs in ref_runs.items()},
                 "stages": {name: _summary(runs, cells, records)
                            for name, runs in stage_runs.items()}}
    stages = out["stages"]
    seconds = sum(stages[name]["seconds"] for name in TO_CHUNKS)
    peaks = [stages[name]["peak_rss_mb"] for name in TO_CHUNKS
             if stages[name]["peak_rss_mb"] is not None]
    out["hash_to_chunks"] = {"seconds": round(seconds, 6),
                             "cells_per_s": round(cells / seconds) if seconds else None,
                             "records_per_s": round(records / seconds) if seconds else None,
                             "peak_rss_mb": max(peaks) if peaks else None}
    if "embed" in stages:
        embed = stages["embed"]
        out["embed"] = {"chunks": counts["embedded"], "seconds": embed["seconds"],
                        "chunks_per_s": round(counts["embedded"] / embed["seconds"], 2),
                        "tokens_per_s": round(counts["embedded_tokens"] / embed["seconds"])}
    refs = out["references"]
    out["ratio_ours_to_calamine"] = round(seconds / refs["calamine"]["seconds"], 2)
    if "docling" in refs:
        out["ratio_docling_to_ours"] = round(refs["docling"]["seconds"] / seconds, 2)
    return out


def bench_dagster(path: Path, repeat: int, workdir: Path) -> dict:
    """The six assets through Dagster (in-process executor) against the same stages in-process
    with every chunk embedded, alternating, ``repeat`` times; then one forced re-run (chunk
    ids unchanged -> vectors reused).

    Each time on a fresh temp data dir, where a small other workbook is ingested first: it
    creates the instance (SQLite schemas) and pays Dagster's first run in the process, which a
    data dir and a process pay once, not per partition. ``overhead_s`` = median run wall -
    median in-process stage work; ``first_run_s`` is the median wall of those first ingests.
    """
    embedder = LocalEmbedder()
    embedder.embed(["model load"])
    data = path.read_bytes()
    first = workdir / "dagster_first.xlsx"
    if not first.exists():
        generate_workbook(first, 10)
    walls, work, steps, firsts = [], [], [], []
    again: dict = {}
    for k in range(repeat):
        timings, _, texts = run_stages(data, path.name, embedder)
        work.append(sum(t.seconds for t in timings.values())
                    + run_embed(embedder, texts).seconds)
        with tempfile.TemporaryDirectory(prefix="bench-dagster-") as tmp:
            firsts.append(dagster_run(first, Path(tmp))["wall_s"])
            run = dagster_run(path, Path(tmp))
            walls.append(run["wall_s"])
            steps.append(sum(run["steps_s"].values()))
            if k == repeat - 1:
                again = dagster_run(path, Path(tmp), force=True)
    wall, stage_work = _median(walls), _median(work)
    return {"file": path.name, "runs": repeat, "wall_s": round(wall, 3),
            "steps_s": round(_median(steps), 3), "stage_work_s": round(stage_work, 3),
            "overhead_s": round(wall - stage_work, 3),
            "first_run_s": round(_median(firsts), 3),
            "per_step_s": {k: round(v, 3) for k, v in run["steps_s"].items()},
            "chunks": run["chunks"], "first_run_embedded": run["embedded"],
            "rerun": {"wall_s": round(again["wall_s"], 3), "embedded": again["embedded"],
                      "reused": again["reused"]}}


def _command_summary(runs: list[dict], calamine_s: float) -> dict:
    """Medians of :func:`~tools.bench.command.run_ingest` runs of one code version (the peak:
    the largest), with the wall's ratio to calamine's read and the embedding's throughput."""
    wall = _median([r["wall_s"] for r in runs])
    out = {"wall_s": round(wall, 3), "ratio_to_calamine": round(wall / calamine_s, 2),
           "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs)),
           "steps_s": {step: round(_median([r["steps_s"][step] for r in runs]), 3)
                       for step in runs[0]["steps_s"]}}
    out["steps_total_s"] = round(sum(out["steps_s"].values()), 3)
    out["outside_steps_s"] = round(wall - out["steps_total_s"], 3)
    if "embed" in runs[0]:
        embed = {key: _median([r["embed"][key] for r in runs])
                 for key in ("units", "embedded", "step_s")}
        embed["units_per_s"] = round(embed["embedded"] / embed["step_s"], 1)
        if runs[0]["embed"]["embed_s"] is not None:
            embed["tokens"] = runs[0]["embed"]["tokens"]
            embed["embed_s"] = round(_median([r["embed"]["embed_s"] for r in runs]), 3)
            embed["model_units_per_s"] = round(embed["embedded"] / embed["embed_s"], 1)
            embed["model_tokens_per_s"] = round(embed["tokens"] / embed["embed_s"])
        out["embed"] = embed
    return out


def bench_command(path: Path, until: Optional[str], repeat: int,
                  baseline_python: Optional[str], expected: dict | None = None) -> dict:
    """What a user runs: ``extraction-assets ingest [--until UNTIL]`` of one workbook as a
    process on a fresh data dir (:func:`~tools.bench.command.run_ingest`), ``repeat`` times,
    alternating with, each time: python-calamine's read and our stages alone (hash -> chunks),
    each in a fresh process, and the same command run by ``baseline_python`` (another
    installation of the package) when given.

    Returns ``calamine_s``, ``stages_s`` (hash -> chunks, stages in-process) and per code
    version (``ours``, ``baseline``) :func:`_command_summary`; ``speedup`` is the baseline's
    median wall over ours.
    """
    versions = {"ours": sys.executable, **({"baseline": baseline_python} if baseline_python
                                             else {})}
    calamine, stages = [], []
    runs: dict[str, list[dict]] = {name: [] for name in versions}
    for _ in range(repeat):
        calamine.append(in_fresh_process(bench_references, path, 1, False,
                                         False)["calamine"][0])
        ours, _ = in_fresh_process(bench_ours, path, 1, 0)
        stages.append(sum(ours[name][0].seconds for name in TO_CHUNKS))
        for name, python in versions.items():
            with tempfile.TemporaryDirectory(prefix="bench-command-") as tmp:
                runs[name].append(run_ingest(python, path, Path(tmp) / "data", until))
    calamine_s = _median([t.seconds for t in calamine])
    out = {"file": path.name, "cells": calamine[0].rows, "expected": expected,
           "until": until or "chunk_embeddings", "runs": repeat,
           "calamine_s": round(calamine_s, 4), "stages_s": round(_median(stages), 3)}
    for name, version_runs in runs.items():
        out[name] = _command_summary(version_runs, calamine_s)
    out["ours"]["ratio_to_stages"] = round(out["ours"]["wall_s"] / out["stages_s"], 2)
    if "baseline" in out:
        out["baseline_python"] = baseline_python
        out["speedup"] = round(out["baseline"]["wall_s"] / out["ours"]["wall_s"], 2)
    return out


def _new_data_dir(parent: str, name: str) -> Path:
    """A data dir under ``parent`` whose Dagster instance exists (created untimed, as after a
    user's first ingest: creating the SQLite schema happens once per data dir)."""
    data_dir = Path(parent) / name
    open_instance(DataStore(data_dir)).dispose()
    return data_dir


def _run_times(data_dir: Path, started: float) -> tuple[float, float]:
    """From the run records of a data dir's instance: seconds from ``started`` (epoch seconds,
    when the ingest command was started) to the first run's start, and the median seconds of
    one run (Dagster's start to end)."""
    with open_instance(DataStore(data_dir)) as instance:
        records = instance.get_run_records()
    return (min(r.start_time for r in records) - started,
            _median([r.end_time - r.start_time for r in records]))


def parallel_bounds(result: dict) -> tuple[float, float]:
    """Amdahl's law for a parallel result of :func:`bench_parallel`: the seconds before the
    first run (imports, instance, checks) are not shared between the processes, everything
    after it is. Returns the throughput ratio ``--jobs WORKERS`` / ``--jobs 1`` that this gives
    when the serial ingest's seconds after its first run start are split evenly over the
    workers, ``(bound, ceiling)``: ``bound`` with each run as slow as measured side by side
    (``parallel_run_s`` / ``serial_run_s``) after the parallel ingest's own first run start,
    ``ceiling`` with the runs as fast as alone after the serial one's."""
    after = result["serial_s"] - result["serial_first_run_s"]
    slowdown = result["parallel_run_s"] / result["serial_run_s"]
    bound = result["serial_s"] / (result["parallel_first_run_s"]
                                  + after * slowdown / result["workers"])
    ceiling = result["serial_s"] / (result["serial_first_run_s"] + after / result["workers"])
    return round(bound, 2), round(ceiling, 2)


def bench_parallel(folder: Path, files: int, rows: int, workers: int, repeat: int,
                   until: Optional[str]) -> dict:
    """``files`` distinct generated workbooks (``rows``.. rows x 10) ingested, alternating, by
    ``extraction-assets ingest --jobs 1``, by ``--jobs WORKERS``, and -- the reference: what
    this machine gives to processes that share nothing -- by ``WORKERS`` independent
    ``--jobs 1`` ingests started together, each on a share of the files and a data dir of its
    own. Every ingest runs on new data dirs (:func:`_new_data_dir`).

    Besides the wall seconds and ratios, where the time goes in each mode (medians over the
    repeats, :func:`_run_times`): ``*_first_run_s``, seconds from the command's start to its
    first run (imports, instance, checks), and ``*_run_s``, the median seconds of one run
    (alone with ``--jobs 1``, side by side with ``--jobs WORKERS``); from them
    ``bound_ratio`` and ``ceiling_ratio`` (:func:`parallel_bounds`)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(files):
        path = folder / f"parallel_{rows + k}.xlsx"
        if not path.exists():
            generate_workbook(path, rows + k)
        paths.append(path)
    serial, parallel, independent = [], [], []
    times: dict[str, list[tuple[float, float]]] = {"serial": [], "parallel": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
            for mode, jobs, walls in (("serial", 1, serial), ("parallel", workers, parallel)):
                data_dir = _new_data_dir(tmp, mode)
                started = time.time()
                walls.append(ingest_processes([(paths, data_dir)], jobs, until))
                times[mode].append(_run_times(data_dir, started))
            independent.append(ingest_processes(
                [(paths[k::workers], _new_data_dir(tmp, f"alone{k}")) for k in range(workers)],
                1, until))
    s, p, i = _median(serial), _median(parallel), _median(independent)
    out = {"files": files, "cells_per_file": 10 * rows + 15, "workers": workers,
           "until": until or "chunk_embeddings", "serial_s": round(s, 3),
           "parallel_s": round(p, 3), "serial_files_per_s": round(files / s, 3),
           "parallel_files_per_s": round(files / p, 3), "ratio": round(s / p, 2),
           "independent_s": round(i, 3), "independent_ratio": round(s / i, 2)}
    for mode, runs in times.items():
        out[f"{mode}_first_run_s"] = round(_median([first for first, _ in runs]), 3)
        out[f"{mode}_run_s"] = round(_median([run for _, run in runs]), 3)
    out["bound_ratio"], out["ceiling_ratio"] = parallel_bounds(out)
    return out


def bench_small(folder: Path, files: int, rows: int, repeat: int) -> dict:
    """``files`` small generated workbooks (``rows``.. rows x 10 cells) taken through hash ->
    chunks, alternating, ``repeat`` times: by the stages alone in a fresh process
    (:func:`~tools.bench.measure.stages_wall`), and by ``extraction-assets ingest --until
    rendered_chunks`` as a user runs it (a fresh process on a new data dir: imports, instance,
    registration, the Dagster runs, Parquet and views). ``ratio`` = ingest / stages (medians):
    what Dagster and the writes add to a folder of small files."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(files):
        path = folder / f"small_{rows}_{k:03d}.xlsx"
        if not path.exists():
            generate_workbook(path, rows, title=f"Orders, branch {k:03d}")
        paths.append(path)
    stages, ingests = [], []
    for _ in range(repeat):
        stages.append(in_fresh_process(stages_wall, paths))
        with tempfile.TemporaryDirectory(prefix="bench-small-") as tmp:
            ingests.append(ingest_processes([(paths, _new_data_dir(tmp, "small"))], 1,
                                            "rendered_chunks"))
    s, i = _median(stages), _median(ingests)
    return {"files": files, "cells_per_file": 10 * rows + 15, "stages_s": round(s, 3),
            "ingest_s": round(i, 3), "ratio": round(i / s, 2),
            "per_file_overhead_s": round((i - s) / files, 4)}


def main(
    files: list[Path] = typer.Argument(None, help="Workbooks to measure besides the generated ones."),
    generate: list[Generated] = typer.Option(
        list(Generated), "--generate", "-g",
        help="Generated workbooks to measure (repeatable; default all): 10k, 50k, 100k, 200k, 1m "
             "cells of orders, wide (200 columns), merged (50,000 merged ranges), sheets "
             "(200 sheets)."),
    no_generate: bool = typer.Option(False, "--no-generate", help="Only the FILE arguments."),
    repeat: int = typer.Option(3, "--repeat", min=1, help="Runs of everything (medians)."),
    embed_chunks: int = typer.Option(64, "--embed-chunks", min=0,
                                     help="Chunks embedded per workbook (0: no embed stage)."),
    docling: bool = typer.Option(True, "--docling/--no-docling",
                                 help="Measure Docling when it is installed."),
    docling_max_cells: int = typer.Option(
        250_000, "--docling-max-cells", help="Skip Docling on larger workbooks (its memory)."),
    dagster: Optional[Generated] = typer.Option(
        Generated("10k"), "--dagster", help="Generated workbook of the Dagster end-to-end run."),
    no_dagster: bool = typer.Option(False, "--no-dagster", help="Skip the Dagster run."),
    command_until: Optional[Generated] = typer.Option(
        Generated("1m"), "--command-until",
        help="Generated workbook ingested --until rendered_chunks by the command, as a process."),
    command_all: Optional[Generated] = typer.Option(
        Generated("50k"), "--command-all",
        help="Generated workbook ingested through all six assets by the command, as a process."),
    no_command: bool = typer.Option(False, "--no-command", help="Skip the command runs."),
    baseline_python: Optional[str] = typer.Option(
        None, "--baseline-python",
        help="Interpreter of another installation of the package (e.g. a venv of an older "
             "commit): its command runs alternate with ours."),
    parallel_files: int = typer.Option(8, "--parallel-files", min=0,
                                       help="Files of the parallel run (0: skip it)."),
    parallel_rows: int = typer.Option(5_000, "--parallel-rows", min=1,
                                      help="Rows x 10 columns of each parallel file."),
    parallel_workers: int = typer.Option(2, "--parallel-workers", min=2,
                                         help="--jobs of the parallel ingest."),
    parallel_until: str = typer.Option("rendered_chunks", "--parallel-until",
                                       help="Last asset of the parallel ingests ('' for all six)."),
    small_files: int = typer.Option(200, "--small-files", min=0,
                                    help="Small files ingested against the stages alone (0: skip)."),
    small_rows: int = typer.Option(199, "--small-rows", min=1,
                                   help="Rows x 10 columns of each small file (~2,000 cells)."),
    workdir: Path = typer.Option(Path("data/bench"), "--workdir",
                                 help="Where generated workbooks are written (and kept)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the results here."),
) -> None:
    """Per-stage speed and memory of the pipeline against python-calamine, openpyxl and
    Docling on the same files, the ingest command as a process (against another installation
    with --baseline-python), the Dagster overhead per partition and the parallel speed-up."""
    import_for_runs()  # as ``extraction-assets ingest`` does, for a like-for-like Dagster run
    workdir.mkdir(parents=True, exist_ok=True)
    with_docling = docling and docling_available()
    work: list[tuple[Path, dict | None]] = []
    for choice in ([] if no_generate else dict.fromkeys(generate)):
        spec = GENERATED[choice.value]
        path = workdir / f"{spec.name}.xlsx"
        if not path.exists():
            console.print(f"generating {path} ({spec.description})", style="dim")
            spec.make(path)
        work.append((path, {"cells": spec.cells, "data_rows": spec.data_rows}))
    work += [(path, None) for path in files or []]
    results: dict = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "repeat": repeat, "docling": "measured" if with_docling else "not installed or off",
        "files": [],
    }
    for path, expected in work:
        console.print(f"measuring {path.name} ...", style="dim")
        use_docling = with_docling and (expected or {}).get("cells", 0) <= docling_max_cells
        results["files"].append(in_fresh_process(bench_file, path, repeat, embed_chunks,
                                                 use_docling, expected))
    if dagster is not None and not no_dagster:
        spec = GENERATED[dagster.value]
        path = workdir / f"{spec.name}.xlsx"
        if not path.exists():
            spec.make(path)
        console.print(f"Dagster runs of {path.name} ...", style="dim")
        results["dagster"] = bench_dagster(path, repeat, workdir)
    if not no_command:
        results["commands"] = []
        for choice, until in ((command_until, "rendered_chunks"), (command_all, None)):
            if choice is None:
                continue
            spec = GENERATED[choice.value]
            path = workdir / f"{spec.name}.xlsx"
            if not path.exists():
                spec.make(path)
            console.print(f"ingest {path.name} until {until or 'chunk_embeddings'} as a "
                          "process ...", style="dim")
            results["commands"].append(bench_command(
                path, until, repeat, baseline_python,
                {"cells": spec.cells, "data_rows": spec.data_rows}))
    if parallel_files:
        console.print(f"parallel ingests of {parallel_files} files ...", style="dim")
        results["parallel"] = bench_parallel(workdir / "parallel", parallel_files, parallel_rows,
                                             parallel_workers, repeat, parallel_until or None)
    if small_files:
        console.print(f"{small_files} small files ...", style="dim")
        results["small"] = bench_small(workdir / "small", small_files, small_rows, repeat)
    results["targets"] = targets(results)
    print_results(results)
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))


app = typer.Typer(add_completion=False)
app.command()(main)
