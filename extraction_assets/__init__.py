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

On the GNU C library, it fixes ``malloc``'s mmap threshold at 1 MiB (``mallopt``, unless
``MALLOC_MMAP_THRESHOLD_`` is set), where numpy, SentencePiece and Python's large strings
allocate. glibc otherwise raises the threshold after a large block is freed, up to 32 MiB, and
the blocks below it then come from the heap, whose freed pages stay resident and cannot serve
Arrow's jemalloc. The 1M-cell ingest peaked ~70 MB lower (~770-810 -> ~725 MB; stages alone
~675-705 -> ~620-640 MB), for ~0.3 s more system time of page faults.
"""

import ctypes
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

#: ``mallopt``'s parameter number of the mmap threshold (glibc ``malloc.h``).
_M_MMAP_THRESHOLD = -3
if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, 1 << 20)
    except (OSError, AttributeError):  # no C library symbols, or no mallopt (not glibc)
        pass
