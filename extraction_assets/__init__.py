"""extraction-assets: office spreadsheets to typed records, chunks and vectors.

Importing the package makes Arrow allocate from its jemalloc pool (where the pyarrow build has
one) unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool: jemalloc hands freed pages back to the
operating system while a stage runs, which keeps the peak resident set of a large workbook
~10 % lower than pyarrow's default mimalloc pool at the same speed (``python -m
extraction_assets.bench``: 1M cells, hash -> chunks ~840 -> ~755 MB).
"""

import os

import pyarrow as pa

if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without jemalloc keeps its default pool
        pass
