"""What one ``extraction-assets search`` costs a user: the command as a process, from its start to
its exit after the first answer.

``python -m tools.bench.search DATA_DIR [--files N] [--repeat 5] [--baseline-python PY]``
runs ``PYTHON -m extraction_assets.app.cli search QUERY --data-dir DATA_DIR --mode MODE`` in
each ``--mode`` (default ``hybrid`` and ``text``), once untimed per interpreter (the page cache
and the bytecode warm, as for a user's second command), then ``--repeat`` times alternating
modes and interpreters, so that all meet the same moments of a noisy machine. It reports, per
interpreter and mode, the median wall seconds (start to exit: imports, model, data dir, table,
the query and its output), the median CPU seconds (user + system: what the process ran, less
sensitive to the other processes of a shared machine) and the largest peak RSS (the kernel's
``ru_maxrss``: one process, its threads included), and whether the issue 33 target holds:
the first hybrid answer within 3 s.

With ``--files N``, a data dir without vectors is first made: N generated layouts
(:func:`tools.evaluate.generate.generate_layout`, seeds 0..N-1, 1-2 sheets of 1-3 tables each)
ingested through all six assets by ``extraction-assets ingest --jobs <CPUs>`` (1,000 files:
~7 min on 2 cores, ~21,000 retrieval units).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from extraction_assets.app.cli import SearchMode
from extraction_assets.store.storage import DataStore
from tools.bench.process import run_measured

#: The issue 33 target: seconds from the start of ``search`` to its exit after the first
#: hybrid answer, on a data dir of 1,000 files and 2 cores.
TARGET_S = 3.0
#: A question about the generated layouts (their products, years and measures).
QUERY = "Revenue of Gadget in FY2024"


def make_data_dir(data_dir: Path, files: int, python: str = sys.executable) -> float:
    """Write ``files`` generated layouts into ``<data_dir>/layouts`` and ingest them all into
    ``data_dir`` (``--jobs`` the CPU count); returns the ingest's wall seconds.

    Raises:
        RuntimeError: the ingest exited non-zero (its stderr tail is in the message).
    """
    from tools.evaluate.generate import generate_layout

    folder = data_dir / "layouts"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in range(files):
        path = folder / f"layout_{seed:04d}.xlsx"
        if not path.exists():
            path.write_bytes(generate_layout(seed)[0])
        paths.append(str(path))
    start = time.perf_counter()
    proc = subprocess.run([python, "-m", "extraction_assets.app.cli", "ingest", "--data-dir",
                           str(data_dir), "--jobs", str(os.cpu_count() or 1), *paths],
                          check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode:
        raise RuntimeError(f"ingest exited {proc.returncode}: {proc.stderr[-2000:]}")
    return time.perf_counter() - start


def run_search(python: str, data_dir: Path, query: str, mode: str) -> dict:
    """One ``PYTHON -m extraction_assets.app.cli search QUERY --data-dir DATA_DIR --mode MODE``
    as a process, from a folder outside any checkout (so that ``-m`` imports the installation
    of ``python``): ``wall_s`` (start to exit), ``cpu_s`` (user + system) and ``peak_rss_mb``.

    Raises:
        RuntimeError: the command exited non-zero (its stderr tail is in the message).
    """
    command = [python, "-m", "extraction_assets.app.cli", "search", query, "--data-dir",
               str(data_dir), "--mode", mode]
    return run_measured(command)._asdict()


def bench_search(data_dir: Path, query: str, modes: list[str], repeat: int,
                 pythons: dict[str, str]) -> dict:
    """:func:`run_search` of every mode by every interpreter of ``pythons`` (name -> path),
    once untimed, then ``repeat`` times alternating. Returns, by interpreter name and mode, the
    median ``wall_s`` and ``cpu_s``, the largest ``peak_rss_mb`` and every run's walls."""
    for python in pythons.values():
        for mode in modes:
            run_search(python, data_dir, query, mode)
    runs: dict[str, dict[str, list[dict]]] = {name: {m: [] for m in modes} for name in pythons}
    for _ in range(repeat):
        for mode in modes:
            for name, python in pythons.items():
                runs[name][mode].append(run_search(python, data_dir, query, mode))
    return {name: {mode: {"wall_s": round(statistics.median(r["wall_s"] for r in done), 3),
                          "cpu_s": round(statistics.median(r["cpu_s"] for r in done), 3),
                          "peak_rss_mb": round(max(r["peak_rss_mb"] for r in done)),
                          "walls_s": [round(r["wall_s"], 3) for r in done]}
                   for mode, done in by_mode.items()}
            for name, by_mode in runs.items()}


app = typer.Typer(add_completion=False)


@app.command()
def main(
    data_dir: Annotated[Path, typer.Argument(help="The data dir searched.")],
    query: Annotated[str, typer.Option("--query", help="What to search for.")] = QUERY,
    modes: Annotated[list[SearchMode] | None, typer.Option(
        "--mode", help="Modes to run (repeatable; default hybrid and text).")] = None,
    repeat: Annotated[int, typer.Option(
        "--repeat", min=1, help="Timed runs of each (medians).")] = 5,
    files: Annotated[int | None, typer.Option(
        "--files", min=1, help="Make the data dir first when it has no vectors: this many "
                               "generated layouts, ingested.")] = None,
    baseline_python: Annotated[str | None, typer.Option(
        "--baseline-python", help="Interpreter of another installation of the package (e.g. "
                                  "a venv of an older commit): its runs alternate with "
                                  "ours.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write results here.")] = None,
) -> None:
    """Time ``extraction-assets search`` as a process on DATA_DIR: wall and CPU seconds to the
    first answer, peak RSS (medians of --repeat runs after an untimed one)."""
    modes = [mode.value for mode in modes] if modes else ["hybrid", "text"]
    data_dir = data_dir.expanduser().resolve()
    results: dict = {"data_dir": str(data_dir), "query": query, "repeat": repeat,
                     "cpus": os.cpu_count()}
    if not DataStore(data_dir).lancedb_uri.is_dir():
        if files is None:
            raise typer.BadParameter(f"{data_dir} has no vectors: ingest files into it, or "
                                     "give --files N to make it")
        typer.echo(f"making {data_dir}: {files} generated layouts, ingested ...")
        results["ingest_s"] = round(make_data_dir(data_dir, files), 1)
        typer.echo(f"  ingested in {results['ingest_s']} s")
    results["files"] = sum(map(len, DataStore(data_dir).versions().latest.values()))
    pythons = {"ours": sys.executable, **({"baseline": baseline_python} if baseline_python
                                           else {})}
    results["runs"] = bench_search(data_dir, query, modes, repeat, pythons)
    typer.echo(f"search {query!r} on {data_dir} ({results['files']} files), as a process: "
               f"medians of {repeat}")
    typer.echo(f"{'code':10s} {'mode':7s} {'wall s':>7s} {'cpu s':>7s} {'peak MB':>8s}")
    for name, by_mode in results["runs"].items():
        for mode, r in by_mode.items():
            typer.echo(f"{name:10s} {mode:7s} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} "
                       f"{r['peak_rss_mb']:8d}")
    hybrid = results["runs"]["ours"].get("hybrid")
    if hybrid:
        met = hybrid["wall_s"] <= TARGET_S
        results["target"] = {"hybrid_wall_s": hybrid["wall_s"], "limit_s": TARGET_S, "met": met}
        typer.echo(f"target: first hybrid answer <= {TARGET_S:g} s: {hybrid['wall_s']:.2f} s, "
                   + ("met" if met else "missed"))
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    app(prog_name="python -m tools.bench.search")
