"""extraction-assets: office spreadsheets to typed records, chunks and vectors.

Importing the package makes Arrow allocate from its jemalloc pool (where the pyarrow build has
one) unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool: jemalloc hands freed pages back to the
operating system while a stage runs, which keeps the peak resident set of a large workbook
~10 % lower than pyarrow's default mimalloc pool at the same speed (``python -m
tools.bench``: 1M cells, hash -> chunks ~840 -> ~755 MB).

It also gives that jemalloc one arena (``narenas:1`` put before any options of the user's in
``JE_ARROW_MALLOC_CONF``, which Arrow's jemalloc reads when it starts): the stages run Arrow
kernels in several threads, and with an arena per thread the pages one thread frees wait to be
purged instead of serving the next allocation of another (1M cells: peak ~800 -> ~750 MB, no
slower). A process whose Arrow jemalloc had already started keeps its arenas.
"""

import os

_JEMALLOC_CONF = "JE_ARROW_MALLOC_CONF"
os.environ[_JEMALLOC_CONF] = ",".join(
    ["narenas:1"] + ([os.environ[_JEMALLOC_CONF]] if os.environ.get(_JEMALLOC_CONF) else []))

import pyarrow as pa  # noqa: E402  (after the jemalloc options)

if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without jemalloc keeps its default pool
        pass
