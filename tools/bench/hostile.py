"""The hostile-input benchmark: it ingests every hostile recipe (issues #27 and #34) as a user
would and holds each to its bounds.

The recipes are in :mod:`tools.bench.hostile_recipes` (workbooks) and
:mod:`tools.bench.hostile_documents` (Word, PDF, HTML, Markdown): each ``build(scale) -> (file
name, bytes)``, ``scale=1`` the size the red-team run used, deterministic bytes.

``python -m tools.bench.hostile [--scale S] [--workdir DIR]`` ingests every recipe
at ``scale`` (default 0.5) and at ``2 x scale`` with ``extraction-assets ingest FILE --data-dir
D`` (a fresh data dir each, the command run as a process) and prints per recipe its outcome
line, the wall clock seconds and the peak RSS of the command, and the ratio of the work of the
two sizes (seconds beyond the ingest of a one-cell file, the command's own start); then one
``ingest`` of all recipes together, whose files must all end (no file harms another). The
targets of issue #27: at most 60 s and 1 GB per command, and at most x2.5 the work for twice the
input (work linear in the decompressed size). Exit code 1 when one is missed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer

from tools.bench.hostile_documents import DOCUMENT_RECIPES
from tools.bench.hostile_recipes import (
    LEAKS,
    WORKBOOK_RECIPES,
    Recipe,
    cell,
    odd_values,
    rows_xml,
    workbook,
    worksheet,
)

#: Every recipe, by name: the workbooks', then the documents'.
RECIPES: dict[str, Recipe] = {**WORKBOOK_RECIPES, **DOCUMENT_RECIPES}


# -- the benchmark ------------------------------------------------------------------------------
@dataclass
class Measured:
    """One command: its exit code, the outcome line of each file, wall seconds, peak RSS (MB)."""

    exit_code: int
    lines: list[str]
    seconds: float
    peak_rss_mb: float


#: A small interpreter between the caller and the command measured: it runs the command and
#: writes its ``ru_maxrss`` (KiB, from ``wait4``) to the file named first. Linux counts in a
#: process's ``ru_maxrss`` the memory of the process it was forked from (the memory it had
#: before its ``exec``), so a command started by a large process (a test runner) would read
#: as large; started by this one, it reads as its own.
_MEASURE = ("import os, subprocess, sys\n"
            "child = subprocess.Popen(sys.argv[2:])\n"
            "_, status, usage = os.wait4(child.pid, 0)\n"
            "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_command(args: list[str], timeout: float = 600.0) -> Measured:
    """Run a command as a process (its process group killed after ``timeout`` seconds); its
    exit code, output lines, wall clock and peak RSS (``ru_maxrss`` of that process, through
    :data:`_MEASURE`; its own children, e.g. ``--jobs`` workers, are not included)."""
    with tempfile.TemporaryDirectory() as tmp:
        rss = Path(tmp) / "maxrss"
        with open(Path(tmp) / "out", "w+") as out:
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _MEASURE, str(rss), *args],
                                    stdout=out, stderr=subprocess.DEVNULL, text=True,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
            seconds = time.perf_counter() - start
            out.seek(0)
            lines = out.read().splitlines()
        peak = int(rss.read_text()) / 1024 if rss.exists() else float("nan")
    return Measured(code, lines, round(seconds, 2), round(peak, 1))


#: The targets of issue #27: per command, and for twice the input.
MAX_SECONDS, MAX_RSS_MB, MAX_RATIO = 60.0, 1024.0, 2.5
#: Work (seconds beyond a trivial file's ingest) below which a time ratio is not judged: the
#: noise of a shared machine is larger than the work.
MIN_JUDGED_SECONDS = 2.0


def ingest_command(files: list[Path], data_dir: Path) -> list[str]:
    """``extraction-assets ingest FILES --data-dir DATA_DIR`` of this interpreter's install."""
    return [sys.executable, "-m", "extraction_assets.app.cli", "ingest", *map(str, files),
            "--data-dir", str(data_dir)]


def work_ratio(seconds: float, doubled: float, baseline: float) -> float | None:
    """Time ratio of twice the input to the input, each less a trivial file's ``baseline``
    (the command's own start); ``None`` when the input's work is too small to judge."""
    work = seconds - baseline
    if work < MIN_JUDGED_SECONDS:
        return None
    return round((doubled - baseline) / work, 2)


#: Where :func:`hostile_files` puts a file whose path holds rich markup.
MARKUP_FOLDER = "[/bold]"


