"""A folder of workbooks taken to chunks, as a user runs it, beside the stages alone:
``python -m tools.bench.folder [FILE...] [--repeat 3] [--json OUT]``.

Both are measured as processes from the outside (wall seconds from start to exit, peak RSS of
the process tree), alternating, ``--repeat`` times each: ``extraction-assets ingest --until
rendered_chunks FILES`` on a new data dir (imports, a new Dagster instance, registration, the
runs, Parquet, the views, the lineage), and a process that imports the package and runs hash ->
chunks on the same files one after the other (:func:`run_stages_only`; the stages' own imports
and the tokenizer's load included). ``ratio`` = ingest / stages (medians): what the asset layer
adds. Default files: the DECO and Tasi workbooks of the labelled development set
(``$EXTRACTION_ASSETS_LABELLED``, default ``../shared/labelled``).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

import typer

from tools.bench.command import run_ingest
from tools.bench.process import run_measured
from tools.paths import REPO, shared_dir


def labelled_workbooks() -> list[Path]:
    """The DECO and Tasi workbooks of the labelled development set, sorted."""
    root = shared_dir("labelled")
    return sorted(p for name in ("deco", "tasi") for p in (root / name / "files").glob("*")
                  if p.is_file())


def run_stages_only(paths: list[str]) -> None:
    """Hash -> chunks of each file in this process, one after the other (a file that cannot
    be read ends with its typed error, as in an ingest)."""
    from extraction_assets.pipeline import StageError
    from extraction_assets.search.embedding import LocalEmbedder
    from tools.bench.measure import run_stages, untimed

    embedder = LocalEmbedder()
    for path in paths:
        try:
            run_stages(Path(path).read_bytes(), Path(path).name, embedder, untimed)
        except StageError:
            pass


def measure(paths: list[Path], repeat: int) -> dict:
    """Medians (peaks: the largest) of ``repeat`` alternating runs of the ingest and of the
    stages alone, as processes; ``ratio`` = ingest / stages."""
    runs: dict[str, list] = {"ingest": [], "stages": []}
    files = [str(p) for p in paths]
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-folder-") as tmp:
            runs["ingest"].append(run_ingest(sys.executable, paths, Path(tmp) / "data",
                                             "rendered_chunks"))
        measured = run_measured(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
             "from tools.bench.folder import run_stages_only; run_stages_only(sys.argv[1:])",
             *files], sample_tree=True)
        runs["stages"].append({"wall_s": measured.wall_s, "peak_rss_mb": measured.peak_rss_mb})
    out: dict = {"files": len(paths), "repeat": repeat}
    for name, measured in runs.items():
        out[f"{name}_s"] = round(statistics.median(m["wall_s"] for m in measured), 2)
        out[f"{name}_peak_mb"] = round(max(m["peak_rss_mb"] for m in measured))
    out["ratio"] = round(out["ingest_s"] / out["stages_s"], 2)
    return out


def main(files: list[Path] = typer.Argument(None, help="Workbooks (default: the labelled "
                                                       "development set's DECO and Tasi)."),
         repeat: int = typer.Option(3, "--repeat", min=1, help="Runs of each (medians)."),
         json_out: Optional[Path] = typer.Option(None, "--json", help="Write the figures.")):
    """Measure and print the figures."""
    paths = files or labelled_workbooks()
    if not paths:
        raise typer.BadParameter("no files: pass some, or set $EXTRACTION_ASSETS_LABELLED")
    out = measure(paths, repeat)
    print(json.dumps(out, indent=2))
    if json_out:
        json_out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    typer.run(main)
