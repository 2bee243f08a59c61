"""The benchmark of what a user runs: ``extraction-assets ingest`` as a process.

:func:`run_ingest` starts ``PYTHON -m extraction_assets.app.cli ingest`` on one workbook and a
fresh data dir, and measures it from the outside: wall seconds from the start to the exit, and
the peak resident set size of the process tree (the sum of the RSS of the process and its
descendants, sampled every :data:`SAMPLE_S` seconds, and never below the main process's own
peak as the kernel reports it at exit). From the data dir's Dagster instance it then takes the
seconds of each asset's step as Dagster recorded them and, when the embeddings ran, what
``chunk_embeddings`` embedded.

``PYTHON`` is this interpreter, or that of another installation of the package (the
benchmark's ``--baseline-python``, e.g. a venv with an older commit installed), so that two
versions of the code are measured alternating, in the same run.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter

from extraction_assets.app.ingest import open_instance
from extraction_assets.store.storage import DataStore

#: Seconds between two samples of the process tree's resident set size.
SAMPLE_S = 0.01


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux ``/proc/PID/task/TID/children``)."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(child) for child in fh.read().split()]
    except OSError:  # gone, or not Linux
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kb(pid: int) -> int:
    """The resident set size in KiB of ``pid`` and all its descendants, summed (0 when gone)."""
    todo, total = [pid], 0
    while todo:
        current = todo.pop()
        total += _rss_kb(current)
        todo += _children(current)
    return total


def run_ingest(python: str, path: Path, data_dir: Path, until: str | None = None) -> dict:
    """One ``PYTHON -m extraction_assets.app.cli ingest --data-dir DATA_DIR [--until UNTIL]
    PATH`` as a process, from a folder outside any checkout (so that ``-m`` imports the
    installation of ``python``).

    Returns ``wall_s``, ``peak_rss_mb`` (of the process tree), ``steps_s`` (seconds of each
    asset's step, from Dagster's step records) and, when ``chunk_embeddings`` ran, ``embed``:
    ``units``, ``embedded`` (units sent to the model), ``tokens`` and ``embed_s`` (the model's
    seconds; ``None`` both when the code measured does not record them) and ``step_s``.

    Raises:
        RuntimeError: the command exited non-zero (its stderr tail is in the message).
    """
    command = [python, "-m", "extraction_assets.app.cli", "ingest", "--data-dir", str(data_dir),
               *(["--until", until] if until else []), str(path)]
    peak_kb = 0
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_kb
            while not done.is_set():
                peak_kb = max(peak_kb, tree_rss_kb(proc.pid))
                done.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: "
                               f"{err.read().decode(errors='replace')[-2000:]}")
    # ru_maxrss is in KiB on Linux: the main process's exact peak, which sampling may miss
    out = {"wall_s": wall, "peak_rss_mb": max(peak_kb, usage.ru_maxrss) / 1024}
    with open_instance(DataStore(data_dir)) as instance:
        [record] = instance.get_run_records()
        out["steps_s"] = {s.step_key: s.end_time - s.start_time
                          for s in instance.get_run_step_stats(record.dagster_run.run_id)}
        if "chunk_embeddings" in out["steps_s"]:
            [materialization] = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey("chunk_embeddings")), limit=1).records
            meta = {k: v.value for k, v in materialization.asset_materialization.metadata.items()}
            out["embed"] = {"units": meta["units"], "embedded": meta["embedded"],
                            "tokens": meta.get("embedded_tokens"),
                            "embed_s": meta.get("embed_seconds"),
                            "step_s": out["steps_s"]["chunk_embeddings"]}
    return out
