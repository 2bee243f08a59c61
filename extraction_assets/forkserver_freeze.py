"""Imported last by the forkserver of a parallel ingest's workers (:data:`.workers.PRELOAD`).

Importing it moves every object the server has made so far (Dagster, the asset graph, the
stages) into the garbage collector's permanent generation with :func:`gc.freeze`, as the
:mod:`gc` documentation advises before ``fork()`` without ``exec()``: the workers' collections
skip those objects (so their memory pages stay shared with the server), and the server, which
finishes when the ingest does, leaves without the final collections over them (~0.7 s during
which it would still hold the command's stderr open).
"""

import gc

gc.freeze()
