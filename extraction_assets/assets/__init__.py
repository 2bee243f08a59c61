"""The six software-defined assets, one module each, wired in stage order."""

from .chunk_embeddings import chunk_embeddings
from .normalized_grids import normalized_grids
from .parsed_sheets import parsed_sheets
from .rendered_chunks import rendered_chunks
from .segmented_blocks import segmented_blocks
from .workbook import workbook

ALL_ASSETS = [workbook, parsed_sheets, normalized_grids, segmented_blocks, rendered_chunks,
              chunk_embeddings]

__all__ = ["ALL_ASSETS", "workbook", "parsed_sheets", "normalized_grids", "segmented_blocks",
           "rendered_chunks", "chunk_embeddings"]
