"""The benchmark of what a user runs: ``extraction-assets ingest`` as a process.

:func:`run_ingest` starts ``PYTHON -m extraction_assets.app.cli ingest`` on one workbook (or a
few) and a data dir, and measures it from the outside: wall seconds from the start to the exit, and
the peak resident set size of the process tree (the sum of the RSS of the process and its
descendants, sampled every :data:`~tools.bench.process.SAMPLE_S` seconds, and never below the
main process's ``ru_maxrss`` at exit, which on Linux also counts the benchmark's own memory at
the fork: a figure below the benchmark process's size is that size). From the data dir's
Dagster instance it then takes the seconds of each asset's step as Dagster recorded them and,
when the embeddings ran, what ``chunk_embeddings`` embedded.

``PYTHON`` is this interpreter, or that of another installation of the package (the
benchmark's ``--baseline-python``, e.g. a venv with an older commit installed), so that two
versions of the code are measured alternating, in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter

from extraction_assets.app.ingest import open_instance
from extraction_assets.store.storage import DataStore
from tools.bench.process import run_measured


def run_ingest(python: str, path: Path | Sequence[Path], data_dir: Path,
               until: str | None = None, batch_files: int | None = None) -> dict:
    """One ``PYTHON -m extraction_assets.app.cli ingest --data-dir DATA_DIR [--until UNTIL]
    [--batch-files N] PATH...`` as a process, from a folder outside any checkout (so that
    ``-m`` imports the installation of ``python``). ``path``: one file, or several.

    Returns ``wall_s``, ``cpu_s`` (user + system of the process and the children it waited
    for), ``peak_rss_mb`` (of the process tree), ``runs`` (Dagster runs in the data dir),
    ``steps_s`` (seconds of each asset's steps, from Dagster's step records, summed over the
    runs) and, for one file whose ``chunk_embeddings`` ran, ``embed``: ``units``, ``embedded``
    (units sent to the model), ``tokens`` and ``embed_s`` (the model's seconds; ``None`` both
    when the code measured does not record them) and ``step_s``.

    Raises:
        RuntimeError: the command exited non-zero (its stderr tail is in the message).
    """
    paths = [path] if isinstance(path, Path) else list(path)
    command = [python, "-m", "extraction_assets.app.cli", "ingest", "--data-dir", str(data_dir),
               *(["--until", until] if until else []),
               *(["--batch-files", str(batch_files)] if batch_files else []),
               *(str(Path(p).absolute()) for p in paths)]  # it runs in another folder
    measured = run_measured(command, sample_tree=True)
    out = {"wall_s": measured.wall_s, "cpu_s": measured.cpu_s,
           "peak_rss_mb": measured.peak_rss_mb}
    with open_instance(DataStore(data_dir)) as instance:
        records = instance.get_run_records()
        steps: dict[str, float] = {}
        for record in records:
            for step in instance.get_run_step_stats(record.dagster_run.run_id):
                steps[step.step_key] = (steps.get(step.step_key, 0.0)
                                        + step.end_time - step.start_time)
        out["runs"], out["steps_s"] = len(records), steps
        if "chunk_embeddings" in steps and len(paths) == 1:
            [materialization] = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey("chunk_embeddings")), limit=1).records
            meta = {k: v.value for k, v in materialization.asset_materialization.metadata.items()}
            out["embed"] = {"units": meta["units"], "embedded": meta["embedded"],
                            "tokens": meta.get("embedded_tokens"),
                            "embed_s": meta.get("embed_seconds"),
                            "step_s": steps["chunk_embeddings"]}
    return out