def hostile_files(folder: Path, scale: float) -> list[Path]:
    """Write every hostile input of issue #27 into ``folder`` and return their paths: the
    recipes at ``scale``, the :data:`LEAKS`, the :func:`odd_values`, a file in a folder named
    ``[/bold]``, a symlink loop (``loop.xlsx``), a file with an ESC sequence in a cell and a
    sheet named ``S[/]`` whose part is ``xl/[/b].xml``."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, bytes] = {}
    for recipe in RECIPES.values():
        name, data = recipe.build(scale)
        written[name] = data
    written.update({name: build() for name, (build, _) in LEAKS.items()})
    written.update(odd_values())
    written[f"{MARKUP_FOLDER}/in_markup_folder.xlsx"] = workbook([("S", worksheet(rows_xml(
        {1: [cell("A1", "a file in a folder named [/bold]")]})))])
    written["escape_sequences.xlsx"] = workbook([("S[/]", worksheet(rows_xml({
        1: [cell("A1", "Region [/b]")],
        2: [cell("A2", "North _x001B_[2J_x001B_]0;retitled_x0007_ end")]})))],
        targets={"S[/]": "[/b].xml"})
    paths = []
    for name, data in written.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    loop = folder / "loop.xlsx"
    if not loop.is_symlink():
        os.symlink("loop.xlsx", loop)
    return paths + [loop]


def benchmark(root: Path, scale: float, names: list[str]) -> tuple[dict, list[str]]:
    """Ingest a one-cell file (the baseline) and each recipe of ``names`` at ``scale`` and
    ``2 x scale`` (a data dir each; none of it when ``names`` is empty), then every hostile
    input (:func:`hostile_files`, the recipes at ``scale``) in one command into
    ``root / "data-together"``, which must give each file its line within 1 GB (its time, the
    sum of some 25 files', is shown, not judged); returns the measurements (JSON-compatible)
    and the targets missed (each a line)."""
    results: dict = {"scale": scale, "recipes": {}}
    missed: list[str] = []

    def judge(what: str, run: Measured, expect: str) -> None:
        line = run.lines[0] if run.lines else "(no output)"
        typed = line.startswith("success") or f": {expect}: " in line
        if run.seconds > MAX_SECONDS or run.peak_rss_mb > MAX_RSS_MB or not typed:
            missed.append(f"{what}: {line[:100]} ({run.seconds} s, {run.peak_rss_mb} MB)")

    if names:
        trivial = root / "trivial.xlsx"
        trivial.write_bytes(workbook([("S", worksheet(rows_xml({1: [cell("A1", "x")]})))]))
        baseline = run_command(ingest_command([trivial], root / "data-baseline"))
        results["baseline"] = vars(baseline)
    for name in names:
        recipe = RECIPES[name]
        runs = []
        for k, size in enumerate((scale, 2 * scale), start=1):
            filename, data = recipe.build(size)
            path = root / f"x{k}" / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            runs.append(run_command(ingest_command([path], root / f"data-{name}-{k}")))
            judge(f"{name} x{k}", runs[-1], recipe.expect)
        ratio = work_ratio(runs[0].seconds, runs[1].seconds, baseline.seconds)
        if ratio is not None and ratio > MAX_RATIO:
            missed.append(f"{name}: twice the input took x{ratio} the work")
        results["recipes"][name] = {"runs": [vars(r) for r in runs], "ratio": ratio}
    files = hostile_files(root / "all", scale)
    together = run_command(ingest_command(files, root / "data-together"))
    results["together"] = {**vars(together), "files": [str(f) for f in files]}
    if len(together.lines) != len(files) or together.peak_rss_mb > MAX_RSS_MB:
        missed.append(f"all together: {len(together.lines)} lines for {len(files)} files "
                      f"({together.seconds} s, {together.peak_rss_mb} MB)")
    return results, missed


app = typer.Typer(add_completion=False)


@app.command()
def main(scale: float = typer.Option(0.5, help="Size of the recipes (1 = the issue's); each "
                                                "is also run at twice this size."),
         workdir: Optional[Path] = typer.Option(None, help="Where files and data dirs go."),
         only: Optional[list[str]] = typer.Option(None, help="Recipes to run (default all)."),
         json_out: Optional[Path] = typer.Option(None, "--json", help="Write results here.")):
    """Ingest every recipe at ``scale`` and ``2 x scale``, then all together, and check the
    targets (at most 60 s and 1 GB per command, x2 input -> at most x2.5 work)."""
    root = Path(workdir or tempfile.mkdtemp(prefix="hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    names = only or list(RECIPES)
    unknown = sorted(set(names) - set(RECIPES))
    if unknown:
        raise typer.BadParameter(f"unknown recipes {unknown}; choose from {sorted(RECIPES)}")
    results, missed = benchmark(root, scale, names)
    if names:
        typer.echo(f"{'baseline':14s} {results['baseline']['seconds']:7.2f} s "
                   f"{results['baseline']['peak_rss_mb']:8.1f} MB  (a one-cell file)")
    for name, measured in results["recipes"].items():
        for k, run in enumerate(measured["runs"], start=1):
            line = run["lines"][0] if run["lines"] else "(no output)"
            typer.echo(f"{name + f' x{k}':14s} {run['seconds']:7.2f} s {run['peak_rss_mb']:8.1f} MB"
                       f"  {' '.join(line.split())[:120]}")
        ratio = measured["ratio"]
        typer.echo(f"{name:14s} x2 input -> "
                   + (f"x{ratio} work" if ratio is not None else "work too small to judge"))
    together = results["together"]
    typer.echo(f"{'all together':14s} {together['seconds']:7.2f} s "
               f"{together['peak_rss_mb']:8.1f} MB  {len(together['lines'])} lines for "
               f"{len(together['files'])} files")
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))
    for line in missed:
        typer.echo(f"missed: {line}")
    raise typer.Exit(code=1 if missed else 0)


if __name__ == "__main__":
    app(prog_name="python -m tools.bench.hostile")
