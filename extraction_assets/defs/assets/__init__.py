"""The six software-defined assets, one module each, wired in stage order."""

from extraction_assets.defs.assets.chunk_embeddings import chunk_embeddings
from extraction_assets.defs.assets.normalized_grids import normalized_grids
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.assets.rendered_chunks import rendered_chunks
from extraction_assets.defs.assets.segmented_blocks import segmented_blocks
from extraction_assets.defs.assets.workbook import workbook

ALL_ASSETS = [workbook, parsed_sheets, normalized_grids, segmented_blocks, rendered_chunks,
              chunk_embeddings]

__all__ = ["ALL_ASSETS", "workbook", "parsed_sheets", "normalized_grids", "segmented_blocks",
           "rendered_chunks", "chunk_embeddings"]
