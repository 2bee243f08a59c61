"""Arrow array helpers shared by the reader, the normalizer and the renderer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

T = TypeVar("T")


def scatter(base: pa.Array, positions: np.ndarray, values: pa.Array | Sequence) -> pa.Array:
    """``base`` with the elements at ``positions`` (sorted, 0-based) replaced by ``values``, in
    order (an Arrow array, or a sequence converted to ``base``'s type)."""
    if len(positions) == 0:
        return base
    where = np.zeros(len(base), dtype=bool)
    where[positions] = True
    values = values if isinstance(values, pa.Array) else pa.array(values, base.type)
    return pc.replace_with_mask(base, pa.array(where), values)


#: Threads that run independent Arrow work side by side (its kernels release the GIL).
THREADS = 2


def in_threads(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls``, in the order given, run in :data:`THREADS` threads: for work
    that is mostly Arrow kernels, which release the GIL, so that both cores of a process are
    used. The first exception raised by a call is raised here."""
    if len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="arrow") as pool:
        return list(pool.map(lambda call: call(), calls))
