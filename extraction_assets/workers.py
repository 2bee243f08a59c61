"""The forkserver that the worker processes of a parallel ingest (``ingest --jobs N``) fork from.

This module imports nothing heavy, so the command line can start the server before it imports
Dagster itself: the server then imports Dagster, the asset graph and Dagster's SQLite storage
(~2 s) on the other core while the command's own process does the same, and every worker forked
from it starts with them loaded.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver

#: Modules the forkserver imports once for all its workers, in order: Dagster, the asset graph
#: with the stages, the SQLite instance storage and instance factory, which Dagster imports
#: only when an instance is opened (~0.7 s), and last :mod:`.forkserver_freeze`, which freezes
#: the server's objects before the first fork. A module that cannot be imported is skipped by
#: the server.
PRELOAD = ["dagster", "extraction_assets.ingest", "dagster._core.storage.sqlite_storage",
           "dagster._core.instance.factory", "extraction_assets.forkserver_freeze"]


def start_forkserver() -> multiprocessing.context.BaseContext:
    """The ``forkserver`` multiprocessing context with its server running (started on the first
    call, preloading :data:`PRELOAD` in the background; later calls return at once)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()
    return context
