"""What a process imports before it materializes partitions, and the forkserver that the worker
processes of a parallel ingest (``ingest --jobs N``) fork from.

This module imports nothing heavy, so the command line can start the server before it imports
Dagster itself: the server then imports Dagster, the asset graph and Dagster's SQLite storage
(~2 s) on the other core while the command's own process does the same, and every worker forked
from it starts with them loaded.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver

#: Modules a process imports for its runs, in order: Dagster, the asset graph with the stages,
#: the instance storage (:mod:`.instance_storage`, which imports Dagster's SQLite storage) and
#: Dagster's instance factory, which are otherwise imported only when an instance is opened
#: (~0.7 s), and pandas, which pyarrow imports in a run's first ``Table.from_pylist`` (~0.3 s).
RUN_MODULES = ["dagster", "extraction_assets.app.ingest", "extraction_assets.app.instance_storage",
               "dagster._core.instance.factory", "pandas"]

#: What the forkserver imports before its first fork: :mod:`.forkserver_preload`, which runs
#: :func:`import_for_runs`. If it cannot be imported the server skips it, and each worker
#: imports what it needs itself.
PRELOAD = ["extraction_assets.app.forkserver_preload"]


def import_for_runs() -> None:
    """Import :data:`RUN_MODULES` with the garbage collector paused, then move every object
    the process has made so far into the collector's permanent generation (:func:`gc.freeze`)
    and resume collecting.

    Dagster's modules make ~110,000 tracked objects, which every full collection would
    otherwise traverse: during the imports, and again several times per Dagster run. Frozen,
    they are never traversed (``ingest`` of 8 files of 50,000 cells: 10.5 s instead of
    11.2 s, medians of 9 runs alternating with and without). Frozen objects are never freed,
    so this is for what lives as long as the process: call it before the first run, not
    between runs.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        for name in RUN_MODULES:
            importlib.import_module(name)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def start_forkserver() -> multiprocessing.context.BaseContext:
    """The ``forkserver`` multiprocessing context with its server running (started on the first
    call, preloading :data:`PRELOAD` in the background; later calls return at once)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()
    return context
