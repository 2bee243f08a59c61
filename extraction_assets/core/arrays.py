"""Arrow array helpers shared by the reader, the normalizer and the renderer."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def scatter(base: pa.Array, positions: np.ndarray, values: pa.Array | Sequence) -> pa.Array:
    """``base`` with the elements at ``positions`` (sorted, 0-based) replaced by ``values``, in
    order (an Arrow array, or a sequence converted to ``base``'s type)."""
    if len(positions) == 0:
        return base
    where = np.zeros(len(base), dtype=bool)
    where[positions] = True
    values = values if isinstance(values, pa.Array) else pa.array(values, base.type)
    return pc.replace_with_mask(base, pa.array(where), values)
