"""The module the forkserver of a parallel ingest's workers imports (:data:`.workers.PRELOAD`).

Importing it runs :func:`.workers.import_for_runs` in the server: Dagster, the asset graph, the
stages and Dagster's SQLite storage are imported once, and frozen, for every worker forked from
it. Freezing before ``fork()`` without ``exec()`` is what the :mod:`gc` documentation advises:
the workers' collections skip those objects, so their memory pages stay shared with the server;
and the server, which finishes when the ingest does, leaves without the final collections over
them (~0.7 s during which it would still hold the command's stderr open).

The server ignores SIGINT while it imports, as CPython's forkserver does once it serves: Ctrl-C
reaches the whole process group, and the command stops itself; the server ends with it, without
printing a ``KeyboardInterrupt`` traceback from the middle of these imports. The previous
handler is put back for the workers to inherit.
"""

import signal

from extraction_assets.app.workers import import_for_runs

_previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    import_for_runs()
finally:
    signal.signal(signal.SIGINT, _previous)
