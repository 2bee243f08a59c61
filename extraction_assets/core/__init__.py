"""Pure extraction logic: reading OOXML, normalising, segmenting and rendering.

Nothing in this package imports Dagster; the asset layer in :mod:`extraction_assets.defs.assets`
calls these functions and writes their outputs.
"""
